// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// The install path for a cluster that already runs KubeVirt: v1.9.0 as
// released runs a VM; the admin applies the patched build's operator
// manifest and sets the CR's imageTag (kubevirt/deploy.sh does both);
// KubeVirt's workload update live-migrates the VM onto a patched
// virt-launcher; then the framework's deploy/ goes on top.

const (
	upgradeManifest = "kubevirt/manifests/vm-upgrade.yaml"
	upgradeVM       = "upgrade-vm"
	// alpha1Policies is the prefix of the names of the ValidatingAdmission
	// Policies (and bindings) the release's virt-operator installs for its
	// alpha-1 Plugins.
	alpha1Policies = "kubevirt-plugin-"
	// subPathPolicy is the prefix of the one of them the patches keep, and
	// of its binding: plugin sidecars mount the sockets volume with a
	// subPath.
	subPathPolicy = "kubevirt-plugin-sidecar-subpath-"
)

// upgradeState is the VM that ran before the upgrade.
type upgradeState struct {
	vmi   *kubevirtv1.VirtualMachineInstance
	pod   *corev1.Pod
	guest guest.Report
}

// kvRelease deploys KubeVirt as released and starts upgradeVM on it.
func (s *scenario) kvRelease(ctx context.Context) error {
	// The e2e needs only the patched build's images and the project's:
	// from here on it runs beside the steps on this cluster.
	s.startE2E(ctx)
	tag := s.kv.release
	if err := s.kvDeploy(ctx, tag); err != nil {
		return err
	}
	if err := s.checkDeployed(ctx, tag, "the release without the framework's patches"); err != nil {
		return err
	}
	crd, err := s.readPluginCRD(ctx)
	s.Check("as released, virt-operator installs its own alpha-1 Plugin CRD (domainHooks)",
		err == nil && slices.Contains(crd.specFields, "domainHooks") && crd.labels["app.kubernetes.io/managed-by"] == "virt-operator",
		"spec fields %v, managed by %q%s", crd.specFields, crd.labels["app.kubernetes.io/managed-by"], errSuffix(err))
	m, err := s.kvManifestFor(upgradeManifest, tag)
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, m, "apply", "-f", "-"); err != nil {
		return err
	}
	s.Show("$ kubectl apply -f " + upgradeManifest + " (image tag " + tag + ")")
	vmi, err := s.waitVMIRunning(ctx, upgradeVM)
	if !s.Check("the VM runs on KubeVirt as released", err == nil, "%s", errText(err)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	pod, err := s.launcherPodOf(ctx, vmi)
	if err != nil {
		return err
	}
	image := containerImage(pod, "compute")
	s.Check("its launcher Pod runs the release's virt-launcher", image == "localhost/kubevirt/virt-launcher:"+tag, "compute runs %q", image)
	r, err := s.kvGuest(ctx, pod)
	if !s.Check("the guest booted and ticks", err == nil && r.BootID != "", "boot id %q, %d ticks%s", r.BootID, len(r.Ticks), errSuffix(err)) {
		return errCheckFailed
	}
	s.kv.upgrade = &upgradeState{vmi: vmi, pod: pod, guest: r}
	return nil
}

