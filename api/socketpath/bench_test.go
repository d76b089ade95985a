// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDial is the cost of one checked connect to a socket two levels
// below the root: Dial (the checked dial, see doc.go) next to Walk
// followed by a path connect, which
// leaves a window between the check and connect(2). Each iteration closes
// the connection it made.
func BenchmarkDial(b *testing.B) {
	base := shortTempDir(b)
	if err := os.MkdirAll(filepath.Join(base, "plugin"), 0o755); err != nil {
		b.Fatal(err)
	}
	serve(b, filepath.Join(base, "plugin", "hook.sock"), "hook.sock")
	root := NewRoot(base)
	components := []string{"plugin", "hook.sock"}
	ctx := b.Context()

	b.Run("checked-dial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			conn, err := root.Dial(ctx, components)
			if err != nil {
				b.Fatal(err)
			}
			_ = conn.Close()
		}
	})
	b.Run("walk-then-dial", func(b *testing.B) {
		b.ReportAllocs()
		var d net.Dialer
		for b.Loop() {
			path, err := root.Walk(components)
			if err != nil {
				b.Fatal(err)
			}
			conn, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				b.Fatal(err)
			}
			_ = conn.Close()
		}
	})
}
