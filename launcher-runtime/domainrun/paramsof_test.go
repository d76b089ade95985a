// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"libvirt.org/go/libvirt"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

func TestParamsOfShowsHooksEveryParameterTheHostWouldSend(t *testing.T) {
	in := everyBindingParam()
	// Every parameter of the binding is set in the fixture: a parameter a
	// newer binding adds, and ParamsOf misses, fails here.
	v := reflect.ValueOf(in).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if strings.HasSuffix(f.Name, "Set") && !v.Field(i).Bool() {
			t.Fatalf("fixture leaves %s false", f.Name)
		}
	}
	got := ParamsOf(in)
	if want := everyParam(); !proto.Equal(got, want) {
		t.Fatalf("ParamsOf:\n got %v\nwant %v", got, want)
	}
	back, err := MigrateParameters(got, libvirt12_5)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("MigrateParameters(ParamsOf(p)) differs from p:\n got %+v\nwant %+v", back, in)
	}
}

func TestParamsOfLeavesUnsetParametersOut(t *testing.T) {
	// A value without its Set flag is not sent by the binding, so hooks do
	// not see it either.
	in := &libvirt.DomainMigrateParameters{URI: "tcp://ignored", Bandwidth: 5, ParallelConnections: 3, MigrateDisks: []string{"vda"}, Compression: "mt"}
	for name, p := range map[string]*libvirt.DomainMigrateParameters{"nil": nil, "values without Set": in} {
		if got := ParamsOf(p); !proto.Equal(got, &hooksv1alpha1.MigrationParams{}) {
			t.Fatalf("%s: got %v, want no parameter", name, got)
		}
	}
}
