// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// BenchmarkPluginsReady creates CONTROLLER_BENCH_PLUGINS (default 500)
// Plugins at once, each through the validating webhook, and measures until
// every one of them reports Ready=True at its generation:
//
//   - s/round: from the first create until all are Ready
//   - calls/plugin: API requests the controller's manager made in that
//     time, divided by the number of Plugins (counted by a RoundTripper on
//     the manager's rest.Config; the test's own creates and polls are not
//     counted). The breakdown by verb and resource is logged.
//
// Each Plugin has a CEL hook, a sidecar hook, a node hook and a reference to
// the envtest-installed ValidatingWebhookConfiguration, so every part of a
// reconcile runs; its expressions name the Plugin, so none is served from
// the CEL cache and each is compiled by the webhook and by the reconciler's
// first look. Run it alone, once:
//
//	go test -run '^$' -bench BenchmarkPluginsReady -benchtime 1x ./controller/
func BenchmarkPluginsReady(b *testing.B) {
	n := 500
	if v := os.Getenv("CONTROLLER_BENCH_PLUGINS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("CONTROLLER_BENCH_PLUGINS=%q: want a positive number", v)
		}
	}
	ctx := b.Context()
	for round := range b.N {
		b.StopTimer()
		prefix := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), round)
		apiCalls.reset()
		b.StartTimer()
		start := time.Now()
		if err := forEach(n, 32, func(i int) error {
			return admin.Create(ctx, benchPlugin(fmt.Sprintf("%s-%d", prefix, i)))
		}); err != nil {
			b.Fatalf("creating %d Plugins: %v", n, err)
		}
		created := time.Since(start)
		if err := waitAllReady(ctx, prefix, n, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		counts := apiCalls.reset()
		total := 0
		for _, c := range counts {
			total += c
		}
		b.ReportMetric(elapsed.Seconds(), "s/round")
		b.ReportMetric(float64(total)/float64(n), "calls/plugin")
		b.Logf("%d Plugins created in %s, all Ready after %s; %d controller API calls:", n, created.Round(time.Millisecond), elapsed.Round(time.Millisecond), total)
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			b.Logf("  %-60s %6d  (%.2f/plugin)", k, counts[k], float64(counts[k])/float64(n))
		}
		if err := admin.DeleteAllOf(ctx, &pluginv1alpha1.Plugin{}); err != nil {
			b.Fatalf("deleting the Plugins: %v", err)
		}
	}
}

func benchPlugin(name string) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: pluginv1alpha1.PluginSpec{
			Condition: fmt.Sprintf(`"example.com/%s" in vmi.Labels`, name),
			LauncherHooks: []pluginv1alpha1.LauncherHook{
				{
					CEL: &pluginv1alpha1.CELHook{
						HookPoint:  pluginv1alpha1.GuestDefinition,
						Expression: fmt.Sprintf(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}, Description: %q}`, name),
					},
					Condition: fmt.Sprintf(`vmi.Labels["example.com/%s"] == "cpu"`, name),
				},
				{Sidecar: &pluginv1alpha1.SidecarHook{
					SocketPath:     pluginv1alpha1.PluginDir(name) + "hook.sock",
					PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.PreBoot},
				}},
			},
			NodeHooks: []pluginv1alpha1.NodeHook{{
				Socket:         "/var/run/kubevirt/hooks/bench.sock",
				PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
			}},
			ValidatingAdmissionWebhooks: []pluginv1alpha1.AdmissionReference{{Name: "plugin-controller"}},
		},
	}
}

// waitAllReady lists the Plugins every 200ms until the n whose names start
// with prefix are all Ready at their generation.
func waitAllReady(ctx context.Context, prefix string, n int, timeout time.Duration) error {
	return poll.Every(ctx, 200*time.Millisecond, timeout, func() error {
		var list pluginv1alpha1.PluginList
		if err := admin.List(ctx, &list); err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			p := &list.Items[i]
			if len(p.Name) < len(prefix) || p.Name[:len(prefix)] != prefix {
				continue
			}
			if p.Status.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(p.Status.Conditions, pluginv1alpha1.ConditionReady) {
				ready++
			}
		}
		if ready != n {
			return fmt.Errorf("%d of %d Plugins Ready", ready, n)
		}
		return nil
	})
}

// forEach runs fn for 0..n-1 on at most workers goroutines and returns the
// first error.
func forEach(n, workers int, fn func(i int) error) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return firstErr
}

var _ client.Object = (*pluginv1alpha1.Plugin)(nil)
