// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
)

// goodTimeline is a boot as the stand-ins record it: the launcher up and
// serving, then the handler's steps, the launcher's inside the boot
// command.
func goodTimeline() *cmdsock.Timeline {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(name string, from, to int) cmdsock.Step {
		return cmdsock.Step{Name: name, Start: at(from), End: at(to)}
	}
	return &cmdsock.Timeline{
		Launcher: &cmdsock.LauncherTimeline{
			Started: at(0), LibvirtdUp: at(400), Serving: at(401),
			Steps: []cmdsock.Step{
				step(cmdsock.StepHandover, 1010, 1012), step(cmdsock.StepISO, 1012, 1015),
				step(cmdsock.StepGuestDefinition, 1015, 1030), step(cmdsock.StepPreBoot, 1030, 1040),
				step(cmdsock.StepDefineAndStart, 1040, 1200),
			},
			Hooks: []cmdsock.Hook{
				{HookPoint: "GuestDefinition", Plugin: "cel-tuning", Kind: "cel", Outcome: "success", Duration: time.Millisecond},
				{HookPoint: "GuestDefinition", Plugin: "cloudinit-network", Kind: "sidecar", Outcome: "skipped"},
				{HookPoint: "GuestDefinition", Plugin: "smbios-watchdog", Kind: "sidecar", Outcome: "success", Duration: 12 * time.Millisecond, SocketWait: 2 * time.Millisecond},
				{HookPoint: "PreBoot", Plugin: "cloudinit-network", Kind: "sidecar", Outcome: "success", Duration: 9 * time.Millisecond, SocketWait: time.Millisecond},
			},
		},
		Handler: []cmdsock.Step{
			step(cmdsock.StepPreVMStart, 1000, 1005), step(cmdsock.StepSelectPlugins, 1005, 1006),
			step(cmdsock.StepBootCommand, 1006, 1300), step(cmdsock.StepPostVMStart, 1300, 1305),
		},
	}
}

func TestCheckTimelineAcceptsAWholeBoot(t *testing.T) {
	if err := checkTimeline(goodTimeline(), scenarioHooks); err != nil {
		t.Fatal(err)
	}
	if got := describeTimeline(goodTimeline()); !strings.Contains(got, "GuestDefinition smbios-watchdog 12.00 ms (socket 2.00 ms)") {
		t.Errorf("description %q does not give the sidecar hook and its socket wait", got)
	}
}

// TestCheckTimelineRefusesABrokenBoot: each way a timeline can be wrong is
// named.
func TestCheckTimelineRefusesABrokenBoot(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(*cmdsock.Timeline)
	}{
		{"no launcher", "no launcher timeline", func(tl *cmdsock.Timeline) { tl.Launcher = nil }},
		{"a step missing", "launcher steps", func(tl *cmdsock.Timeline) { tl.Launcher.Steps = tl.Launcher.Steps[1:] }},
		{"handler steps swapped", "handler steps", func(tl *cmdsock.Timeline) {
			tl.Handler[0], tl.Handler[1] = tl.Handler[1], tl.Handler[0]
		}},
		{"a step before the last ended", "before GuestDefinition ended", func(tl *cmdsock.Timeline) {
			tl.Launcher.Steps[3].Start = tl.Launcher.Steps[2].Start
		}},
		{"a step that ends before it starts", "start", func(tl *cmdsock.Timeline) {
			tl.Launcher.Steps[4].End = tl.Launcher.Steps[4].Start.Add(-time.Millisecond)
		}},
		{"served before libvirtd", "want them in this order", func(tl *cmdsock.Timeline) {
			tl.Launcher.Serving = tl.Launcher.LibvirtdUp.Add(-time.Millisecond)
		}},
		{"launcher outside the command", "not within the handler's boot command", func(tl *cmdsock.Timeline) {
			tl.Handler[2].End = tl.Launcher.Steps[4].End.Add(-time.Millisecond)
		}},
		{"a hook missing", "PreBoot cloudinit-network (sidecar) did not run", func(tl *cmdsock.Timeline) {
			tl.Launcher.Hooks = tl.Launcher.Hooks[:3]
		}},
		{"a hook failed", "outcome ignored", func(tl *cmdsock.Timeline) { tl.Launcher.Hooks[2].Outcome = "ignored" }},
		{"a hook that should not run", "ran, and no such hook should", func(tl *cmdsock.Timeline) {
			tl.Launcher.Hooks[1].Outcome = "success"
		}},
		{"socket wait over the duration", "outside its duration", func(tl *cmdsock.Timeline) {
			tl.Launcher.Hooks[3].SocketWait = time.Second
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := goodTimeline()
			tc.edit(tl)
			err := checkTimeline(tl, scenarioHooks)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}
