// SPDX-License-Identifier: Apache-2.0

package socketpath

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Roots checks and dials sockets given by absolute path below one of a
// fixed set of roots, as virt-handler does for node hook sockets on the
// host paths it mounts. Safe for concurrent use.
type Roots struct {
	roots []*Root
}

// NewRoots returns Roots for the given directories. Each must be an
// absolute path. The roots themselves may contain symlinks (on many hosts
// /var/run links to /run); they are resolved the first time they are
// needed.
func NewRoots(dirs []string) (*Roots, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no socket roots configured", ErrRejected)
	}
	r := &Roots{}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("socket root %q must be an absolute path", d)
		}
		r.roots = append(r.roots, NewRoot(d))
	}
	return r, nil
}

// Check returns the path to dial for socket, which is the socket's path
// below the resolved root. It fails with an error wrapping ErrRejected
// when socket is not absolute or not of the shape CheckShape accepts, is
// not below an allowed root, when any component below the root is a
// symlink, when the last component is not a socket, or when the path to
// dial is longer than sun_path; a missing component gives an error
// wrapping fs.ErrNotExist instead. Dial applies the same rules without a
// window between the check and connect(2).
func (r *Roots) Check(socket string) (string, error) {
	root, rel, err := r.locate(socket)
	if err != nil {
		return "", err
	}
	dial, err := root.Walk(rel)
	return dial, explain(socket, err)
}

// Dial connects to socket after the checks of Check, through Root.Dial.
func (r *Roots) Dial(ctx context.Context, socket string) (net.Conn, error) {
	root, rel, err := r.locate(socket)
	if err != nil {
		return nil, err
	}
	conn, err := root.Dial(ctx, rel)
	return conn, explain(socket, err)
}

// locate finds the root socket is below and the components below it,
// refusing a path that is not absolute, below no root, too long to dial
// once the root is resolved, or not of the shape CheckShape accepts.
func (r *Roots) locate(socket string) (*Root, []string, error) {
	if !filepath.IsAbs(socket) {
		return nil, nil, fmt.Errorf("%w: %q must be an absolute path", ErrRejected, socket)
	}
	for _, root := range r.roots {
		rel, ok := below(root.Dir(), socket)
		if !ok {
			continue
		}
		base, err := root.Resolve()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrRejected, err)
		}
		if dial := filepath.Join(base, rel); len(dial) > v1alpha1.MaxSocketPathLength {
			return nil, nil, fmt.Errorf("%w: %q resolves to %q, longer than %d bytes", ErrRejected, socket, dial, v1alpha1.MaxSocketPathLength)
		}
		if err := CheckShape(socket); err != nil {
			return nil, nil, fmt.Errorf("%w: %q %w", ErrRejected, socket, err)
		}
		return root, strings.Split(rel, "/"), nil
	}
	return nil, nil, fmt.Errorf("%w: %q is not under an allowed root (%s)", ErrRejected, socket, r.describe())
}

// explain names socket in an error of Walk or Dial.
func explain(socket string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("socket %q: %w", socket, err)
}

func (r *Roots) describe() string {
	names := make([]string, 0, len(r.roots))
	for _, root := range r.roots {
		names = append(names, root.Dir()+"/")
	}
	return strings.Join(names, ", ")
}

// below reports the part of p below root, which must be non-empty.
func below(root, p string) (string, bool) {
	prefix := root
	if prefix != "/" {
		prefix += "/"
	}
	if !strings.HasPrefix(p, prefix) || len(p) == len(prefix) {
		return "", false
	}
	return p[len(prefix):], true
}
