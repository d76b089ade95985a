// SPDX-License-Identifier: Apache-2.0

// Package standin holds what the stand-ins of virt-handler and
// virt-launcher share on the real-cluster test (tests/cluster): the
// virt-launcher command socket's requests and answers.
//
// The stand-ins are not KubeVirt. They show the framework's libraries in
// the processes KubeVirt links them into, on a kubelet: the virt-handler
// stand-in (a DaemonSet on every node) keeps the Plugin store, dispatches
// the node hooks and hands each launcher its plugins; the virt-launcher
// stand-in (the compute container of a launcher Pod, next to libvirtd)
// runs GuestDefinition, PreBoot and PreMigrationSource through
// launcher-runtime and defines, starts and migrates the domain. As in
// KubeVirt, virt-handler reaches a launcher through a Unix socket in the
// Pod's "sockets" emptyDir, found under the kubelet's Pod directory on the
// node.
package standin
