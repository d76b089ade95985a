package socketpath

import (
	"errors"
	"fmt"
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
// path to dial exceeds MaxLength.
func (c *Checker) Check(socket string) (string, error) {
	if !filepath.IsAbs(socket) || filepath.Clean(socket) != socket {
		return "", fmt.Errorf("%w: %q must be an absolute path without '..', repeated or trailing '/'", ErrNotAllowed, socket)
	}
	for _, r := range c.roots {
		rel, ok := below(r.Dir(), socket)
		if !ok {
			continue
		}
		base, err := r.Resolve()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNotAllowed, err)
		}
		if dial := filepath.Join(base, rel); len(dial) > MaxLength {
			return "", fmt.Errorf("%w: %q resolves to %q, longer than %d bytes", ErrNotAllowed, socket, dial, MaxLength)
		}
		dial, err := r.Walk(strings.Split(rel, "/"))
		switch {
		case errors.Is(err, fspath.ErrRejected):
			return "", fmt.Errorf("%w: %q: %w", ErrNotAllowed, socket, err)
		case err != nil:
			return "", fmt.Errorf("socket %q: %w", socket, err)
		}
		return dial, nil
	}
	return "", fmt.Errorf("%w: %q is not under an allowed root (%s)", ErrNotAllowed, socket, c.describeRoots())
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
