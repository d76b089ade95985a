package sockets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

// ErrRejected marks a socket path that must not be dialed: outside the
// plugin's directory, through a symlink, or not a socket. Waiting does not
// help; the caller fails or ignores the hook at once.
var ErrRejected = errors.New("socket path rejected")

// Root is the directory that holds one subdirectory per plugin. It stands in
// for pluginv1alpha1.SocketsRoot: the declared socketPath
// /var/run/kubevirt-plugin/<plugin>/x.sock lives at <Root>/<plugin>/x.sock.
type Root struct {
	dir string

	mu       sync.Mutex
	resolved string
}

// NewRoot returns the sockets root at dir. The directory is resolved with
// filepath.EvalSymlinks the first time it exists, and that resolution is
// kept: on many images /var/run is a link to /run, which is trusted, while
// links below the root are not.
func NewRoot(dir string) *Root {
	return &Root{dir: filepath.Clean(dir)}
}

// Dir is the root as configured.
func (r *Root) Dir() string { return r.dir }

func (r *Root) resolve() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resolved != "" {
		return r.resolved, nil
	}
	dir, err := filepath.EvalSymlinks(r.dir)
	if err != nil {
		return "", fmt.Errorf("resolving sockets root %s: %w", r.dir, err)
	}
	r.resolved = dir
	return dir, nil
}

// relative returns the components of socketPath below the declared sockets
// root, the first of which is the plugin's name. It applies the admission
// rules again, so that a path that somehow got past admission is not dialed.
func relative(pluginName, socketPath string) ([]string, error) {
	if err := validation.SocketPath(pluginName, socketPath); err != nil {
		return nil, fmt.Errorf("%w: socketPath %s %w", ErrRejected, socketPath, err)
	}
	parts := strings.Split(strings.TrimPrefix(socketPath, pluginv1alpha1.SocketsRoot+"/"), "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%w: %s has an empty, . or .. component", ErrRejected, socketPath)
		}
	}
	return parts, nil
}

// Check returns the path to dial for a plugin's declared socketPath, after
// verifying with Lstat that every component below the root exists, that
// none is a symlink and that the last one is a socket. An error wrapping
// fs.ErrNotExist means the socket is not there yet; one wrapping
// ErrRejected means it must not be used.
func (r *Root) Check(pluginName, socketPath string) (string, error) {
	parts, err := relative(pluginName, socketPath)
	if err != nil {
		return "", err
	}
	root, err := r.resolve()
	if err != nil {
		return "", err
	}
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			return "", fmt.Errorf("%w: %w", ErrRejected, err)
		}
		last := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", fmt.Errorf("%w: %s is a symlink; symlinks are not allowed below the sockets root %s", ErrRejected, cur, r.dir)
		case !last && !fi.IsDir():
			return "", fmt.Errorf("%w: %s is not a directory", ErrRejected, cur)
		case last && fi.Mode()&fs.ModeSocket == 0:
			return "", fmt.Errorf("%w: %s is not a socket (mode %s)", ErrRejected, cur, fi.Mode())
		}
	}
	return cur, nil
}
