// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// Live migration through KubeVirt's own objects: a
// VirtualMachineInstanceMigration, virt-controller's target Pod,
// virt-handler's proxies and virt-launcher's MigrateToURI3, with the
// framework's PreMigrationSource in the source launcher
// (kubevirt/patches/0003).

const (
	// migrationTuner is the sample Plugin whose PreMigrationSource sidecar
	// the VM's labels tune (migration.example.com/parallel: "2").
	migrationTuner = "migration-tuner"
	// tunedChannels is the VM's migration.example.com/parallel.
	tunedChannels = 3
	// refusedLabel makes migration-tuner refuse the migration: xbzrle
	// compression does not go with parallel migration.
	refusedLabel = "migration.example.com/compression"
)

// kvWaitGuest waits until the guest's console log in pod satisfies done.
func (s *scenario) kvWaitGuest(ctx context.Context, pod *corev1.Pod, what string, done func(guest.Report) (bool, string)) (guest.Report, error) {
	var r guest.Report
	err := poll(ctx, what, guestBootTimeout, func() (bool, string, error) {
		out, err := s.kubectl(ctx, "", "-n", pod.Namespace, "logs", pod.Name, "-c", "guest-console-log")
		if err != nil {
			return false, err.Error(), nil
		}
		r = guest.Parse(out)
		ok, why := done(r)
		return ok, why, nil
	})
	return r, err
}

