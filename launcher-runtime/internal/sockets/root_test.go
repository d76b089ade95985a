package sockets

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
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
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBudget(clk, time.Second, 100*time.Millisecond)
	missing := func() (string, error) { return "", fs.ErrNotExist }
	done := make(chan error)
	go func() {
		_, err := b.Wait(context.Background(), missing)
		done <- err
	}()
	var stepped time.Duration
	for {
		select {
		case err := <-done:
			if err == nil || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("want the last not-exist error, got %v", err)
			}
			if stepped != time.Second || b.Remaining() != 0 {
				t.Fatalf("waited %s, remaining %s; want the whole budget spent once", stepped, b.Remaining())
			}
			// A second wait has nothing left: it fails without waiting.
			if _, err := b.Wait(context.Background(), missing); err == nil {
				t.Fatalf("a spent budget let a wait succeed")
			}
			if clk.HasWaiters() {
				t.Fatalf("a spent budget still waits")
			}
			return
		default:
		}
		if clk.HasWaiters() {
			clk.Step(100 * time.Millisecond)
			stepped += 100 * time.Millisecond
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}
