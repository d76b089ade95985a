// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
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

// checkGuest checks, from inside the test guest the launcher booted, what
// each plugin changed: the guest's own view of its SMBIOS strings, its
// watchdog device, its vCPUs and the network configuration it reads from
// the NoCloud disk.
func (s *scenario) checkGuest(ctx context.Context, pod *corev1.Pod) (guest.Report, error) {
	start := time.Now()
	r, err := s.waitGuest(ctx, pod, "the test guest's report", func(r guest.Report) (bool, string) {
		return r.Ready && len(r.Ticks) > 0, fmt.Sprintf("%d report lines so far", len(r.Lines))
	})
	if !s.Check("the test guest booted in the launcher Pod and reported what it sees", err == nil,
		"after %s%s", time.Since(start).Round(100*time.Millisecond), errSuffix(err)) {
		return r, errCheckFailed
	}
	if t, ok := r.LastTick(); ok {
		s.Show(fmt.Sprintf("guest boot id %s, up %.1f s (guest time) at tick %d", r.BootID, t.Uptime, t.N))
	}
	for _, c := range guestChecks {
		s.Check("in the guest: "+c.name, c.ok(r), "%s", printed(r, c.keys...))
	}
	if len(r.Errors) > 0 {
		s.Show("the guest complained: " + strings.Join(r.Errors, "; "))
	}
	return r, nil
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

// checkGuestMigrated checks, from inside the guest, that the live migration
// kept it running: on the target it goes on with the boot id it had on the
// source and its counter continues (no second boot report), its watchdog
// still there; libvirt's downtime is reported. before is the source's
// report read just before the migration began, took the migration's time.
func (s *scenario) checkGuestMigrated(ctx context.Context, target *corev1.Pod, before guest.Report, took time.Duration) {
	last, _ := before.LastTick()
	after, err := s.waitGuest(ctx, target, "the guest's ticks on the target", func(r guest.Report) (bool, string) {
		return len(r.Ticks) >= 2, fmt.Sprintf("%d ticks on the target", len(r.Ticks))
	})
	if !s.Check("the guest ticks on in the target Pod", err == nil, "%s", errText(err)) {
		return
	}
	first := after.Ticks[0]
	// The counter can have gone on by at most the wall time between the
	// source's read and the first tick on the target.
	s.Check("in the guest: the same boot goes on on the target (boot id kept, counter continued, no second boot report)",
		first.BootID == before.BootID && !after.Ready && first.N > last.N && float64(first.N-last.N) <= took.Seconds()+5,
		"source: boot id %s, tick %d read before the migration; target: boot id %s, first tick %d, %d ticks, boot report again: %v",
		before.BootID, last.N, first.BootID, first.N, len(after.Ticks), after.Ready)
	s.Check("in the guest: the watchdog is still there after the migration", first.Watchdog, "%s", printed(after, "tick="+fmt.Sprint(first.N)))
	info, err := s.kubectl(ctx, "", "-n", target.Namespace, "exec", target.Name, "-c", "compute", "--",
		"virsh", "-c", "qemu:///system", "domjobinfo", "--completed", s.vm.vmi.Namespace+"_"+s.vm.vmi.Name)
	if err == nil {
		s.Show(fmt.Sprintf("migration %s; libvirt on the target: %s, %s", took.Round(100*time.Millisecond),
			jobField(info, "Total downtime"), jobField(info, "Data processed")))
	}
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
