// SPDX-License-Identifier: Apache-2.0

// Package cloudinitnetwork is a PreBoot handler that writes a cloud-init
// network-config, built from the launcher Pod's
// k8s.v1.cni.cncf.io/network-status annotation, into the VM's NoCloud ISO.
//
// Secondary (Multus) networks get their IP addresses from IPAM at the Pod
// level; the guest does not learn them by itself. For every Multus network
// of the VMI found in the network status, the handler adds an ethernets
// entry keyed by the VMI network name, matched by MAC address, with the
// addresses, the default route when the network is the default one, and
// DNS. Entries already in the ISO's network-config (the VMI's networkData)
// are kept, except ones with the same keys, which are replaced.
//
// The ISO is rebuilt with the same volume label and files, and replaced
// atomically. When the network-config would not change, the ISO is not
// touched, so the hook is idempotent.
package cloudinitnetwork
