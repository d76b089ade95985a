// Package deepcopy copies plain Go data (structs, pointers, slices, maps,
// strings and numbers) such as libvirtxml's domain types, which have no
// generated DeepCopy. A copy shares no memory with its source.
package deepcopy
