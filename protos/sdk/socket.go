// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubevirt-plugins/framework/api/socketpath"
)

// LauncherSocketPath returns the socket path a sidecar of pluginName serves
// on: <root>/<pluginName>/<socketName>. It checks the name (a DNS-1123
// subdomain, as Kubernetes requires of a Plugin's name) and the path
// rules virt-launcher enforces (ends with .sock, and socketpath.CheckShape:
// at most 108 bytes, no "..", no "." component, no repeated or trailing "/").
func LauncherSocketPath(root, pluginName, socketName string) (string, error) {
	// The rule admission applies to a Plugin's metadata.name.
	if msgs := k8svalidation.IsDNS1123Subdomain(pluginName); len(msgs) > 0 {
		return "", fmt.Errorf("plugin name %q is not a valid object name: %s", pluginName, strings.Join(msgs, "; "))
	}
	if socketName == "" || strings.Contains(socketName, "/") || !strings.HasSuffix(socketName, ".sock") {
		return "", fmt.Errorf("plugin %s: socket name %q must be a file name ending with .sock", pluginName, socketName)
	}
	p := strings.TrimSuffix(root, "/") + "/" + pluginName + "/" + socketName
	if err := checkSocketPath(p); err != nil {
		return "", fmt.Errorf("plugin %s: %w", pluginName, err)
	}
	return p, nil
}

// checkSocketPath applies the rules virt-launcher and virt-handler dial
// with: a name ending with .sock and the shape of socketpath.CheckShape.
func checkSocketPath(p string) error {
	if !strings.HasSuffix(p, ".sock") {
		return fmt.Errorf("socket path %q does not end with .sock", p)
	}
	if err := socketpath.CheckShape(p); err != nil {
		return fmt.Errorf("socket path %q %w", p, err)
	}
	return nil
}

// ensureDir creates dir with mode 0750 when it does not exist. An existing
// directory is used as it is (in a Pod it is the subPath mount, owned by
// the kubelet); a symlink is refused because virt-launcher refuses to dial
// through one.
func ensureDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, pluginDirPerm); err != nil {
			return fmt.Errorf("create socket directory: %w", err)
		}
		// MkdirAll is subject to the umask; the mode is part of the contract.
		if err := os.Chmod(dir, pluginDirPerm); err != nil {
			return fmt.Errorf("set mode of socket directory: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("socket directory: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("socket directory %s is a symlink", dir)
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	return nil
}

// removeStaleSocket removes a socket left behind by an earlier process. A
// socket somebody still answers on, or a file that is not a socket, is an
// error rather than something to delete.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("socket %s is in use by another server", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// listenUnix prepares the directory, removes a stale socket and listens,
// leaving the socket with mode 0660.
func listenUnix(path string) (*net.UnixListener, error) {
	if err := ensureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, socketFilePerm); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("set mode of %s: %w", path, err)
	}
	return l, nil
}
