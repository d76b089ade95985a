// SPDX-License-Identifier: Apache-2.0

package sockets

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/fakeclock"
)

func listen(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
}

func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "kvp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, root string)
		socket   string
		notExist bool
		rejected bool
	}{
		{name: "Socket", socket: "/var/run/kubevirt-plugin/p/hook.sock",
			setup: func(t *testing.T, root string) { listen(t, filepath.Join(root, "p", "hook.sock")) }},
		{name: "Nested", socket: "/var/run/kubevirt-plugin/p/a/b/hook.sock",
			setup: func(t *testing.T, root string) { listen(t, filepath.Join(root, "p", "a", "b", "hook.sock")) }},
		{name: "Missing", socket: "/var/run/kubevirt-plugin/p/hook.sock", notExist: true,
			setup: func(t *testing.T, root string) {}},
		{name: "OtherPluginsDirectory", socket: "/var/run/kubevirt-plugin/q/hook.sock", rejected: true,
			setup: func(t *testing.T, root string) { listen(t, filepath.Join(root, "q", "hook.sock")) }},
		{name: "DotDot", socket: "/var/run/kubevirt-plugin/p/../q/hook.sock", rejected: true,
			setup: func(t *testing.T, root string) {}},
		{name: "RegularFile", socket: "/var/run/kubevirt-plugin/p/hook.sock", rejected: true,
			setup: func(t *testing.T, root string) {
				_ = os.MkdirAll(filepath.Join(root, "p"), 0o755)
				_ = os.WriteFile(filepath.Join(root, "p", "hook.sock"), nil, 0o644)
			}},
		{name: "SymlinkedPluginDir", socket: "/var/run/kubevirt-plugin/p/hook.sock", rejected: true,
			setup: func(t *testing.T, root string) {
				listen(t, filepath.Join(root, "q", "hook.sock"))
				_ = os.Symlink(filepath.Join(root, "q"), filepath.Join(root, "p"))
			}},
		{name: "DanglingSymlinkIsRejectedNotAwaited", socket: "/var/run/kubevirt-plugin/p/hook.sock", rejected: true,
			setup: func(t *testing.T, root string) {
				_ = os.MkdirAll(filepath.Join(root, "p"), 0o755)
				_ = os.Symlink(filepath.Join(root, "nowhere.sock"), filepath.Join(root, "p", "hook.sock"))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := shortDir(t)
			tc.setup(t, root)
			path, err := NewRoot(root).Check("p", tc.socket)
			switch {
			case tc.notExist:
				if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRejected) {
					t.Errorf("want not-exist, got %v", err)
				}
			case tc.rejected:
				if !errors.Is(err, ErrRejected) {
					t.Errorf("want a rejection, got %q, %v", path, err)
				}
			case err != nil:
				t.Errorf("want success, got %v", err)
			}
		})
	}
}

func TestBudgetIsSharedAcrossWaits(t *testing.T) {
	clk := fakeclock.New(time.Now())
	b := NewBudget(clk, time.Second, 100*time.Millisecond)
	missing := func(context.Context) error { return fs.ErrNotExist }
	done := make(chan error)
	go func() { done <- b.Wait(t.Context(), missing) }()
	var stepped time.Duration
waiting:
	for {
		select {
		case d := <-clk.Waits():
			if stepped > 2*time.Second {
				t.Fatalf("still waiting after %s of clock time, with a budget of 1s", stepped)
			}
			clk.Step(d)
			stepped += d
		case err := <-done:
			if err == nil || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("want the last not-exist error, got %v", err)
			}
			break waiting
		}
	}
	if stepped != time.Second || b.Remaining() != 0 {
		t.Fatalf("waited %s, remaining %s; want the whole budget spent once", stepped, b.Remaining())
	}
	// A second wait has nothing left: it fails without waiting.
	go func() { done <- b.Wait(t.Context(), missing) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("a spent budget let a wait succeed")
		}
	case <-clk.Waits():
		t.Fatalf("a spent budget still waits")
	}
}

// staleSocket leaves a socket file at path with nothing listening on it, as
// a sidecar container that restarted leaves its socket in the emptyDir.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket file is gone: %v", err)
	}
}

func TestProbeSocketIsReadyWhenAConnectionSucceeds(t *testing.T) {
	const socket = "/var/run/kubevirt-plugin/p/hook.sock"
	root := shortDir(t)
	r := NewRoot(root)
	path := filepath.Join(root, "p", "hook.sock")

	if err := r.Probe(t.Context(), "p", socket); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotListening) {
		t.Fatalf("missing socket: want not-exist, got %v", err)
	}
	staleSocket(t, path)
	// The file exists and is a socket: Check accepts it, but it is not ready.
	if _, err := r.Check("p", socket); err != nil {
		t.Fatalf("Check on the stale socket file: %v", err)
	}
	if err := r.Probe(t.Context(), "p", socket); !errors.Is(err, ErrNotListening) {
		t.Fatalf("stale socket file: want ErrNotListening, got %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	listen(t, path)
	if err := r.Probe(t.Context(), "p", socket); err != nil {
		t.Fatalf("listening socket: %v", err)
	}
}

func TestBudgetWaitKeepsTryingAStaleSocketAndSaysNothingListens(t *testing.T) {
	clk := fakeclock.New(time.Now())
	b := NewBudget(clk, time.Second, 100*time.Millisecond)
	tries := 0
	stale := func(context.Context) error {
		tries++
		return fmt.Errorf("%w: connect: connection refused", ErrNotListening)
	}
	done := make(chan error)
	go func() { done <- b.Wait(t.Context(), stale) }()
	for {
		select {
		case d := <-clk.Waits():
			clk.Step(d)
		case err := <-done:
			if !errors.Is(err, ErrNotListening) || !strings.Contains(err.Error(), "socket exists but nothing listens on it after the 1s socket wait budget") {
				t.Fatalf("want the budget spent on a socket nobody listens on, got %v", err)
			}
			// 100+200+400 ms, then the 300 ms left: backoff, not a fixed poll.
			if tries != 5 {
				t.Errorf("tried %d times, want 5 (four pauses doubling from 100ms within 1s)", tries)
			}
			return
		}
	}
}
