// SPDX-License-Identifier: Apache-2.0

// Package launcher holds the integration tests of launcher-runtime against
// real components: libvirtd in containers (tests/framework/libvirtd), the
// hook pipeline running in the test process as virt-launcher would run it,
// the libvirt adapter (launcher-runtime/domainrun), and the sample sidecars
// built from sample-sidecars and run as host processes on a temporary
// sockets directory standing in for /var/run/kubevirt-plugin.
package launcher
