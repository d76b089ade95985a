// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"fmt"
	"os"
	"path/filepath"
)

// AtomicWriteFile replaces path with data so that readers see either the
// old or the new content, never a partial file: it writes a temporary file
// in the same directory, syncs it, renames it over path and syncs the
// directory. perm applies to the new file. On error the temporary file is
// removed and path is left as it was.
func AtomicWriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomic write of %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("atomic write of %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("atomic write of %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("atomic write of %s: sync: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("atomic write of %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("atomic write of %s: %w", path, err)
	}
	// Make the rename itself durable; a failure here does not undo it.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
