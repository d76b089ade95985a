// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
