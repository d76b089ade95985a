// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// ErrRejected marks a path that must not be dialed: through a symlink, a
// component that is not a directory, or a last component that is not a
// socket; for Roots also a path of the wrong shape, too long, or below no
// allowed root. Waiting does not help. A component that does not exist yet is
// reported with an error wrapping fs.ErrNotExist instead.
var ErrRejected = errors.New("socket path rejected")

// errNoComponents refuses a path that is the root itself: a socket lies
// below it.
var errNoComponents = fmt.Errorf("%w: no socket below the root given", ErrRejected)

// Root is a trusted directory below which sockets live. Safe for concurrent
// use.
type Root struct {
	dir string

	mu       sync.Mutex
	resolved string
}

// NewRoot returns the root at dir (cleaned). Nothing is read until the
// first Resolve or Walk.
func NewRoot(dir string) *Root {
	return &Root{dir: filepath.Clean(dir)}
}

// Dir is the root as configured.
func (r *Root) Dir() string { return r.dir }

// Resolve returns the root with its own symlinks resolved. The first
// successful resolution is kept: links in the root are trusted once, links
// below it never.
func (r *Root) Resolve() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resolved != "" {
		return r.resolved, nil
	}
	dir, err := filepath.EvalSymlinks(r.dir)
	if err != nil {
		return "", fmt.Errorf("resolving socket root %s: %w", r.dir, err)
	}
	r.resolved = dir
	return dir, nil
}

// Walk checks with Lstat each of the components below the root, in order,
// and returns the path to dial (below the resolved root). A component can
// still be swapped between Walk and a later connect(2); Dial has no such
// window.
func (r *Root) Walk(components []string) (string, error) {
	if len(components) == 0 {
		return "", errNoComponents
	}
	cur, err := r.Resolve()
	if err != nil {
		return "", err
	}
	for i, part := range components {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			return "", fmt.Errorf("%w: %w", ErrRejected, err)
		}
		if err := r.check(cur, fi.Mode().Type(), i == len(components)-1); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// check applies the rules to the component at path of the given type: no
// symlink, a directory unless it is the last component, which must be a
// socket.
func (r *Root) check(path string, typ fs.FileMode, last bool) error {
	switch {
	case typ&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink; symlinks are not allowed below the socket root %s", ErrRejected, path, r.dir)
	case !last && typ&fs.ModeDir == 0:
		return fmt.Errorf("%w: %s is not a directory", ErrRejected, path)
	case last && typ&fs.ModeSocket == 0:
		return fmt.Errorf("%w: %s is not a socket (mode %s)", ErrRejected, path, typ)
	}
	return nil
}