// migrationYAML is a VirtualMachineInstanceMigration of the VM's VMI.
func migrationYAML(name, vmi string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: ` + name + `
  namespace: ` + vmNamespace + `
spec:
  vmiName: ` + vmi + `
`
}

// runMigration creates a VirtualMachineInstanceMigration and waits for it
// to end, Succeeded or Failed.
func (s *scenario) runMigration(ctx context.Context, name string) (*kubevirtv1.VirtualMachineInstanceMigration, time.Duration, error) {
	start := time.Now()
	if _, err := s.kubectl(ctx, migrationYAML(name, s.kv.vmi.Name), "create", "-f", "-"); err != nil {
		return nil, 0, err
	}
	s.Show("$ kubectl create -f - <<< VirtualMachineInstanceMigration " + name + " (spec.vmiName " + s.kv.vmi.Name + ")")
	m := &kubevirtv1.VirtualMachineInstanceMigration{}
	m.Namespace, m.Name = vmNamespace, name
	err := poll(ctx, "the migration to end", 6*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error(), nil
		}
		return m.Status.Phase == kubevirtv1.MigrationSucceeded || m.Status.Phase == kubevirtv1.MigrationFailed, string(m.Status.Phase), nil
	})
	return m, time.Since(start), err
}

// podNamed reads a Pod of the VM namespace.
func (s *scenario) podNamed(ctx context.Context, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := s.c.Get(ctx, client.ObjectKey{Namespace: vmNamespace, Name: name}, p)
	return p, err
}

func (s *scenario) kvMigrate(ctx context.Context) error {
	vmi, source := s.kv.vmi, s.kv.pod
	from := vmi.Status.NodeName
	before, err := s.kvWaitGuest(ctx, source, "the guest's ticks", func(r guest.Report) (bool, string) {
		return len(r.Ticks) > 0, fmt.Sprintf("%d ticks", len(r.Ticks))
	})
	if !s.Check("the guest ticks in the source Pod on "+from+" before the migration", err == nil, "%d ticks%s", len(before.Ticks), errSuffix(err)) {
		return errCheckFailed
	}
	m, took, err := s.runMigration(ctx, "plugins-vm-migration")
	if err != nil {
		return err
	}
	var v kubevirtv1.VirtualMachineInstance
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), &v); err != nil {
		return err
	}
	ms := v.Status.MigrationState
	if !s.Check("the VirtualMachineInstanceMigration Succeeded: KubeVirt moved the VMI to the other worker",
		m.Status.Phase == kubevirtv1.MigrationSucceeded && ms != nil && ms.Completed && !ms.Failed && v.Status.NodeName != from && v.UID == vmi.UID,
		"phase %s after %s; VMI UID %s on %q (was %q)%s", m.Status.Phase, took.Round(100*time.Millisecond), v.UID, v.Status.NodeName, from, migrationFailure(ms)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	target, err := s.podNamed(ctx, ms.TargetPod)
	if err != nil {
		return err
	}
	native := nativeSidecars(target)
	s.Check("the target Pod "+target.Name+" carries migration-tuner's sidecar too (the injection follows the VMI's labels)",
		slices.Contains(native, migrationTuner), "restartable init containers %v", native)

	// What the source launcher handed libvirt, in its log (the framework's
	// line), and what libvirt then told QEMU to migrate with, in libvirt's
	// log of the monitor commands it sent (the VM's
	// kubevirt.io/libvirt-log-filters). Without the hook, KubeVirt asks for
	// 8 channels; QEMU's default is 2.
	srcLog, err := s.kubectl(ctx, "", "-n", source.Namespace, "logs", source.Name, "-c", "compute")
	if err != nil {
		return err
	}
	if line := lineWith(srcLog, "migration arguments after PreMigrationSource"); line != "" {
		s.Show("the source virt-launcher: " + line)
	}
	channels := multifdChannelsSent(srcLog)
	s.Check(fmt.Sprintf("libvirt in the source Pod set QEMU's multifd-channels to %d, migration-tuner's parallel.connections from migration.example.com/parallel (KubeVirt's own is 8)", tunedChannels),
		slices.Equal(channels, []int{tunedChannels}), "multifd-channels in libvirt's migrate-set-parameters commands to QEMU: %v", channels)

	d, state, err := s.kvDomain(ctx, target, &v)
	if err != nil {
		return err
	}
	s.Check("virsh in the target Pod: the domain runs with cel-tuning's title and smbios-watchdog's watchdog",
		state == "running" && d.Title == "VM "+v.Namespace+"/"+v.Name && watchdogAction(d) == "reset", "%s, title %q, watchdog action %q", state, d.Title, watchdogAction(d))

	last, _ := before.LastTick()
	after, err := s.kvWaitGuest(ctx, target, "the guest's ticks on the target", func(r guest.Report) (bool, string) {
		return len(r.Ticks) >= 2, fmt.Sprintf("%d ticks on the target", len(r.Ticks))
	})
	if s.Check("the guest ticks on in the target Pod", err == nil, "%s", errText(err)) {
		first := after.Ticks[0]
		s.Check("in the guest: the same boot goes on (boot id kept, counter continued, no second boot report)",
			first.BootID == before.BootID && !after.Ready && first.N > last.N,
			"source: boot id %s, tick %d before the migration; target: boot id %s, first tick %d, boot report again: %v",
			before.BootID, last.N, first.BootID, first.N, after.Ready)
	}
	if info, err := s.virsh(ctx, target, "domjobinfo", "--completed", v.Namespace+"_"+v.Name); err == nil {
		s.Show(fmt.Sprintf("migration %s from kubectl create to Succeeded; libvirt on the target: %s, %s", took.Round(100*time.Millisecond),
			jobField(info, "Total downtime"), jobField(info, "Data processed")))
	}

	got, err := s.compactHookPoints(ctx, from, string(v.UID))
	if err != nil {
		return err
	}
	s.Check("the source node's virt-handler ("+from+") called the recorder's PreMigrationSource after the VM's start",
		slices.Equal(got, []string{"PreVMStart", "PostVMStart", "PreMigrationSource"}), "got %v", got)
	got, err = s.compactHookPoints(ctx, v.Status.NodeName, string(v.UID))
	if err != nil {
		return err
	}
	s.Check("the target node's virt-handler ("+v.Status.NodeName+") called the recorder's PreMigrationTarget then PostMigrationTarget",
		slices.Equal(got, []string{"PreMigrationTarget", "PostMigrationTarget"}), "got %v", got)
	s.kv.nodeHooks = got
	if err := s.kvHookCounts(ctx, from, "migration-tuner's PreMigrationSource in the source launcher",
		outcomeSeries{migrationTuner, "PreMigrationSource", "success"}); err != nil {
		return err
	}
	s.kv.vmi, s.kv.pod = &v, target
	return nil
}

// kvMigrateRefused has migration-tuner refuse the next migration (its
// sidecar answers InvalidArgument to a label combination libvirt would
// refuse; its Plugin's failureStrategy is Fail).
func (s *scenario) kvMigrateRefused(ctx context.Context) error {
	vmi, pod := s.kv.vmi, s.kv.pod
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "label", "vmi", vmi.Name, refusedLabel+"=xbzrle"); err != nil {
		return err
	}
	s.Show("$ kubectl label vmi " + vmi.Name + " " + refusedLabel + fmt.Sprintf("=xbzrle (with migration.example.com/parallel: \"%d\", which xbzrle does not go with)", tunedChannels))
	m, took, err := s.runMigration(ctx, "plugins-vm-migration-refused")
	if err != nil {
		return err
	}
	// virt-controller copies the VMI's migration state into the
	// migration's status after the phase.
	if m.Status.Phase == kubevirtv1.MigrationFailed {
		_ = poll(ctx, "the migration's failure reason", time.Minute, func() (bool, string, error) {
			if err := s.c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
				return false, err.Error(), nil
			}
			return migrationFailure(m.Status.MigrationState) != "", "", nil
		})
	}
	reason := migrationFailure(m.Status.MigrationState)
	names := func(t string) bool {
		return strings.Contains(t, migrationTuner) && strings.Contains(t, "PreMigrationSource")
	}
	s.Check("the VirtualMachineInstanceMigration Failed; its status names the Plugin, the hook point and the cause",
		m.Status.Phase == kubevirtv1.MigrationFailed && names(reason) && strings.Contains(reason, refusedLabel),
		"phase %s after %s%s", m.Status.Phase, took.Round(100*time.Millisecond), reason)
	warning, err := s.vmiWarning(ctx, vmi.Name, names)
	s.Check("a Warning Event on the VMI says the same", err == nil, "%s%s", warning, errSuffix(err))
	var v kubevirtv1.VirtualMachineInstance
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), &v); err != nil {
		return err
	}
	p, err := s.podNamed(ctx, pod.Name)
	if err != nil {
		return err
	}
	s.Check("the VM goes on where it was: same VMI, same node, same launcher Pod running",
		v.UID == vmi.UID && v.Status.Phase == kubevirtv1.Running && v.Status.NodeName == vmi.Status.NodeName && p.UID == pod.UID && p.Status.Phase == corev1.PodRunning,
		"VMI %s %s on %q, Pod %s %s", v.UID, v.Status.Phase, v.Status.NodeName, p.Name, p.Status.Phase)
	if err := s.kvHookCounts(ctx, v.Status.NodeName, "migration-tuner's refusal", outcomeSeries{migrationTuner, "PreMigrationSource", "error"}); err != nil {
		return err
	}
	if s.kv.nodeHooks, err = s.compactHookPoints(ctx, v.Status.NodeName, string(v.UID)); err != nil {
		return err
	}
	_, err = s.kubectl(ctx, "", "-n", vmNamespace, "label", "vmi", vmi.Name, refusedLabel+"-")
	return err
}

// compactHookPoints lists the node hook points the recorder on node saw for
// the VMI uid, repeats collapsed.
func (s *scenario) compactHookPoints(ctx context.Context, node, uid string) ([]string, error) {
	evs, err := s.events(ctx, node, uid)
	if err != nil {
		return nil, err
	}
	return slices.Compact(hookPoints(evs, node)), nil
}

// migrationFailure is ", failure reason: ..." of a migration state, or "".
func migrationFailure(ms *kubevirtv1.VirtualMachineInstanceMigrationState) string {
	if ms == nil || ms.FailureReason == "" {
		return ""
	}
	return ", failure reason: " + ms.FailureReason
}

// lineWith returns the first line of log that contains what, "" if none.
func lineWith(log, what string) string {
	for l := range strings.Lines(log) {
		if strings.Contains(l, what) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// multifdChannelsSent lists, in order, the multifd-channels values of the
// migrate-set-parameters commands libvirt's log (relayed by
// virt-launcher, one JSON line each) says it sent QEMU.
func multifdChannelsSent(log string) []int {
	var out []int
	for l := range strings.Lines(log) {
		var line struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		_, msg, ok := strings.Cut(line.Msg, "QEMU_MONITOR_SEND_MSG: ")
		if !ok {
			continue
		}
		_, cmd, ok := strings.Cut(msg, "msg=")
		if !ok {
			continue
		}
		var c struct {
			Execute   string         `json:"execute"`
			Arguments map[string]any `json:"arguments"`
		}
		// The command is followed by the rest of libvirt's message.
		if json.NewDecoder(strings.NewReader(cmd)).Decode(&c) != nil || c.Execute != "migrate-set-parameters" {
			continue
		}
		if n, ok := c.Arguments["multifd-channels"].(float64); ok {
			out = append(out, int(n))
		}
	}
	return out
}
