// Package keyfilter parses and matches the key lists of the label syncer's
// --additional-launcher-labels-sync and --additional-launcher-annotations-sync
// flags.
//
// A list is comma separated. Each entry is either a full label/annotation key
// ("ops.example.com/owner") or a prefix ending in "*" ("ops.example.com/*").
// Parsing rejects, naming the entry: an empty entry, a bare "*", a "*"
// anywhere but at the end, an entry that is not a valid key or the start of
// one, and any entry that could match a key in a reserved domain (kubevirt.io,
// kubernetes.io, k8s.io, the syncer's own labelsync.kubevirt-plugins.io, and
// all their subdomains). Syncing such keys would let a VM owner rewrite labels
// KubeVirt and Kubernetes rely on, such as kubevirt.io/created-by, which is
// how the syncer finds the launcher Pod in the first place.
//
// The package is pure: no I/O, no state beyond the parsed Filter.
package keyfilter
