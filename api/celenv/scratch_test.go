package celenv

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

func TestScratchCollisions(t *testing.T) {
	seen := map[string]map[reflect.Type]bool{}
	var walk func(reflect.Type)
	visited := map[reflect.Type]bool{}
	walk = func(rt reflect.Type) {
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(rt.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if visited[rt] {
			return
		}
		visited[rt] = true
		p := strings.Split(rt.PkgPath(), "/")
		name := p[len(p)-1] + "." + rt.Name()
		if seen[name] == nil {
			seen[name] = map[reflect.Type]bool{}
		}
		seen[name][rt] = true
		for i := 0; i < rt.NumField(); i++ {
			walk(rt.Field(i).Type)
		}
	}
	walk(reflect.TypeOf(kubevirtv1.VirtualMachineInstance{}))
	walk(reflect.TypeOf(libvirtxml.Domain{}))
	n := 0
	ifaces := map[string]bool{}
	for name, ts := range seen {
		n++
		if len(ts) > 1 {
			for rt := range ts {
				fmt.Println("COLLISION", name, rt.PkgPath())
			}
		}
		if strings.HasSuffix(name, ".") {
			fmt.Println("ANON", name)
		}
	}
	for rt := range visited {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Type.Kind() == reflect.Interface && f.IsExported() {
				ifaces[rt.String()+"."+f.Name] = true
			}
		}
	}
	fmt.Println("types", n, "ifaces", ifaces)
}
