// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// Kubernetes' recommended labels belong to users: an app.kubernetes.io
// entry is admitted and its labels flow VM template -> VMI -> Pod.
func TestRecommendedAppLabelsFlowFromTemplateToPod(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-app", map[string]string{"app.kubernetes.io/name": "db", "app.kubernetes.io/version": "1"}, nil, outside)
	_, _, podUID := current(t, r.pod)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "app.kubernetes.io/*")}, ns)

	patchTemplate(t, r.vm, map[string]any{"app.kubernetes.io/version": "2", "app.kubernetes.io/part-of": "shop"}, nil)
	poll.Until(t, "recommended labels on the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"app.kubernetes.io/name": "db", "app.kubernetes.io/version": "2", "app.kubernetes.io/part-of": "shop"})
	})
	patchTemplate(t, r.vm, map[string]any{"app.kubernetes.io/part-of": nil}, nil)
	poll.Until(t, "removed recommended label gone from the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"app.kubernetes.io/part-of": "", "app.kubernetes.io/version": "2"})
	})
	checkOutsideAndUID(t, r, podUID)
}

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// admittedEntries returns the "sync entry admitted" log lines of a JSON
// log, keyed by "<kind> <entry>".
func admittedEntries(log string) map[string]map[string]any {
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != "sync entry admitted" {
			continue
		}
		out[fmt.Sprint(line["kind"], " ", line["entry"])] = line
	}
	return out
}

// TestStartupLogListsEveryAdmittedEntry runs the binary and reads its log:
// one line per admitted entry, saying what it matches and, for an owned
// domain, which allowance admitted it; the descheduler annotations are
// listed as built in unless turned off.
func TestStartupLogListsEveryAdmittedEntry(t *testing.T) {
	bin := syncerBinary.Path(t)
	cfg := kubeconfig(t)
	start := func(t *testing.T, extra ...string) map[string]map[string]any {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		args := append([]string{"--kubeconfig=" + cfg, "--metrics-bind-address=0", "--health-probe-bind-address=0",
			"--additional-launcher-labels-sync=ops.example.com/*,app.kubernetes.io/name,node-role.kubernetes.io/worker",
			"--additional-launcher-annotations-sync=notes.example.com/ticket",
			"--allow-owned-domains=node-role.kubernetes.io"}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		stderr := &lockedBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		defer func() {
			cancel()
			<-exited
		}()
		poll.Until(t, "the start-up log lists the entries", waitTimeout, func() error {
			select {
			case <-exited:
				t.Fatalf("label-syncer exited: %s", stderr.String())
			default:
			}
			if !strings.Contains(stderr.String(), `"label syncer configured"`) {
				return fmt.Errorf("not configured yet; log so far:\n%s", stderr.String())
			}
			return nil
		})
		return admittedEntries(stderr.String())
	}

	t.Run("descheduler annotations on", func(t *testing.T) {
		got := start(t)
		want := map[string]map[string]any{
			"label ops.example.com/*":                                       {"matches": "keys starting with ops.example.com/", "source": "configured"},
			"label app.kubernetes.io/name":                                  {"matches": "the key app.kubernetes.io/name", "source": "configured"},
			"label node-role.kubernetes.io/worker":                          {"matches": "the key node-role.kubernetes.io/worker", "source": "configured", "ownedDomainAllowed": "node-role.kubernetes.io"},
			"annotation notes.example.com/ticket":                           {"matches": "the key notes.example.com/ticket", "source": "configured"},
			"annotation descheduler.alpha.kubernetes.io/evict":              {"matches": "the key descheduler.alpha.kubernetes.io/evict"},
			"annotation descheduler.alpha.kubernetes.io/prefer-no-eviction": {"matches": "the key descheduler.alpha.kubernetes.io/prefer-no-eviction"},
		}
		if len(got) != len(want) {
			t.Errorf("admitted entries logged: %d, want %d: %v", len(got), len(want), got)
		}
		for key, fields := range want {
			line, ok := got[key]
			if !ok {
				t.Errorf("no start-up line for %s", key)
				continue
			}
			for f, v := range fields {
				if line[f] != v {
					t.Errorf("%s: %s = %v, want %q", key, f, line[f], v)
				}
			}
			if strings.HasPrefix(key, "annotation descheduler.") && !strings.Contains(fmt.Sprint(line["source"]), "--sync-descheduler-annotations=false turns it off") {
				t.Errorf("%s: source %v does not say how to turn it off", key, line["source"])
			}
		}
	})
	t.Run("descheduler annotations off", func(t *testing.T) {
		got := start(t, "--sync-descheduler-annotations=false")
		for key := range got {
			if strings.Contains(key, "descheduler") {
				t.Errorf("%s listed although turned off", key)
			}
		}
		if len(got) != 4 {
			t.Errorf("admitted entries logged: %d, want 4: %v", len(got), got)
		}
	})
}
