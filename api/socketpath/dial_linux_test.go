// SPDX-License-Identifier: Apache-2.0

//go:build linux

package socketpath

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func reached(t *testing.T, conn net.Conn) string {
	t.Helper()
	defer conn.Close()
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A plugin's directory replaced by a symlink to another socket's directory
// after the components were checked does not redirect Dial; it does
// redirect a connect(2) to the path Walk returned, which is the window Dial
// closes.
func TestDialIsNotRedirectedByASymlinkSwappedInAfterTheCheck(t *testing.T) {
	base := shortTempDir(t)
	for _, d := range []string{"root/p", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serve(t, filepath.Join(base, "root", "p", "hook.sock"), "checked")
	serve(t, filepath.Join(base, "elsewhere", "hook.sock"), "elsewhere")

	root := NewRoot(filepath.Join(base, "root"))
	components := []string{"p", "hook.sock"}
	walked, err := root.Walk(components)
	if err != nil {
		t.Fatal(err)
	}
	swap := func() {
		if err := os.Rename(filepath.Join(base, "root", "p"), filepath.Join(base, "root", "p-old")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(base, "root", "p")); err != nil {
			t.Fatal(err)
		}
	}
	beforeConnect = swap
	t.Cleanup(func() { beforeConnect = nil })

	conn, err := root.Dial(t.Context(), components)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if got := reached(t, conn); got != "checked" {
		t.Fatalf("Dial reached the %q socket, want the one it checked", got)
	}

	// The path Walk returned now leads elsewhere.
	conn, err = net.Dial("unix", walked)
	if err != nil {
		t.Fatal(err)
	}
	if got := reached(t, conn); got != "elsewhere" {
		t.Fatalf("a dial of %s after the swap reached %q; the swap did not take effect", walked, got)
	}

	// And a later Dial refuses the symlink outright.
	beforeConnect = nil
	if _, err := root.Dial(t.Context(), components); !errors.Is(err, ErrRejected) {
		t.Fatalf("Dial through the swapped-in symlink: %v, want ErrRejected", err)
	}
}
