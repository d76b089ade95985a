// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
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
	inUse := false
	err = withSockaddrName(path, func(name string) error {
		c, err := net.DialTimeout("unix", name, time.Second)
		if err == nil {
			inUse = true
			_ = c.Close()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if inUse {
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
	var l *net.UnixListener
	err := withSockaddrName(path, func(name string) error {
		var err error
		l, err = net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err == nil && name != path {
			// The name bound is valid only while the directory's
			// descriptor is open: the socket is removed by its path.
			l.SetUnlinkOnClose(false)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, socketFilePerm); err != nil {
		_ = l.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("set mode of %s: %w", path, err)
	}
	return l, nil
}

// maxSockaddrPath is the longest path Go's syscall package puts in a
// sockaddr_un: it keeps one of sun_path's 108 bytes for a terminating NUL,
// while admission (socketpath.CheckShape) accepts paths of 108 bytes, which
// Linux binds and connects without one.
const maxSockaddrPath = v1alpha1.MaxSocketPathLength - 1

// withSockaddrName calls f with a name of the socket at path that fits in
// the sockaddr Go builds: path itself when it does, else
// /proc/self/fd/<fd>/<name> through a descriptor of its directory held open
// for the call, which Linux resolves to the same directory. So every path
// admission accepts can be served and probed.
func withSockaddrName(path string, f func(name string) error) error {
	if len(path) <= maxSockaddrPath {
		return f(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	defer func() { _ = dir.Close() }()
	return f("/proc/self/fd/" + strconv.FormatUint(uint64(dir.Fd()), 10) + "/" + filepath.Base(path))
}
