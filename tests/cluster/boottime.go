// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
)

// Steps of a boot's timeline, in the order they run.
var (
	launcherSteps = []string{cmdsock.StepHandover, cmdsock.StepISO, cmdsock.StepGuestDefinition, cmdsock.StepPreBoot, cmdsock.StepDefineAndStart}
	handlerSteps  = []string{cmdsock.StepPreVMStart, cmdsock.StepSelectPlugins, cmdsock.StepBootCommand, cmdsock.StepPostVMStart}
)

// hookWant is a launcher hook a boot must have run.
type hookWant struct{ point, plugin, kind string }

// scenarioHooks are the launcher hooks the scenario's VM boots with.
var scenarioHooks = []hookWant{
	{"GuestDefinition", "cel-tuning", "cel"},
	{"GuestDefinition", "smbios-watchdog", "sidecar"},
	{"PreBoot", "cloudinit-network", "sidecar"},
}

// readTimeline decodes the timeline the handler wrote on vmi.
func readTimeline(vmi *kubevirtv1.VirtualMachineInstance) (*cmdsock.Timeline, error) {
	data, ok := vmi.Annotations[cmdsock.TimelineAnnotation]
	if !ok {
		return nil, fmt.Errorf("VMI %s/%s has no annotation %s", vmi.Namespace, vmi.Name, cmdsock.TimelineAnnotation)
	}
	var tl cmdsock.Timeline
	if err := json.Unmarshal([]byte(data), &tl); err != nil {
		return nil, fmt.Errorf("VMI %s/%s: annotation %s: %w", vmi.Namespace, vmi.Name, cmdsock.TimelineAnnotation, err)
	}
	return &tl, nil
}

// checkTimeline checks that a boot's timeline, as the stand-ins wrote it
// on the VMI, is whole and consistent: the launcher's process came up,
// libvirtd answered and the command socket was served before the handler
// began; the handler's and the boot command's steps are all there, in
// order, the command's inside the handler's call of it; each of want ran
// and succeeded, its socket wait within its duration; and no other hook
// ran.
func checkTimeline(tl *cmdsock.Timeline, want []hookWant) error {
	if tl == nil || tl.Launcher == nil {
		return errors.New("no launcher timeline")
	}
	l := tl.Launcher
	var errs []error
	if err := inOrder("launcher", l.Steps, launcherSteps); err != nil {
		errs = append(errs, err)
	}
	if err := inOrder("handler", tl.Handler, handlerSteps); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	first := tl.Handler[0].Start
	if l.Started.IsZero() || l.Started.After(l.LibvirtdUp) || l.LibvirtdUp.After(l.Serving) || l.Serving.After(first) {
		errs = append(errs, fmt.Errorf("launcher started %s, libvirtd up %s, serving %s, handler began %s: want them in this order",
			stamp(l.Started), stamp(l.LibvirtdUp), stamp(l.Serving), stamp(first)))
	}
	cmd, _ := cmdsock.Find(tl.Handler, cmdsock.StepBootCommand)
	if l.Steps[0].Start.Before(cmd.Start) || l.Steps[len(l.Steps)-1].End.After(cmd.End) {
		errs = append(errs, fmt.Errorf("the launcher's steps (%s to %s) are not within the handler's boot command (%s to %s)",
			stamp(l.Steps[0].Start), stamp(l.Steps[len(l.Steps)-1].End), stamp(cmd.Start), stamp(cmd.End)))
	}
	ran := map[hookWant]bool{}
	for _, h := range l.Hooks {
		if h.Outcome == "skipped" {
			continue
		}
		w := hookWant{h.HookPoint, h.Plugin, h.Kind}
		ran[w] = true
		switch {
		case !slices.Contains(want, w):
			errs = append(errs, fmt.Errorf("hook %s %s (%s) ran, and no such hook should", h.HookPoint, h.Plugin, h.Kind))
		case h.Outcome != "success":
			errs = append(errs, fmt.Errorf("hook %s %s: outcome %s", h.HookPoint, h.Plugin, h.Outcome))
		case h.SocketWait < 0 || h.SocketWait > h.Duration:
			errs = append(errs, fmt.Errorf("hook %s %s: socket wait %s outside its duration %s", h.HookPoint, h.Plugin, h.SocketWait, h.Duration))
		}
	}
	for _, w := range want {
		if !ran[w] {
			errs = append(errs, fmt.Errorf("hook %s %s (%s) did not run", w.point, w.plugin, w.kind))
		}
	}
	return errors.Join(errs...)
}

// inOrder checks that steps are exactly names, each ending after it
// starts and starting no earlier than the one before ended.
func inOrder(who string, steps []cmdsock.Step, names []string) error {
	got := make([]string, 0, len(steps))
	for _, s := range steps {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, names) {
		return fmt.Errorf("%s steps %v, want %v", who, got, names)
	}
	for i, s := range steps {
		if s.Start.IsZero() || s.End.Before(s.Start) {
			return fmt.Errorf("%s step %s: start %s, end %s", who, s.Name, stamp(s.Start), stamp(s.End))
		}
		if i > 0 && s.Start.Before(steps[i-1].End) {
			return fmt.Errorf("%s step %s starts at %s, before %s ended at %s", who, s.Name, stamp(s.Start), steps[i-1].Name, stamp(steps[i-1].End))
		}
	}
	return nil
}

func stamp(t time.Time) string { return t.Format("15:04:05.000000") }

// describeTimeline is one line giving the framework's steps of a boot.
func describeTimeline(tl *cmdsock.Timeline) string {
	var parts []string
	for _, s := range tl.Handler {
		if s.Name == cmdsock.StepPreVMStart || s.Name == cmdsock.StepSelectPlugins {
			parts = append(parts, s.Name+" "+ms(s.Took()))
		}
	}
	for _, s := range tl.Launcher.Steps {
		parts = append(parts, s.Name+" "+ms(s.Took()))
	}
	for _, h := range tl.Launcher.Hooks {
		if h.Outcome == "skipped" {
			continue
		}
		p := fmt.Sprintf("%s %s %s", h.HookPoint, h.Plugin, ms(h.Duration))
		if h.SocketWait > 0 {
			p += " (socket " + ms(h.SocketWait) + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// ms writes d in milliseconds with two decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
