// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/sample-sidecars/node-hook-recorder/recorder"
	"sigs.k8s.io/yaml"
)

// killLeader deletes the Pod holding the plugin-controller's Lease while
// Plugins are being admitted: the other replica takes over and the
// webhook answers throughout.
func (s *scenario) killLeader(ctx context.Context) error {
	holder, err := s.leaseHolder(ctx, controllerLease)
	if err != nil {
		return err
	}
	leader, _, _ := strings.Cut(holder, "_")
	s.Show("leader: " + leader + "; deleting it while, every 200 ms, an invalid Plugin is sent to the validating webhook and a launcher Pod asking for the probe sidecar to the injection webhook (dry runs)")
	var p pluginv1alpha1.Plugin
	if err := yaml.Unmarshal([]byte(invalidPlugin), &p); err != nil {
		return err
	}
	stop := make(chan struct{})
	type tally struct{ refused, other, injected, notInjected int }
	done := make(chan tally)
	var others, notInjected []string
	go func() {
		var t tally
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			err := s.c.Create(ctx, p.DeepCopy(), client.DryRunAll)
			switch {
			case refusedByWebhook(err):
				t.refused++
			default:
				t.other++
				others = append(others, errText(err))
			}
			switch ok, err := s.probeInjected(ctx); {
			case err == nil && ok:
				t.injected++
			case err == nil:
				t.notInjected++
				notInjected = append(notInjected, "admitted without the probe sidecar")
			default:
				t.notInjected++
				notInjected = append(notInjected, firstLine(err.Error()))
			}
			select {
			case <-stop:
				done <- t
				return
			case <-tick.C:
			}
		}
	}()
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = kubevirtNamespace, leader
	start := time.Now()
	if err := s.c.Delete(ctx, pod); err != nil {
		close(stop)
		<-done
		return err
	}
	var newHolder string
	err = poll(ctx, "another replica to take the Lease", 2*time.Minute, func() (bool, string, error) {
		h, err := s.leaseHolder(ctx, controllerLease)
		if err != nil {
			return false, err.Error(), nil
		}
		newHolder, _, _ = strings.Cut(h, "_")
		return newHolder != "" && newHolder != leader, "held by " + newHolder, nil
	})
	took := time.Since(start).Round(100 * time.Millisecond)
	// Keep sending until the Deployment is whole again.
	_ = poll(ctx, "the Deployment to have 2 Ready replicas again", 3*time.Minute, func() (bool, string, error) {
		return s.deploymentReady(ctx, "plugin-controller"), "", nil
	})
	close(stop)
	t := <-done
	s.Check("another replica took the Lease", err == nil, "%s after %s%s", newHolder, took, errSuffix(err))
	s.Check("the webhook refused every invalid Plugin sent during the handover", t.refused > 0 && t.other == 0,
		"%d refused by the webhook, %d other answers %v", t.refused, t.other, firstN(others, 3))
	s.Check("the injection webhook added the probe sidecar to every launcher Pod sent during the handover", t.injected > 0 && t.notInjected == 0,
		"%d with the sidecar, %d without or refused %v", t.injected, t.notInjected, firstN(notInjected, 3))
	return nil
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (s *scenario) deploymentReady(ctx context.Context, name string) bool {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(kubevirtNamespace), client.MatchingLabels{"app.kubernetes.io/name": name}); err != nil {
		return false
	}
	ready := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready == 2
}

// restartRecorder deletes the recorder Pod on the VM's node: the
// DaemonSet makes a new one, and the next node hook (OnVMStop) reaches it.
func (s *scenario) restartRecorder(ctx context.Context) error {
	node := s.workers[1]
	old, err := s.recorderPod(ctx, node)
	if err != nil {
		return err
	}
	if err := s.c.Delete(ctx, old); err != nil {
		return err
	}
	var fresh *corev1.Pod
	err = poll(ctx, "a new recorder Pod on "+node, 2*time.Minute, func() (bool, string, error) {
		p, err := s.recorderPod(ctx, node)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range p.Status.ContainerStatuses {
			if p.UID != old.UID && c.Ready && c.State.Running != nil {
				fresh = p
				return true, "", nil
			}
		}
		return false, "not ready", nil
	})
	if !s.Check("the DaemonSet replaced the deleted recorder Pod on "+node, err == nil, "%s", errText(err)) {
		return errCheckFailed
	}
	s.vm.recorderRestart = fresh.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	s.Show(fmt.Sprintf("new recorder Pod %s started at %s", fresh.Name, s.vm.recorderRestart.Format(time.RFC3339)))
	return nil
}

func (s *scenario) recorderPod(ctx context.Context, node string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(recorderNamespace)); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no recorder Pod on %s", node)
}

