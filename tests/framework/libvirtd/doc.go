// SPDX-License-Identifier: Apache-2.0

// Package libvirtd starts libvirtd in Docker containers for integration
// tests, through testcontainers-go, from the locally built image
// (hack/build-libvirtd-image.sh; never pulled). Each container runs an init as
// PID 1 so that exited QEMU processes are reaped, listens for plain TCP
// connections, and is reached from the host at qemu+tcp://<container IP>/system.
// Containers on a network made by NewNetwork reach each other by alias, which
// is what peer-to-peer live migration needs.
//
// The package links libvirt.org/go/libvirt (cgo, libvirt-dev) for the host
// side connection. Every T helper registers the cleanup of what it started.
package libvirtd
