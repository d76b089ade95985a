// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

func TestAtomicWriteFileReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud-init.iso")
	if err := os.WriteFile(path, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader that opened the file before the write keeps reading the old
	// content in full: the new file replaces the name, not the bytes.
	reader, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if err := sdk.AtomicWriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := io.ReadAll(reader)
	if err != nil || string(old) != "old content" {
		t.Fatalf("earlier reader saw %q, %v; want the old content whole", old, err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("file = %q, %v; want new", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode = %v, %v; want 0644", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v, want only the target (no temporary files)", entries)
	}
}

func TestAtomicWriteFileFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "missing", "file")
	if err := sdk.AtomicWriteFile(path, []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	// Renaming onto a directory fails after the temporary file was written:
	// the temporary file must be cleaned up and the directory kept.
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sdk.AtomicWriteFile(target, []byte("x"), 0o644); err == nil {
		t.Fatal("replacing a non-empty directory succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "target" || !entries[0].IsDir() {
		t.Fatalf("directory holds %v, want only the untouched target directory", entries)
	}
}
