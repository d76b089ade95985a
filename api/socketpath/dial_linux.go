// SPDX-License-Identifier: Apache-2.0

//go:build linux

package socketpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Dial connects to the Unix socket at components below the root, with no
// window between checking a component and using it: the checked dial
// described in the package documentation. Errors are those of Walk:
// fs.ErrNotExist while a component is missing, ErrRejected for a path that
// must not be dialed.
func (r *Root) Dial(ctx context.Context, components []string) (net.Conn, error) {
	if len(components) == 0 {
		return nil, errNoComponents
	}
	cur, err := r.Resolve()
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(cur, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening socket root %s: %w", cur, err)
	}
	defer func() { _ = unix.Close(fd) }()
	for i, part := range components {
		cur = filepath.Join(cur, part)
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			perr := &fs.PathError{Op: "open", Path: cur, Err: err}
			if errors.Is(err, unix.ENOENT) {
				return nil, perr
			}
			return nil, fmt.Errorf("%w: %w", ErrRejected, perr)
		}
		_ = unix.Close(fd)
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRejected, &fs.PathError{Op: "fstat", Path: cur, Err: err})
		}
		if err := r.check(cur, fileType(st.Mode), i == len(components)-1); err != nil {
			return nil, err
		}
	}
	if beforeConnect != nil {
		beforeConnect()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		// Name the socket, not the descriptor it was reached through.
		if op, ok := errors.AsType[*net.OpError](err); ok {
			err = op.Err
		}
		return nil, fmt.Errorf("connect to %s: %w", cur, err)
	}
	return conn, nil
}

// beforeConnect, when set by a test, runs between the last check and
// connect(2): where a swap would have to happen to redirect the dial.
var beforeConnect func()

// fileType maps the S_IFMT bits of a stat mode to the fs.FileMode type
// bits check looks at.
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFREG:
		return 0
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
