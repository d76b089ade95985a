// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// guestBootTimeout bounds the test guest's boot under TCG on a busy worker,
// from the domain's start to its report (about 8 s on a busy 2-core
// machine).
const guestBootTimeout = 3 * time.Minute

// guestReport reads what the test guest printed on its console in the Pod's
// compute container.
func (s *scenario) guestReport(ctx context.Context, pod *corev1.Pod) (guest.Report, error) {
	out, err := s.kubectl(ctx, "", "-n", pod.Namespace, "exec", pod.Name, "-c", "compute", "--", "cat", cmdsock.GuestConsole)
	return guest.Parse(out), err
}

// waitGuest waits until the guest's console in pod satisfies done.
func (s *scenario) waitGuest(ctx context.Context, pod *corev1.Pod, what string, done func(guest.Report) (bool, string)) (guest.Report, error) {
	var r guest.Report
	err := poll(ctx, what, guestBootTimeout, func() (bool, string, error) {
		var err error
		if r, err = s.guestReport(ctx, pod); err != nil {
			return false, err.Error(), nil
		}
		ok, why := done(r)
		return ok, why, nil
	})
	return r, err
}

// printed quotes the guest's report lines that begin with one of keys.
func printed(r guest.Report, keys ...string) string {
	var out []string
	for _, l := range r.Lines {
		for _, k := range keys {
			if strings.HasPrefix(l, k) {
				out = append(out, l)
				break
			}
		}
	}
	if len(out) == 0 {
		return "the guest printed nothing of " + strings.Join(keys, ", ")
	}
	return "the guest printed: " + strings.Join(out, "; ")
}

// guestChecks are what the guest of a VM with every sample plugin sees of
// each plugin's change.
var guestChecks = []struct {
	name string
	ok   func(guest.Report) bool
	// keys begin the report lines that show it.
	keys []string
}{
	{"smbios-watchdog's manufacturer and product read from SMBIOS", func(r guest.Report) bool {
		return r.DMI["sys_vendor"] == "Example" && r.DMI["product_name"] == "Edge-1"
	}, []string{"dmi.sys_vendor", "dmi.product_name"}},
	{"smbios-watchdog's i6300esb watchdog at /dev/watchdog", func(r guest.Report) bool {
		return r.Watchdog && r.WatchdogIdentity == "i6300ESB timer"
	}, []string{"watchdog"}},
	{"cel-tuning's 2 vCPUs", func(r guest.Report) bool { return r.VCPUs == 2 }, []string{"vcpus"}},
	{"cloudinit-network's secondary network red, read from the NoCloud disk", func(r guest.Report) bool {
		nc := r.CIDataFiles["network-config"]
		return r.CIData && slices.ContainsFunc(nc, func(l string) bool { return strings.Contains(l, redMAC) }) &&
			slices.ContainsFunc(nc, func(l string) bool { return strings.Contains(l, "192.168.10.5/24") })
	}, []string{"cidata=", "cidata.network-config"}},
}

// guestMisses names the guestChecks r fails.
func guestMisses(r guest.Report) []string {
	var out []string
	for _, c := range guestChecks {
		if !c.ok(r) {
			out = append(out, c.name)
		}
	}
	return out
}

// jobField is one "Name: value" line of virsh domjobinfo, "Name: ?" when
// absent.
func jobField(info, name string) string {
	for l := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == name {
			return name + " " + strings.Join(strings.Fields(v), " ")
		}
	}
	return name + " ?"
}