// kvUpgrade moves KubeVirt to the patched build under the running VM.
func (s *scenario) kvUpgrade(ctx context.Context) error {
	u := s.kv.upgrade
	if u == nil {
		return fmt.Errorf("no VM ran on KubeVirt as released")
	}
	start := time.Now()
	if err := s.kvDeploy(ctx, s.kv.tag); err != nil {
		return err
	}
	if err := s.checkDeployed(ctx, s.kv.tag, "the patched release"); err != nil {
		return err
	}
	_, err := s.kubectl(ctx, "", "get", "crd", "plugins.plugin.kubevirt.io")
	s.Check("the patched virt-operator removed the alpha-1 Plugin CRD it no longer installs (deploy/ installs the guide's)",
		err != nil && strings.Contains(err.Error(), "NotFound"), "kubectl get crd plugins.plugin.kubevirt.io: %s", errText(err))
	out, err := s.kubectl(ctx, "", "get", "validatingadmissionpolicies,validatingadmissionpolicybindings", "-o", "name")
	if err != nil {
		return err
	}
	var left []string
	kept := false
	for line := range strings.Lines(out) {
		_, name, _ := strings.Cut(strings.TrimSpace(line), "/")
		switch {
		case strings.HasPrefix(name, subPathPolicy):
			kept = true
		case strings.HasPrefix(name, alpha1Policies):
			left = append(left, name)
		}
	}
	s.Check("the patched virt-operator removed the alpha-1 Plugin admission policies and their bindings, and kept the sockets subPath policy",
		len(left) == 0 && kept, "left: %v; %s* kept: %v", left, subPathPolicy, kept)

	// KubeVirt's workload update: virt-controller marks the VMI's launcher
	// outdated and migrates it.
	var v kubevirtv1.VirtualMachineInstance
	err = poll(ctx, "the workload update to move the VM onto a patched launcher", 10*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(u.vmi), &v); err != nil {
			return false, err.Error(), nil
		}
		ms := v.Status.MigrationState
		if ms == nil {
			return false, "no migration yet", nil
		}
		if !ms.Completed {
			return false, fmt.Sprintf("migration %s to %q under way", ms.MigrationUID, ms.TargetNode), nil
		}
		_, outdated := v.Labels[kubevirtv1.OutdatedLauncherImageLabel]
		return !ms.Failed && !outdated && ms.SourcePod == u.pod.Name, fmt.Sprintf("migration %s completed, failed %v%s, outdated label %v",
			ms.MigrationUID, ms.Failed, migrationFailure(ms), outdated), nil
	})
	var migrations kubevirtv1.VirtualMachineInstanceMigrationList
	if err := s.c.List(ctx, &migrations, client.InNamespace(vmNamespace)); err != nil {
		return err
	}
	var ours []string
	for _, m := range migrations.Items {
		if m.Spec.VMIName == upgradeVM {
			ours = append(ours, fmt.Sprintf("%s %s", m.Name, m.Status.Phase))
		}
	}
	if !s.Check("KubeVirt's workload update live-migrated the VMI (a VirtualMachineInstanceMigration of its own, Succeeded)", err == nil,
		"%s after the deployment began; migrations %v%s", time.Since(start).Round(time.Second), ours, errSuffix(err)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	target, err := s.podNamed(ctx, v.Status.MigrationState.TargetPod)
	if err != nil {
		return err
	}
	image := containerImage(target, "compute")
	s.Check("the VM was never restarted: same VMI, now in a launcher Pod running the patched virt-launcher",
		v.UID == u.vmi.UID && v.Status.Phase == kubevirtv1.Running && image == "localhost/kubevirt/virt-launcher:"+s.kv.tag,
		"VMI %s (was %s) %s on %s, Pod %s runs %q", v.UID, u.vmi.UID, v.Status.Phase, v.Status.NodeName, target.Name, image)
	last, _ := u.guest.LastTick()
	after, err := s.kvWaitGuest(ctx, target, "the guest's ticks on the patched launcher", func(r guest.Report) (bool, string) {
		return len(r.Ticks) >= 2, fmt.Sprintf("%d ticks on the target", len(r.Ticks))
	})
	if s.Check("the guest ticks on in the patched launcher", err == nil, "%s", errText(err)) {
		first := after.Ticks[0]
		s.Check("in the guest: the same boot goes on (boot id kept, counter continued, no second boot report)",
			first.BootID == u.guest.BootID && !after.Ready && first.N > last.N,
			"before: boot id %s, tick %d; after: boot id %s, first tick %d, boot report again: %v",
			u.guest.BootID, last.N, first.BootID, first.N, after.Ready)
	}
	evs, err := s.vmiEvents(ctx, upgradeVM)
	if err != nil {
		return err
	}
	var warnings []string
	for _, e := range evs {
		// A sync cut by the migration's closing connection is KubeVirt's
		// own; what the check is for is a launcher refusing the handover.
		if strings.HasPrefix(e, "Warning ") && strings.Contains(e, "plugins") {
			warnings = append(warnings, e)
		}
	}
	s.Check("no Warning Event on the VMI about the Plugins during the upgrade (an alpha-1 launcher reads what the patched virt-handler hands it)", len(warnings) == 0,
		"%d: %v", len(warnings), firstN(warnings, 5))
	u.vmi, u.pod = &v, target
	return nil
}

