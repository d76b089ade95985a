// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWalkRefusesSymlinksBelowTheRootAndTrustsTheRootsOwn(t *testing.T) {
	base := shortTempDir(t)
	real := filepath.Join(base, "real")
	for _, d := range []string{"real/p", "real/other"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serve(t, filepath.Join(real, "p", "hook.sock"), "hook.sock")
	if err := os.WriteFile(filepath.Join(real, "p", "file.sock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, link := range [][2]string{
		{filepath.Join(base, "root"), real},                                            // the root itself is a link
		{filepath.Join(real, "linked"), filepath.Join(real, "p")},                      // a directory below it
		{filepath.Join(real, "p", "link.sock"), filepath.Join(real, "p", "hook.sock")}, // the socket
	} {
		if err := os.Symlink(link[1], link[0]); err != nil {
			t.Fatal(err)
		}
	}
	root := NewRoot(filepath.Join(base, "root"))
	for _, tc := range []struct {
		name       string
		components []string
		want       string // "ok", "rejected" or "missing"
	}{
		{"socket below a linked root", []string{"p", "hook.sock"}, "ok"},
		{"symlinked directory", []string{"linked", "hook.sock"}, "rejected"},
		{"symlinked socket", []string{"p", "link.sock"}, "rejected"},
		{"regular file", []string{"p", "file.sock"}, "rejected"},
		{"file as a directory", []string{"p", "file.sock", "x.sock"}, "rejected"},
		{"not there yet", []string{"p", "later.sock"}, "missing"},
		{"directory not there yet", []string{"q", "hook.sock"}, "missing"},
		{"the root itself", nil, "rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := root.Walk(tc.components)
			switch tc.want {
			case "ok":
				if err != nil || got != filepath.Join(real, "p", "hook.sock") {
					t.Fatalf("Walk = %q, %v; want the path below the resolved root", got, err)
				}
			case "rejected":
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("Walk = %q, %v; want ErrRejected", got, err)
				}
			case "missing":
				if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRejected) {
					t.Fatalf("Walk = %q, %v; want fs.ErrNotExist, not a rejection", got, err)
				}
			}

			// Dial applies the same rules and connects only when they hold.
			conn, err := root.Dial(t.Context(), tc.components)
			if conn != nil {
				defer conn.Close()
			}
			switch tc.want {
			case "ok":
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				if b, err := io.ReadAll(conn); err != nil || string(b) != "hook.sock" {
					t.Fatalf("Dial reached a server that says %q (%v), want hook.sock", b, err)
				}
			case "rejected":
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("Dial: %v; want ErrRejected", err)
				}
			case "missing":
				if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRejected) {
					t.Fatalf("Dial: %v; want fs.ErrNotExist, not a rejection", err)
				}
			}
		})
	}
}
