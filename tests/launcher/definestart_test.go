// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"errors"
	"strings"
	"testing"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

// DefineAndStart names the domain and the step libvirt refused, and wraps
// libvirt's error. A domain that was defined but did not start stays
// defined, for inspection.
func TestDefineAndStartReportsWhichStepLibvirtRefused(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(*libvirtxml.Domain)
		step    string
		defined bool
	}{{
		// The containers have no /dev/kvm, so the capabilities lack kvm.
		name: "vm-kvm",
		edit: func(d *libvirtxml.Domain) { d.Type = "kvm" },
		step: "define",
	}, {
		name: "vm-missing-disk",
		edit: func(d *libvirtxml.Domain) {
			d.Devices.Disks = []libvirtxml.DomainDisk{{
				Device: "disk",
				Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
				Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: "/var/lib/libvirt/images/missing.img"}},
				Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
			}}
		},
		step:    "start",
		defined: true,
	}}
	ctx := testContext(t)
	node := libvirtd.StartT(t, libvirtd.Options{})
	conn := node.ConnectT(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			domain := libvirtd.DisklessDomain(tc.name)
			tc.edit(domain)
			dom, err := domainrun.DefineAndStart(ctx, conn, domain)
			if err == nil {
				_ = dom.Free()
				t.Fatalf("%s started", tc.name)
			}
			var lverr libvirt.Error
			if !strings.HasPrefix(err.Error(), tc.step+` domain "`+tc.name+`"`) || !errors.As(err, &lverr) {
				t.Fatalf("error = %v, want one starting %q and wrapping libvirt's error", err, tc.step+` domain "`+tc.name+`"`)
			}
			t.Logf("libvirt refused: %v", err)
			state, _ := domainState(t, conn, tc.name)
			if tc.defined && state != libvirt.DOMAIN_SHUTOFF {
				t.Fatalf("after the failed start: state %d, want defined and shut off", state)
			}
			if !tc.defined && state != -1 {
				t.Fatalf("after the refused definition: state %d, want no domain", state)
			}
		})
	}
}