// kvUpgradedVM: with deploy/ and the samples applied, the VM that came
// through the upgrade is stopped (its node's recorder Pod restarted first)
// and started again.
func (s *scenario) kvUpgradedVM(ctx context.Context) error {
	u := s.kv.upgrade
	vmi, node := u.vmi, u.vmi.Status.NodeName
	// The patched virt-handler began watching Plugins while the release's
	// alpha-1 CRD, of the same resource, still existed; the operator then
	// deleted it, and the handler's watch, which failed, lists again after
	// client-go's backoff once deploy/ has created the guide's CRD. The
	// launcher hook series of cel-tuning, applied with the samples, say
	// when the handler holds the Plugins again.
	start := time.Now()
	err := poll(ctx, "virt-handler on "+node+" to hold the samples' Plugins", 3*time.Minute, func() (bool, string, error) {
		text, err := s.handlerMetrics(ctx, node)
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Contains(text, `plugin="cel-tuning"`), "no series of cel-tuning yet", nil
	})
	if !s.Check("virt-handler on "+node+" holds the Plugins created with the samples", err == nil, "after %s%s",
		time.Since(start).Round(100*time.Millisecond), errSuffix(err)) {
		return errCheckFailed
	}
	restarted, err := s.restartRecorder(ctx, node)
	if err != nil {
		return err
	}
	if err := s.kvHalt(ctx, vmi, u.pod); err != nil {
		return err
	}
	evs, err := s.events(ctx, node, string(vmi.UID))
	if err != nil {
		return err
	}
	got := slices.Compact(hookPoints(evs, node))
	early := 0
	for _, e := range evs {
		if e.Time.Before(restarted) {
			early++
		}
	}
	s.Check("the patched virt-handler on "+node+" delivered OnVMStop, PostVMStop for the migrated VM, to the recorder Pod started after the restart",
		slices.Equal(got, []string{"OnVMStop", "PostVMStop"}) && early == 0, "got %v, %d before the recorder's restart", got, early)
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "patch", "vm", upgradeVM, "--type=merge", "-p", `{"spec":{"runStrategy":"Always"}}`); err != nil {
		return err
	}
	s.Show("$ kubectl patch vm " + upgradeVM + " runStrategy Always")
	v := &kubevirtv1.VirtualMachineInstance{}
	err = poll(ctx, "a new VMI to run", 6*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: vmNamespace, Name: upgradeVM}, v); err != nil {
			return false, err.Error(), nil
		}
		return v.UID != vmi.UID && v.Status.Phase == kubevirtv1.Running, fmt.Sprintf("VMI %s %s", v.UID, v.Status.Phase), nil
	})
	if !s.Check("the VM started again: a new VMI runs", err == nil, "%s", errText(err)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	pod, err := s.launcherPodOf(ctx, v)
	if err != nil {
		return err
	}
	d, state, err := s.kvDomain(ctx, pod, v)
	if err != nil {
		return err
	}
	want := "VM " + v.Namespace + "/" + v.Name
	s.Check("its Plugins applied at this start: the domain has cel-tuning's title", state == "running" && d.Title == want,
		"%s, title %q, want %q", state, d.Title, want)
	got, err = s.compactHookPoints(ctx, v.Status.NodeName, string(v.UID))
	if err != nil {
		return err
	}
	s.Check("virt-handler on "+v.Status.NodeName+" called PreVMStart, PostVMStart for the new VMI", slices.Equal(got, []string{"PreVMStart", "PostVMStart"}), "got %v", got)
	_, err = s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", upgradeVM, "--wait=false")
	return err
}

// restartRecorder deletes the recorder Pod on node and waits for the
// DaemonSet's new one to run; it returns when that one started.
func (s *scenario) restartRecorder(ctx context.Context, node string) (time.Time, error) {
	old, err := s.recorderPod(ctx, node)
	if err != nil {
		return time.Time{}, err
	}
	if err := s.c.Delete(ctx, old); err != nil {
		return time.Time{}, err
	}
	var started time.Time
	err = poll(ctx, "a new recorder Pod on "+node, 2*time.Minute, func() (bool, string, error) {
		p, err := s.recorderPod(ctx, node)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range p.Status.ContainerStatuses {
			if p.UID != old.UID && c.Ready && c.State.Running != nil {
				started = c.State.Running.StartedAt.Time
				return true, "", nil
			}
		}
		return false, "not ready", nil
	})
	if !s.Check("the DaemonSet replaced the deleted recorder Pod on "+node, err == nil, "%s", errText(err)) {
		return time.Time{}, errCheckFailed
	}
	s.Show("the recorder Pod on " + node + " deleted; the new one started at " + started.Format(time.RFC3339))
	return started, nil
}

// containerImage is the image of the Pod's container name, "" if none.
func containerImage(p *corev1.Pod, name string) string {
	return namedContainer(p.Spec.Containers, name).Image
}
