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
	"strings"
	"syscall"
)

// Attempts is how many times Retry starts a process at most.
const Attempts = 5

// Retry calls start with n distinct ports of 127.0.0.1 that nothing
// listened on a moment before. While start returns an error wrapping
// syscall.EADDRINUSE (InUse makes one from a process's output), it calls
// start again with fresh ports, Attempts times in all; it returns start's
// last error. start must wait until the process has bound all its ports,
// so that a port taken later cannot fail it once it counts as started.
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