// events reads what the recorder on node recorded for uid.
func (s *scenario) events(ctx context.Context, node, uid string) ([]recorder.Event, error) {
	out, err := s.onNode(ctx, node, "cat", "/var/lib/node-hook-recorder/events.jsonl")
	if err != nil {
		return nil, err
	}
	var evs []recorder.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e recorder.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, err
		}
		if e.UID == uid {
			evs = append(evs, e)
		}
	}
	return evs, nil
}

func (s *scenario) nodeHooks(ctx context.Context) error {
	uid := string(s.vm.vmi.UID)
	want := map[string][]string{
		s.workers[0]: {"PreVMStart", "PostVMStart", "PreMigrationSource"},
		s.workers[1]: {"PreMigrationTarget", "PostMigrationTarget", "OnVMStop", "PostVMStop"},
	}
	for _, node := range s.workers {
		evs, err := s.events(ctx, node, uid)
		if err != nil {
			return err
		}
		var got []string
		right := true
		for _, e := range evs {
			got = append(got, e.HookPoint)
			right = right && e.Node == node
		}
		s.Check("the recorder on "+node+" got "+strings.Join(want[node], ", ")+" from the handler on "+node,
			slices.Equal(got, want[node]) && right, "got %v", got)
		if node == s.workers[1] {
			var stopAt time.Time
			for _, e := range evs {
				if e.HookPoint == string(pluginv1alpha1.OnVMStop) {
					stopAt = e.Time
				}
			}
			s.Check("OnVMStop reached the recorder Pod started after the restart", !stopAt.IsZero() && !stopAt.Before(s.vm.recorderRestart),
				"OnVMStop at %s, recorder restarted at %s", stopAt.Format(time.RFC3339Nano), s.vm.recorderRestart.Format(time.RFC3339))
		}
	}
	return nil
}

// killSidecar boots a second VM whose smbios-watchdog sidecar is killed
// (SIGKILL through the node's containerd) just before its boot: the kubelet
// restarts it and the launcher's GuestDefinition waits for its socket.
func (s *scenario) killSidecar(ctx context.Context) error {
	node := s.workers[0]
	_, vmi, pod, err := s.createVM(ctx, newVM("demo-vm-2", "0b7d5c2e-8f1a-4e3b-9c6d-2a4f8e1b7c90"), node)
	if err != nil {
		return err
	}
	var id string
	for _, st := range pod.Status.InitContainerStatuses {
		if st.Name == "smbios-watchdog" {
			id = containerID(st)
		}
	}
	if id == "" {
		return fmt.Errorf("launcher Pod %s has no running smbios-watchdog container", pod.Name)
	}
	if _, err := s.onNode(ctx, node, "ctr", "--namespace=k8s.io", "task", "kill", "--signal", "SIGKILL", id); err != nil {
		return err
	}
	s.Show("smbios-watchdog's container killed; the VMI is scheduled at once")
	if err := s.schedule(ctx, vmi, pod); err != nil {
		return err
	}
	err = s.waitVMI(ctx, vmi, "the second VM to run", func(v *kubevirtv1.VirtualMachineInstance) bool { return v.Status.Phase == kubevirtv1.Running })
	if !s.Check("the second VM booted", err == nil, "%s", errText(err)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	// The boot needed the restarted sidecar's answer, but the kubelet
	// reports the restart in the Pod's status on its own schedule, which
	// can come after the boot (seen once on 1.34: restarts 0 just after
	// the VM ran).
	var p corev1.Pod
	var restarted int32
	err = poll(ctx, "the kubelet to report the sidecar's restart", time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, err.Error(), nil
		}
		for _, st := range p.Status.InitContainerStatuses {
			if st.Name == "smbios-watchdog" {
				restarted = st.RestartCount
			}
		}
		return restarted >= 1, fmt.Sprintf("restarts %d", restarted), nil
	})
	s.Check("the kubelet restarted the killed sidecar in place", err == nil && p.UID == pod.UID, "restarts %d%s", restarted, errSuffix(err))
	d, state, err := s.domain(ctx, &p, vmi)
	if err != nil {
		return err
	}
	s.Check("the boot waited for the restarted sidecar: its change is in the running domain", state == "running" &&
		smbiosEntry(d, "manufacturer") == "Example" && watchdogAction(d) == "reset",
		"state %s, manufacturer %q, watchdog %q", state, smbiosEntry(d, "manufacturer"), watchdogAction(d))
	if err := s.c.Delete(ctx, vmi); err != nil {
		return err
	}
	err = s.waitCompleted(ctx, &p)
	s.Check("stopped again, its Pod completed", err == nil, "%s", errText(err))
	return nil
}
