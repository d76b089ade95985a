// SPDX-License-Identifier: Apache-2.0

package sockets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
	"github.com/kubevirt-plugins/framework/api/socketpath"
)

// ErrRejected marks a socket path that must not be dialed: outside the
// plugin's directory, through a symlink, or not a socket. Waiting does not
// help; the caller fails or ignores the hook at once.
var ErrRejected = socketpath.ErrRejected

// ErrNotListening marks a socket file that exists while nothing accepts
// connections on it: the sidecar has not started listening yet, or it is
// restarting and its old socket file is left in the shared volume.
var ErrNotListening = errors.New("socket exists but nothing listens on it")

// Root is the directory that holds one subdirectory per plugin. It stands in
// for pluginv1alpha1.SocketsRoot: the declared socketPath
// /var/run/kubevirt-plugin/<plugin>/x.sock lives at <Root>/<plugin>/x.sock.
type Root struct {
	fs *socketpath.Root
}

// NewRoot returns the sockets root at dir. The directory is resolved with
// filepath.EvalSymlinks the first time it exists, and that resolution is
// kept: on many images /var/run is a link to /run, which is trusted, while
// links below the root are not.
func NewRoot(dir string) *Root {
	return &Root{fs: socketpath.NewRoot(dir)}
}

// relative returns the components of socketPath below the declared sockets
// root, the first of which is the plugin's name. It applies the admission
// rules again (validation.SocketPath, whose shape rule leaves no empty, "."
// or ".." component), so that a path that somehow got past admission is
// not dialed.
func relative(pluginName, socketPath string) ([]string, error) {
	if err := validation.SocketPath(pluginName, socketPath); err != nil {
		return nil, fmt.Errorf("%w: socketPath %s %w", ErrRejected, socketPath, err)
	}
	return strings.Split(strings.TrimPrefix(socketPath, pluginv1alpha1.SocketsRoot+"/"), "/"), nil
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
	return r.fs.Walk(parts)
}

// Probe reports whether a plugin's declared socketPath is ready: it
// connects to it through the checked dial (socketpath.Root.Dial) and closes
// the connection. A socket is ready when a connection succeeds; a missing
// component gives an error wrapping fs.ErrNotExist, a socket file nobody
// listens on one wrapping ErrNotListening, and a path that must not be
// dialed one wrapping ErrRejected.
func (r *Root) Probe(ctx context.Context, pluginName, socketPath string) error {
	parts, err := relative(pluginName, socketPath)
	if err != nil {
		return err
	}
	conn, err := r.fs.Dial(ctx, parts)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w: %w", ErrNotListening, err)
		}
		return err
	}
	return conn.Close()
}
