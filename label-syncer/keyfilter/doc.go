// SPDX-License-Identifier: Apache-2.0

// Package keyfilter parses and matches the key lists of the label syncer's
// --additional-launcher-labels-sync and --additional-launcher-annotations-sync
// flags.
//
// A list is comma separated. Each entry is either a full label/annotation key
// ("ops.example.com/owner") or a prefix ending in "*" ("ops.example.com/*").
// Parsing rejects, naming the entry and saying why: an empty entry, a bare
// "*", a "*" anywhere but at the end, an entry that is not a valid key or the
// start of one, and any entry that could match a key in an owned domain.
//
// Owned domains (OwnedDomains) are those whose keys cluster components set
// and act on: kubevirt.io, kubernetes.io and k8s.io, each with its
// subdomains. Syncing such keys would let a VM owner rewrite labels KubeVirt
// and Kubernetes rely on, such as kubevirt.io/created-by, which is how the
// syncer finds the launcher Pod in the first place. Inside them,
// app.kubernetes.io (Kubernetes' recommended labels) belongs to users and is
// admitted (UserDomains). An administrator who knows better admits more with
// a Guard (the --allow-owned-domains flag). The syncer's own bookkeeping
// domain, labelsync.kubevirt-plugins.io, is refused whatever the Guard says.
//
// The descheduler's eviction annotations (DeschedulerAnnotations) are not
// entries: the syncer adds them with Filter.WithBuiltin, as virt-controller
// syncs them without configuration.
//
// The package is pure: no I/O, no state beyond the parsed Guard and Filter.
package keyfilter
