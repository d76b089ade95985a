// Package keyedlock provides mutual exclusion per key, holding memory only
// for keys that are locked or waited for. The dispatcher uses it to keep
// the node hooks of one VMI and hook point sequential even when the host
// dispatches the same event twice at once, while other VMIs proceed.
package keyedlock
