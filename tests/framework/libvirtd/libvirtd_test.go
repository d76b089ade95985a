// SPDX-License-Identifier: Apache-2.0

package libvirtd_test

import (
	"strings"
	"testing"

	"libvirt.org/go/libvirt"

	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

func TestLibvirtdDefinesAndStartsDisklessDomain(t *testing.T) {
	node := libvirtd.StartT(t, libvirtd.Options{})
	conn := node.ConnectT(t)

	xml, err := libvirtd.DisklessDomain("smoke").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := conn.DomainDefineXML(xml)
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	defer dom.Free()
	if err := dom.Create(); err != nil {
		t.Fatalf("start: %v\n%s", err, node.Logs(t.Context()))
	}
	state, _, err := dom.GetState()
	if err != nil {
		t.Fatal(err)
	}
	if state != libvirt.DOMAIN_RUNNING {
		t.Fatalf("domain state = %d, want running (%d)", state, libvirt.DOMAIN_RUNNING)
	}
	// The daemon in the container agrees, seen through its own socket.
	out, err := node.Virsh(t.Context(), "domstate", "smoke")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "running" {
		t.Fatalf("virsh domstate = %q, want running", got)
	}
}

func TestNodesOnOneNetworkResolveEachOtherByAlias(t *testing.T) {
	nw := libvirtd.NewNetworkT(t)
	a := libvirtd.StartT(t, libvirtd.Options{Network: nw, Alias: "node-a"})
	b := libvirtd.StartT(t, libvirtd.Options{Network: nw, Alias: "node-b"})

	out, err := a.Exec(t.Context(), "virsh", "-c", b.PeerURI(), "hostname")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "node-b" {
		t.Fatalf("peer hostname = %q, want node-b", got)
	}
}
