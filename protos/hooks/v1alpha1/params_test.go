// SPDX-License-Identifier: Apache-2.0

package hooksv1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestEveryMigrationParamHasALibvirtName(t *testing.T) {
	fields := (&MigrationParams{}).ProtoReflect().Descriptor().Fields()
	seen := map[string]bool{}
	for i := 0; i < fields.Len(); i++ {
		name := LibvirtParamName(fields.Get(i))
		if name == "" {
			t.Errorf("field %s has no libvirt name", fields.Get(i).Name())
		}
		if seen[name] {
			t.Errorf("libvirt name %q used twice", name)
		}
		seen[name] = true
	}
	// Every name of the table belongs to a field: the table has no entry
	// the message lacks.
	if names := LibvirtParamNames(); len(names) != fields.Len() {
		t.Errorf("the table names %d libvirt parameters, MigrationParams has %d fields", len(names), fields.Len())
	}
}

func TestParamsRoundTripThroughLibvirtNames(t *testing.T) {
	in := `{"migrate_uri": "tcp://peer", "parallel.connections": 4, "bandwidth": 18446744073709551615,
		"compression": ["xbzrle", "mt"], "tls.destination": "peer.example", "compression.mt.level": -1}`
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(in))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	p, err := ParamsFromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.GetParallelConnections().GetValue() != 4 || p.GetMigrateUri().GetValue() != "tcp://peer" ||
		p.GetTlsDestination().GetValue() != "peer.example" || p.GetCompressionMtLevel().GetValue() != -1 {
		t.Fatalf("decoded %v", p)
	}
	back, err := ParamsFromMap(ParamsToMap(p))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(p, back) {
		t.Fatalf("round trip changed the parameters:\n%v\n%v", p, back)
	}
	if got := p.GetBandwidth().GetValue(); got != 1<<64-1 {
		t.Errorf("bandwidth %d, want the largest uint64 read exactly", got)
	}
	if got := ParamsToMap(p)["compression"]; !reflect.DeepEqual(got, []string{"xbzrle", "mt"}) {
		t.Errorf("compression %v", got)
	}
}

func TestParamsToMapLeavesOutRemovals(t *testing.T) {
	p := &MigrationParams{MigrateUri: &StringParam{}, Bandwidth: &Uint64Param{}}
	if m := ParamsToMap(p); len(m) != 0 {
		t.Errorf("a wrapper without a value is a removal, not a value: %v", m)
	}
}

func TestParamsFromMapNamesTheBadParameter(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]any
		want string
	}{
		{"unknown name", map[string]any{"parallel.connexions": 2.0}, `unknown migration parameter "parallel.connexions"`},
		{"string for a number", map[string]any{"bandwidth": "fast"}, `"bandwidth": want a number`},
		{"fraction", map[string]any{"parallel.connections": 2.5}, `"parallel.connections": want an integer`},
		{"int out of range", map[string]any{"disks_port": 1e10}, `"disks_port"`},
		{"negative unsigned", map[string]any{"bandwidth": -1.0}, `"bandwidth": -1 is out of range`},
		{"float beyond exact range", map[string]any{"bandwidth": 1e19}, `too large to have been read exactly`},
		{"json number beyond uint64", map[string]any{"bandwidth": json.Number("18446744073709551616")}, `out of range`},
		{"number in a list", map[string]any{"migrate_disks": []any{"vda", 3.0}}, `"migrate_disks": element 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParamsFromMap(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}
