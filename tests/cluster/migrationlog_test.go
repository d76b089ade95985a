// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// testdata/migration-source-compute.log holds lines of real source
// launchers' compute logs (KubeVirt v1.9.0 with the patches, libvirt 11.3,
// QEMU 10.0, kubevirt.io/libvirt-log-filters "2:qemu.qemu_monitor") of a
// migration with migration.example.com/parallel "3": libvirt's commands to
// QEMU, migrate-set-parameters among them, the framework's own line, and
// (from a run that also logged QEMU's replies) QEMU's reply to
// query-migrate-parameters before libvirt set them: its default of 2
// channels, which is not what the migration used.
func TestMultifdChannelsSentReadsLibvirtsCommands(t *testing.T) {
	b, err := os.ReadFile("testdata/migration-source-compute.log")
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if got := multifdChannelsSent(log); !slices.Equal(got, []int{3}) {
		t.Fatalf("multifdChannelsSent = %v, want [3]", got)
	}
	// A second command with another value is a second entry: a check for
	// one value fails on a migration libvirt set twice.
	set := lineWith(log, `migrate-set-parameters`)
	changed := log + strings.ReplaceAll(set, `\"multifd-channels\":3`, `\"multifd-channels\":8`) + "\n"
	if got := multifdChannelsSent(changed); !slices.Equal(got, []int{3, 8}) {
		t.Fatalf("with a later command of 8: %v, want [3 8]", got)
	}
	if got := multifdChannelsSent(strings.ReplaceAll(log, "QEMU_MONITOR_SEND_MSG", "QEMU_MONITOR_RECV_REPLY")); got != nil {
		t.Fatalf("replies only: %v, want none", got)
	}
	if line := lineWith(log, "migration arguments after PreMigrationSource"); !strings.Contains(line, `paramsChanged={"parallel.connections":3}`) {
		t.Fatalf("the framework's line: %q", line)
	}
}
