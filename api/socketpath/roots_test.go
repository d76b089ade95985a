// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

func TestSocketMustLieUnderAllowedRootWithoutSymlinks(t *testing.T) {
	base := shortTempDir(t)
	root := filepath.Join(base, "kv")
	outside := filepath.Join(base, "other")
	serve(t, filepath.Join(root, "plugins", "a.sock"), "")
	serve(t, filepath.Join(outside, "b.sock"), "")
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "plugins", "a.sock"), filepath.Join(root, "plugins", "link.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "plugins", "file.sock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notadir"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	serve(t, filepath.Join(base, "kvx", "c.sock"), "")

	tests := []struct {
		name       string
		socket     string
		notAllowed bool // wraps ErrRejected
		notExist   bool // wraps fs.ErrNotExist
	}{
		{name: "socket in a subdirectory of the root", socket: root + "/plugins/a.sock"},
		{name: "relative path", socket: "plugins/a.sock", notAllowed: true},
		{name: "dot-dot escaping the root", socket: root + "/../other/b.sock", notAllowed: true},
		{name: "repeated slash", socket: root + "//plugins/a.sock", notAllowed: true},
		{name: "trailing slash", socket: root + "/plugins/a.sock/", notAllowed: true},
		{name: "outside every root", socket: outside + "/b.sock", notAllowed: true},
		{name: "sibling sharing the root's prefix", socket: base + "/kvx/c.sock", notAllowed: true},
		{name: "the root itself", socket: root, notAllowed: true},
		{name: "symlinked directory below the root", socket: root + "/linkdir/b.sock", notAllowed: true},
		{name: "symlinked socket", socket: root + "/plugins/link.sock", notAllowed: true},
		{name: "regular file", socket: root + "/plugins/file.sock", notAllowed: true},
		{name: "file where a directory is expected", socket: root + "/notadir/x.sock", notAllowed: true},
		{name: "missing socket", socket: root + "/plugins/gone.sock", notExist: true},
	}
	c, err := NewRoots([]string{root + "/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Check(tt.socket)
			switch {
			case tt.notAllowed:
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("Check(%q) = %q, %v; want ErrRejected", tt.socket, got, err)
				}
			case tt.notExist:
				if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRejected) {
					t.Fatalf("Check(%q) = %q, %v; want a not-exist error", tt.socket, got, err)
				}
			default:
				if err != nil || got != tt.socket {
					t.Fatalf("Check(%q) = %q, %v; want the path itself", tt.socket, got, err)
				}
			}

			// Dial refuses what Check refuses and connects to the rest.
			conn, err := c.Dial(t.Context(), tt.socket)
			if conn != nil {
				conn.Close()
			}
			switch {
			case tt.notAllowed:
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("Dial(%q): %v; want ErrRejected", tt.socket, err)
				}
			case tt.notExist:
				if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRejected) {
					t.Fatalf("Dial(%q): %v; want a not-exist error", tt.socket, err)
				}
			default:
				if err != nil {
					t.Fatalf("Dial(%q): %v", tt.socket, err)
				}
			}
		})
	}
}

func TestSymlinkedRootIsResolvedAndAllowed(t *testing.T) {
	base := shortTempDir(t)
	real := filepath.Join(base, "run", "kv")
	serve(t, filepath.Join(real, "p", "a.sock"), "")
	// Like /var/run -> /run on many hosts: the root itself goes through a link.
	if err := os.Symlink(filepath.Join(base, "run"), filepath.Join(base, "varrun")); err != nil {
		t.Fatal(err)
	}
	c, err := NewRoots([]string{filepath.Join(base, "varrun", "kv")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Check(filepath.Join(base, "varrun", "kv", "p", "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(real, "p", "a.sock"); got != want {
		t.Fatalf("dial path = %q, want %q", got, want)
	}
}

func TestSocketPathLongerThanSunPathIsRefused(t *testing.T) {
	base := shortTempDir(t)
	dir := base
	for len(dir) < v1alpha1.MaxSocketPathLength {
		dir = filepath.Join(dir, strings.Repeat("d", 20))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// No listener can bind such a path, so the check must refuse it by its
	// length, before looking at what the file is.
	c, err := NewRoots([]string{base})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "a.sock")
	if err := os.WriteFile(sock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(sock); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("Check of a %d-byte path = %v, want ErrRejected", len(sock), err)
	}
}

func TestRootsMustBeAbsolute(t *testing.T) {
	if _, err := NewRoots([]string{"var/run/kubevirt"}); err == nil {
		t.Fatal("NewRoots accepted a relative root")
	}
	if _, err := NewRoots(nil); err == nil {
		t.Fatal("NewRoots accepted no roots")
	}
}
