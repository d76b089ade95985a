// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const killedSidecarVM = "sidecar-kill-vm"

// kvKillSidecar creates a VM whose smbios-watchdog sidecar is killed
// (SIGKILL through the node's containerd) as soon as it runs, before the
// VMI runs: the kubelet restarts the sidecar in place, and the launcher's
// GuestDefinition waits for its socket, so the VM boots with its change.
func (s *scenario) kvKillSidecar(ctx context.Context) error {
	labels := map[string]string{
		"plugins.example.com/smbios-watchdog": "enabled",
		"smbios.example.com/manufacturer":     "Example",
		"watchdog.example.com/action":         "reset",
	}
	if _, err := s.kubectl(ctx, bareVM(killedSidecarVM, labels), "apply", "-f", "-"); err != nil {
		return err
	}
	s.Show("VM " + killedSidecarVM + " created, selected by smbios-watchdog")
	var pod corev1.Pod
	var id string
	err := poll(ctx, "smbios-watchdog's container to run", 4*time.Minute, func() (bool, string, error) {
		var pods corev1.PodList
		if err := s.c.List(ctx, &pods, client.InNamespace(vmNamespace), client.MatchingLabels{"vm.kubevirt.io/name": killedSidecarVM}); err != nil {
			return false, err.Error(), nil
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d launcher Pods", len(pods.Items)), nil
		}
		pod = pods.Items[0]
		for _, st := range pod.Status.InitContainerStatuses {
			if st.Name == "smbios-watchdog" && st.State.Running != nil {
				id = containerID(st)
			}
		}
		return id != "", "not running yet", nil
	})
	if err != nil {
		return err
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = vmNamespace, killedSidecarVM
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
		return err
	}
	phase := vmi.Status.Phase
	if _, err := s.onNode(ctx, pod.Spec.NodeName, "ctr", "--namespace=k8s.io", "task", "kill", "--signal", "SIGKILL", id); err != nil {
		return err
	}
	s.Check("smbios-watchdog's container was killed before the VMI ran", phase != kubevirtv1.Running, "the VMI was %s when it was killed", phase)
	v, err := s.waitVMIRunning(ctx, killedSidecarVM)
	if !s.Check("the VM booted all the same", err == nil, "%s", errText(err)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	// The kubelet reports the restart in the Pod's status on its own
	// schedule, which can come after the boot.
	var p corev1.Pod
	var restarts int32
	err = poll(ctx, "the kubelet to report the sidecar's restart", time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(&pod), &p); err != nil {
			return false, err.Error(), nil
		}
		for _, st := range p.Status.InitContainerStatuses {
			if st.Name == "smbios-watchdog" {
				restarts = st.RestartCount
			}
		}
		return restarts >= 1, fmt.Sprintf("restarts %d", restarts), nil
	})
	s.Check("the kubelet restarted the killed sidecar in place (same Pod)", err == nil && p.UID == pod.UID, "restarts %d%s", restarts, errSuffix(err))
	d, state, err := s.kvDomain(ctx, &p, v)
	if err != nil {
		return err
	}
	s.Check("the boot waited for the restarted sidecar: its change is in the running domain", state == "running" &&
		smbiosEntry(d, "manufacturer") == "Example" && watchdogAction(d) == "reset",
		"state %s, manufacturer %q, watchdog %q", state, smbiosEntry(d, "manufacturer"), watchdogAction(d))
	_, err = s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", killedSidecarVM, "--wait=false")
	return err
}
