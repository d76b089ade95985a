// SPDX-License-Identifier: Apache-2.0

package cmdsock

import (
	"time"
)

// TimelineAnnotation is where the virt-handler stand-in writes, on a VMI it
// booted, the Timeline of that boot (JSON), before it sets the VMI Running.
const TimelineAnnotation = "standin.kubevirt-plugins.io/boot-timeline"

// Timeline is one boot as the stand-ins saw it: the launcher's process
// and the handler's start step, each step with its wall-clock start and
// end. The stand-ins run on the nodes of one machine, so their clocks are
// the machine's and the times compare with each other and with the
// container runtime's.
type Timeline struct {
	// Launcher is the launcher's part: its process, libvirtd, the boot
	// command.
	Launcher *LauncherTimeline `json:"launcher,omitempty"`
	// Handler is the handler's start step: from the moment it found the
	// launcher serving (Steps[0].Start) to the VMI set Running.
	Handler []Step `json:"handler,omitempty"`
}

// LauncherTimeline is the launcher process's part of a boot.
type LauncherTimeline struct {
	// Started is when the process started; LibvirtdUp when libvirtd first
	// answered; Serving just before the command socket was made.
	Started    time.Time `json:"started"`
	LibvirtdUp time.Time `json:"libvirtdUp"`
	Serving    time.Time `json:"serving"`
	// Steps are the boot command's steps in order (StepHandover, StepISO,
	// StepGuestDefinition, StepPreBoot, StepDefineAndStart).
	Steps []Step `json:"steps"`
	// Hooks are the launcher hooks the boot ran, from the pipeline's
	// reports.
	Hooks []Hook `json:"hooks,omitempty"`
}

// Names of the steps.
const (
	// The launcher's: decoding the plugins handed over and building the
	// pipeline; the NoCloud ISO; the two hook points; libvirt's define and
	// start, after which the domain runs.
	StepHandover        = "handover"
	StepISO             = "nocloud-iso"
	StepGuestDefinition = "GuestDefinition"
	StepPreBoot         = "PreBoot"
	StepDefineAndStart  = "define-and-start"
	// The handler's: the node hooks before and after, choosing the
	// launcher's plugins, the boot command as the handler saw it, and the
	// VMI's status.
	StepPreVMStart    = "PreVMStart"
	StepSelectPlugins = "select-plugins"
	StepBootCommand   = "boot-command"
	StepPostVMStart   = "PostVMStart"
	StepSetRunning    = "set-running"
)

// Step is one step of a Timeline.
type Step struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Took is the step's duration.
func (s Step) Took() time.Duration { return s.End.Sub(s.Start) }

// Hook is one launcher hook of a boot: launcher-runtime/pipeline's
// HookReport, as far as timing goes.
type Hook struct {
	HookPoint  string        `json:"hookPoint"`
	Plugin     string        `json:"plugin"`
	Kind       string        `json:"kind,omitempty"`
	Outcome    string        `json:"outcome"`
	Duration   time.Duration `json:"duration"`
	SocketWait time.Duration `json:"socketWait,omitempty"`
}

// Recorder adds steps to a list as they end.
type Recorder struct {
	Steps []Step
	now   func() time.Time
}

// NewRecorder returns a Recorder on the wall clock.
func NewRecorder() *Recorder { return &Recorder{now: time.Now} }

// Do runs f as the step name and records it, also when f fails.
func (r *Recorder) Do(name string, f func() error) error {
	start := r.now()
	err := f()
	r.Steps = append(r.Steps, Step{Name: name, Start: start, End: r.now()})
	return err
}

// Find returns the step named name, and whether there is one.
func Find(steps []Step, name string) (Step, bool) {
	for _, s := range steps {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}
