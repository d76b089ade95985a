// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// sharedFixture returns the path of a file in the shared fixtures folder that
// sits next to the repository root (or $KVP_SHARED_FIXTURES), skipping the
// test when it is absent.
func sharedFixture(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skipf("shared fixture %s: repository root (go.work) not found above the package", name)
		}
		dir = parent
	}
	shared := os.Getenv("KVP_SHARED_FIXTURES")
	if shared == "" {
		shared = filepath.Join(dir, "..", "shared", "fixtures")
	}
	path := filepath.Join(shared, name)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("shared fixture %s absent (%v): it lives in ../shared/fixtures next to the repository", name, err)
	}
	return path
}

func loadVMI(tb testing.TB, path string) *kubevirtv1.VirtualMachineInstance {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(vmi); err != nil {
		tb.Fatalf("decoding %s: %v", path, err)
	}
	return vmi
}

func loadDomain(tb testing.TB, path string) *libvirtxml.Domain {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		tb.Fatalf("parsing %s: %v", path, err)
	}
	return d
}

func marshalDomain(tb testing.TB, d *libvirtxml.Domain) string {
	tb.Helper()
	s, err := d.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// leafChecks returns one CEL comparison per non-zero leaf of v, read through
// path with Go field names: `vmi.Spec.Domain.CPU.Cores == 4u`,
// `vmi.Labels["a"] == "b"`, `size(vmi.Spec.Volumes) == 2`, ... Evaluated
// against the value they were generated from, all must hold.
func leafChecks(path string, v reflect.Value) []string {
	t := v.Type()
	if lit, ok := scalarLiteral(v); ok {
		if v.IsZero() {
			return nil
		}
		return []string{path + " == " + lit}
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return leafChecks(path, v.Elem())
	case reflect.Struct:
		var out []string
		for i := range t.NumField() {
			f := t.Field(i)
			if _, visible := celTypeOf(f.Type); !f.IsExported() || !visible {
				continue
			}
			out = append(out, leafChecks(path+"."+f.Name, v.Field(i))...)
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return nil
		}
		out := []string{fmt.Sprintf("size(%s) == %d", path, v.Len())}
		for i := range v.Len() {
			out = append(out, leafChecks(fmt.Sprintf("%s[%d]", path, i), v.Index(i))...)
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		out := []string{fmt.Sprintf("size(%s) == %d", path, v.Len())}
		for _, k := range sortedKeys(v) {
			out = append(out, leafChecks(fmt.Sprintf("%s[%s]", path, strconv.Quote(k.String())), v.MapIndex(k))...)
		}
		return out
	}
	panic(fmt.Sprintf("leafChecks: unexpected %s at %s", t, path))
}

// domainLiteral writes v as a CEL expression of type t: a struct literal with
// libvirtxml type names for structs, and for each leaf either a constant
// (read == false) or the path it is read from (read == true).
func domainLiteral(path string, v reflect.Value, read bool) string {
	t := v.Type()
	if lit, ok := scalarLiteral(v); ok {
		if read {
			return path
		}
		return lit
	}
	switch t.Kind() {
	case reflect.Pointer:
		return domainLiteral(path, v.Elem(), read)
	case reflect.Struct:
		name := celTypeName(t)
		name = strings.TrimPrefix(name, "libvirtxml.")
		var fields []string
		for i := range t.NumField() {
			f := t.Field(i)
			fv := v.Field(i)
			if _, visible := celTypeOf(f.Type); !f.IsExported() || !visible || fv.IsZero() {
				continue
			}
			fields = append(fields, f.Name+": "+domainLiteral(path+"."+f.Name, fv, read))
		}
		return name + "{" + strings.Join(fields, ", ") + "}"
	case reflect.Slice, reflect.Array:
		elems := make([]string, v.Len())
		for i := range v.Len() {
			elems[i] = domainLiteral(fmt.Sprintf("%s[%d]", path, i), v.Index(i), read)
		}
		return "[" + strings.Join(elems, ", ") + "]"
	case reflect.Map:
		var entries []string
		for _, k := range sortedKeys(v) {
			entries = append(entries, strconv.Quote(k.String())+": "+
				domainLiteral(fmt.Sprintf("%s[%s]", path, strconv.Quote(k.String())), v.MapIndex(k), read))
		}
		return "{" + strings.Join(entries, ", ") + "}"
	}
	panic(fmt.Sprintf("domainLiteral: unexpected %s at %s", t, path))
}

// scalarLiteral writes a value CEL sees as a scalar as a CEL constant.
func scalarLiteral(v reflect.Value) (string, bool) {
	switch v.Type() {
	case quantityType:
		q := v.Interface().(resource.Quantity)
		return strconv.Quote(q.String()), true
	case metaTimeType:
		return fmt.Sprintf("timestamp(%q)", v.Interface().(metav1.Time).UTC().Format(time.RFC3339Nano)), true
	case reflect.TypeFor[xml.Name]():
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String()), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10) + "u", true
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	case reflect.Pointer:
		if !v.IsNil() && v.Elem().Kind() != reflect.Struct {
			return scalarLiteral(v.Elem())
		}
	}
	return "", false
}

func sortedKeys(m reflect.Value) []reflect.Value {
	keys := m.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

func reflectValue(v any) reflect.Value { return reflect.ValueOf(v) }
