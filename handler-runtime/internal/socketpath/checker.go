package socketpath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	fspath "github.com/kubevirt-plugins/framework/api/socketpath"
)

// MaxLength is the size of sun_path: a longer path cannot be dialed.
const MaxLength = 108

// ErrNotAllowed is wrapped by every error that refuses a socket path.
var ErrNotAllowed = errors.New("socket path not allowed")

// Checker validates socket paths against a fixed set of roots.
type Checker struct {
	roots []*fspath.Root
}

// New returns a Checker for the given roots. Each root must be an absolute
// path. The roots themselves may contain symlinks (on many hosts /var/run
// links to /run); they are resolved the first time they are needed.
func New(roots []string) (*Checker, error) {
	if len(roots) == 0 {
		return nil, fmt.Errorf("%w: no socket roots configured", ErrNotAllowed)
	}
	c := &Checker{}
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("socket root %q must be an absolute path", r)
		}
		c.roots = append(c.roots, fspath.NewRoot(r))
	}
	return c, nil
}

// Check returns the path to dial for socket, which is the socket's path
// below the resolved root. It fails when socket is not clean and absolute,
// is not below an allowed root, when any component below the root is a
// symlink or missing, when the last component is not a socket, or when the
// path to dial exceeds MaxLength. Dial applies the same rules without a
// window between the check and connect(2).
func (c *Checker) Check(socket string) (string, error) {
	root, rel, err := c.locate(socket)
	if err != nil {
		return "", err
	}
	dial, err := root.Walk(rel)
	return dial, explain(socket, err)
}

// Dial connects to socket after the checks of Check, holding each
// component open while it is checked (socketpath.Root.Dial), so that a
// component swapped for a symlink after the check is not followed.
func (c *Checker) Dial(ctx context.Context, socket string) (net.Conn, error) {
	root, rel, err := c.locate(socket)
	if err != nil {
		return nil, err
	}
	conn, err := root.Dial(ctx, rel)
	return conn, explain(socket, err)
}

// locate finds the allowed root socket is below and the components below
// it, refusing a path that is not clean and absolute, below no root, or
// too long to dial.
func (c *Checker) locate(socket string) (*fspath.Root, []string, error) {
	if !filepath.IsAbs(socket) || filepath.Clean(socket) != socket {
		return nil, nil, fmt.Errorf("%w: %q must be an absolute path without '..', repeated or trailing '/'", ErrNotAllowed, socket)
	}
	for _, r := range c.roots {
		rel, ok := below(r.Dir(), socket)
		if !ok {
			continue
		}
		base, err := r.Resolve()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrNotAllowed, err)
		}
		if dial := filepath.Join(base, rel); len(dial) > MaxLength {
			return nil, nil, fmt.Errorf("%w: %q resolves to %q, longer than %d bytes", ErrNotAllowed, socket, dial, MaxLength)
		}
		return r, strings.Split(rel, "/"), nil
	}
	return nil, nil, fmt.Errorf("%w: %q is not under an allowed root (%s)", ErrNotAllowed, socket, c.describeRoots())
}

// explain names socket in an error of the root's Walk or Dial and marks a
// rejection with ErrNotAllowed.
func explain(socket string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fspath.ErrRejected):
		return fmt.Errorf("%w: %q: %w", ErrNotAllowed, socket, err)
	default:
		return fmt.Errorf("socket %q: %w", socket, err)
	}
}

func (c *Checker) describeRoots() string {
	names := make([]string, 0, len(c.roots))
	for _, r := range c.roots {
		names = append(names, r.Dir()+"/")
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
