// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"strings"
	"time"

	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// guestBootTimeout bounds the test guest's boot under TCG on a busy worker,
// from the domain's start to its report (about 8 s on a busy 2-core
// machine).
const guestBootTimeout = 3 * time.Minute

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

// guestChecks are what the guest of a VM with smbios-watchdog sees of its
// change.
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
