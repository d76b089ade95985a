// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hookrecorder "github.com/kubevirt-plugins/framework/sample-sidecars/node-hook-recorder/recorder"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// pollTimeout bounds every wait for something to appear; it is a deadline
// for progress, not a measurement.
const pollTimeout = 60 * time.Second

// recorder is one running node-hook-recorder container.
type recorder struct {
	// Socket is the recorder's socket as seen from the host.
	Socket string
	// Events is its events file as seen from the host.
	Events    string
	container *testcontainers.DockerContainer
}

// runs numbers the test runs, so that every run of a test (go test -count)
// has directories of its own below socketRoot.
var runs struct {
	sync.Mutex
	ids map[*testing.T]int
}

// runDir is the directory below socketRoot of this run of the test t.
func runDir(t *testing.T) string {
	runs.Lock()
	defer runs.Unlock()
	if runs.ids == nil {
		runs.ids = map[*testing.T]int{}
	}
	id, ok := runs.ids[t]
	if !ok {
		id = len(runs.ids) + 1
		runs.ids[t] = id
	}
	return filepath.Join(socketRoot, "r"+strconv.Itoa(id))
}

// startRecorder runs the recorder image, as its own non-root user, with dir
// (below this test run's directory, owned by that user) bind-mounted at
// /data, serving dir/<socketName> and appending to eventsDir/events.jsonl.
// Extra flags (delay, failures) follow.
func startRecorder(t *testing.T, dir, socketName, eventsDir string, flags ...string) *recorder {
	t.Helper()
	hostDir := filepath.Join(runDir(t), dir)
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	eventsHost := filepath.Join(runDir(t), eventsDir)
	if err := os.MkdirAll(eventsHost, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{hostDir, eventsHost} {
		if err := os.Chown(d, recorderUID, recorderUID); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"--socket", "/data/" + socketName, "--events-file", "/events/events.jsonl"}, flags...)
	ctr, err := testcontainers.Run(t.Context(), recorderImage,
		testcontainers.WithLogger(tclog.TestLogger(t)),
		testcontainers.WithCmd(args...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, hostDir+":/data", eventsHost+":/events")
		}),
	)
	if ctr != nil {
		t.Cleanup(func() {
			if err := ctr.Terminate(context.WithoutCancel(t.Context())); err != nil {
				t.Errorf("terminating recorder %s: %v", dir, err)
			}
		})
	}
	if err != nil {
		t.Fatalf("starting recorder %s: %v", dir, err)
	}
	r := &recorder{Socket: filepath.Join(hostDir, socketName), Events: filepath.Join(eventsHost, "events.jsonl"), container: ctr}
	poll.Until(t, "the recorder's socket", pollTimeout, func() error {
		fi, err := os.Lstat(r.Socket)
		if err == nil && fi.Mode()&fs.ModeSocket == 0 {
			return fmt.Errorf("%s is not a socket", r.Socket)
		}
		return err
	})
	return r
}

// stop stops the container gracefully; the recorder removes its socket.
func (r *recorder) stop(t *testing.T) {
	t.Helper()
	if err := r.container.Stop(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
}

// readEvents reads the recorder's events file in file order; a missing
// file is no events. The arrival times are cleared, so that the tests can
// compare events with the ones they expect.
func readEvents(t *testing.T, path string) []hookrecorder.Event {
	t.Helper()
	events, err := hookrecorder.ReadEvents(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		events[i].Time = time.Time{}
	}
	return events
}

func newVMI(name string, labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name), Labels: labels,
	}}
}

func nodeHook(socket string, points ...pluginv1alpha1.NodeHookPoint) pluginv1alpha1.NodeHook {
	return pluginv1alpha1.NodeHook{Socket: socket, PermittedHooks: points}
}

func newPlugin(name, condition string, hooks ...pluginv1alpha1.NodeHook) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       pluginv1alpha1.PluginSpec{Condition: condition, NodeHooks: hooks},
	}
}

// createPlugins creates the Plugins in the API server, waits until the
// store sees every one of them at its new resourceVersion, and deletes
// them all when the test ends.
func createPlugins(t *testing.T, ps ...*pluginv1alpha1.Plugin) {
	t.Helper()
	t.Cleanup(func() { deleteAllPlugins(t) })
	for _, p := range ps {
		if err := server.Client.Create(t.Context(), p); err != nil {
			t.Fatalf("creating Plugin %s: %v", p.Name, err)
		}
	}
	waitForStore(t, ps...)
}

// waitForStore waits until the store holds each Plugin at the
// resourceVersion the API server gave it.
func waitForStore(t *testing.T, ps ...*pluginv1alpha1.Plugin) {
	t.Helper()
	poll.Until(t, "the store sees the Plugins", pollTimeout, func() error {
		snap, err := plugins.Snapshot()
		if err != nil {
			return err
		}
		seen := map[string]string{}
		for _, p := range snap.Plugins {
			seen[p.Name] = p.ResourceVersion
		}
		for _, p := range ps {
			if seen[p.Name] != p.ResourceVersion {
				return fmt.Errorf("Plugin %s at resourceVersion %q, want %s", p.Name, seen[p.Name], p.ResourceVersion)
			}
		}
		return nil
	})
}

func deleteAllPlugins(t *testing.T) {
	t.Helper()
	// A cleanup: the test's context is already done.
	if err := server.Client.DeleteAllOf(context.WithoutCancel(t.Context()), &pluginv1alpha1.Plugin{}); err != nil {
		t.Errorf("deleting Plugins: %v", err)
		return
	}
	poll.Until(t, "the store is empty", pollTimeout, func() error {
		snap, err := plugins.Snapshot()
		if err == nil && len(snap.Plugins) != 0 {
			return fmt.Errorf("the store holds %d Plugins", len(snap.Plugins))
		}
		return err
	})
}
