// SPDX-License-Identifier: Apache-2.0

package domainpath

import (
	"fmt"
	"reflect"
	"strings"

	"libvirt.org/go/libvirtxml"
)

// Changed lists the paths where after differs from before, in field order.
// The leaves are followed down: a field that differs is named, not the
// struct holding it; an element added or removed where the other side has
// none, with nothing set below it, is named itself. List elements are
// compared by index, and an element only one side has is one path. Parts
// the two domains share (the same pointer, list or map) are not walked, so
// comparing a domain with a copy-on-write edit of it costs the edit.
func Changed(before, after *libvirtxml.Domain) []string {
	var out []string
	changed(reflect.ValueOf(before), reflect.ValueOf(after), "", &out)
	return out
}

func changed(a, b reflect.Value, path string, out *[]string) {
	switch a.Kind() {
	case reflect.Pointer:
		if a.Pointer() == b.Pointer() {
			return
		}
		if a.IsNil() || b.IsNil() {
			// Compare with an empty element, and name the element itself
			// when nothing below it is set.
			n := len(*out)
			zero := reflect.Zero(a.Type().Elem())
			if a.IsNil() {
				changed(zero, b.Elem(), path, out)
			} else {
				changed(a.Elem(), zero, path, out)
			}
			if len(*out) == n {
				*out = append(*out, path)
			}
			return
		}
		changed(a.Elem(), b.Elem(), path, out)
	case reflect.Struct:
		t := a.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			changed(a.Field(i), b.Field(i), join(path, f.Name), out)
		}
	case reflect.Slice:
		if a.Len() == b.Len() && (a.Len() == 0 || a.Pointer() == b.Pointer()) {
			return
		}
		for i := range max(a.Len(), b.Len()) {
			elem := fmt.Sprintf("%s[%d]", path, i)
			if i >= a.Len() || i >= b.Len() {
				*out = append(*out, elem)
				continue
			}
			changed(a.Index(i), b.Index(i), elem, out)
		}
	case reflect.Map, reflect.Interface, reflect.Array:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, path)
		}
	default:
		if !a.Equal(b) {
			*out = append(*out, path)
		}
	}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// Overlap reports whether two paths name the same part of the domain or
// one holds the other ("CPU" holds "CPU.Mode", "Devices.Disks" holds
// "Devices.Disks[1].Driver"). The empty path, the whole domain, overlaps
// every path.
func Overlap(p, q string) bool {
	if len(p) > len(q) {
		p, q = q, p
	}
	if p == "" || p == q {
		return true
	}
	return strings.HasPrefix(q, p) && (q[len(p)] == '.' || q[len(p)] == '[')
}
