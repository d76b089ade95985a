// SPDX-License-Identifier: Apache-2.0

// Package ports hands processes under test TCP ports of 127.0.0.1. A port
// is known to be free only while something holds it: once the finder lets
// it go, anyone (kube-apiserver, a container, another test package's
// process) may bind it before the process it was meant for, which then
// fails to start. Retry starts that process again on fresh ports.
//
// Use it where the process cannot bind port 0 and report the port it got:
// controller-runtime's webhook server, for one, takes a fixed port.
package ports

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Attempts is how many times Retry starts a process at most.
const Attempts = 5

// Retry calls start with n distinct ports of 127.0.0.1 that nothing
// listened on a moment before. While start returns an error wrapping
// syscall.EADDRINUSE (InUse makes one from a process's output), it calls
// start again with fresh ports, Attempts times in all; it returns start's
// last error. start must wait until the process has bound all its ports
// (Bound tells), so that a port taken later cannot fail it once it
// counts as started, nor a process already listening there pass for it.
func Retry(n int, start func(ports []int) error) error {
	var err error
	for range Attempts {
		var p []int
		if p, err = free(n); err != nil {
			return err
		}
		if err = start(p); !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
	}
	return fmt.Errorf("%d starts, each on fresh ports: %w", Attempts, err)
}

// free returns n ports the kernel had free, all held at once so that they
// differ.
func free(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// InUse returns err, wrapping syscall.EADDRINUSE too when output, what a
// process that did not start wrote, says it could not bind an address: a
// process reports the kernel's error only in its log.
func InUse(err error, output string) error {
	if err == nil || !strings.Contains(output, syscall.EADDRINUSE.Error()) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, syscall.EADDRINUSE)
}

// Bound returns nil once the process pid listens on every one of ports
// itself, or else names one it does not listen on yet. A port that
// answers could be somebody else's.
func Bound(pid int, ports ...int) error {
	own, err := listening(pid)
	if err != nil {
		return err
	}
	for _, p := range ports {
		if !own[p] {
			return fmt.Errorf("process %d does not listen on port %d yet", pid, p)
		}
	}
	return nil
}

// listening returns the TCP ports the process pid listens on: those of the
// listening sockets in its network namespace (/proc/<pid>/net/tcp and
// tcp6) that are among its file descriptors.
func listening(pid int) (map[int]bool, error) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return nil, err
	}
	sockets := map[string]bool{}
	for _, fd := range fds {
		// A descriptor closed since ReadDir has no link: not a listener.
		link, _ := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			sockets[strings.TrimSuffix(inode, "]")] = true
		}
	}
	out := map[int]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(proc, "net", table))
		if err != nil {
			return nil, err
		}
		// sl local_address rem_address st ... inode: a listener has st 0A.
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !sockets[f[9]] {
				continue
			}
			_, hex, _ := strings.Cut(f[1], ":")
			if port, err := strconv.ParseUint(hex, 16, 16); err == nil {
				out[int(port)] = true
			}
		}
	}
	return out, nil
}
