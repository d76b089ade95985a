// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

var libvirtFlagValues = map[string]uint64{
	"LIVE": 1, "PEER2PEER": 2, "TUNNELLED": 4, "PERSIST_DEST": 8, "UNDEFINE_SOURCE": 16,
	"PAUSED": 32, "NON_SHARED_DISK": 64, "NON_SHARED_INC": 128, "CHANGE_PROTECTION": 256,
	"UNSAFE": 512, "OFFLINE": 1024, "COMPRESSED": 2048, "ABORT_ON_ERROR": 4096,
	"AUTO_CONVERGE": 8192, "RDMA_PIN_ALL": 16384, "POSTCOPY": 32768, "TLS": 65536,
	"PARALLEL": 131072, "NON_SHARED_SYNCHRONOUS_WRITES": 262144, "POSTCOPY_RESUME": 524288,
	"ZEROCOPY": 1048576,
}

func TestMigrationFlagValuesMatchLibvirt(t *testing.T) {
	for name, want := range libvirtFlagValues {
		f, ok := sdk.ParseMigrationFlag("VIR_MIGRATE_" + name)
		if !ok || uint64(f) != want {
			t.Errorf("VIR_MIGRATE_%s = %d (known %v), want %d", name, f, ok, want)
		}
	}
	// Where libvirt's header is installed, compare against it as well.
	const header = "/usr/include/libvirt/libvirt-domain.h"
	fh, err := os.Open(header)
	if err != nil {
		t.Logf("%s not readable (%v): compared against the built-in table only", header, err)
		return
	}
	defer fh.Close()
	re := regexp.MustCompile(`^\s*VIR_MIGRATE_([A-Z0-9_]+)\s*=\s*\(1 << (\d+)\)`)
	sc := bufio.NewScanner(fh)
	seen := 0
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		shift, _ := strconv.Atoi(m[2])
		seen++
		f, ok := sdk.ParseMigrationFlag(m[1])
		if !ok || uint64(f) != 1<<shift {
			t.Errorf("%s: VIR_MIGRATE_%s = 1<<%d, SDK has %d (known %v)", header, m[1], shift, f, ok)
		}
	}
	if seen < 21 {
		t.Errorf("%s: found %d VIR_MIGRATE_* flags, want at least 21", header, seen)
	}
}

func TestMigrationFlagsString(t *testing.T) {
	f := sdk.MigrateLive | sdk.MigratePeer2Peer | sdk.MigrationFlags(1<<40)
	if got := f.String(); got != "LIVE|PEER2PEER|0x10000000000" {
		t.Fatalf("String() = %q", got)
	}
	if !f.Has(sdk.MigrateLive|sdk.MigratePeer2Peer) || f.Has(sdk.MigrateTLS) {
		t.Fatal("Has")
	}
	if f.Without(sdk.MigrateLive).Has(sdk.MigrateLive) || !f.With(sdk.MigrateTLS).Has(sdk.MigrateTLS) {
		t.Fatal("With/Without")
	}
}

func TestMigrationParamsReadByLibvirtName(t *testing.T) {
	uri, bw, conns := "tcp://10.0.0.2", uint64(64), int32(3)
	p := sdk.NewMigrationParams(&hooksv1alpha1.MigrationParams{
		MigrateUri:          &hooksv1alpha1.StringParam{Value: &uri},
		Bandwidth:           &hooksv1alpha1.Uint64Param{Value: &bw},
		ParallelConnections: &hooksv1alpha1.IntParam{Value: &conns},
		Compression:         &hooksv1alpha1.StringListParam{Values: []string{"xbzrle"}},
	})
	if v, ok := p.String(sdk.ParamMigrateURI); !ok || v != uri {
		t.Errorf("migrate_uri = %q %v", v, ok)
	}
	if v, ok := p.Uint64(sdk.ParamBandwidth); !ok || v != bw {
		t.Errorf("bandwidth = %d %v", v, ok)
	}
	if v, ok := p.ParallelConnections(); !ok || v != conns {
		t.Errorf("parallel.connections = %d %v", v, ok)
	}
	if v, ok := p.Compression(); !ok || !reflect.DeepEqual(v, []string{"xbzrle"}) {
		t.Errorf("compression = %v %v", v, ok)
	}
	if _, ok := p.Int(sdk.ParamDisksPort); ok {
		t.Error("disks_port reported as set")
	}
	if got, want := len(sdk.ParamNames()), (&hooksv1alpha1.MigrationParams{}).ProtoReflect().Descriptor().Fields().Len(); got != want {
		t.Errorf("ParamNames() has %d names, want one per MigrationParams field (%d)", got, want)
	}
	for _, name := range sdk.ParamNames() {
		if sdk.KindOfParam(name) == sdk.ParamKindUnknown {
			t.Errorf("parameter %s has no kind", name)
		}
	}
}

func TestMigrationChangesEmptyWrapperRemoves(t *testing.T) {
	resp, err := sdk.NewMigrationChanges().Remove(sdk.ParamBandwidth).Remove(sdk.ParamCompression).SetList(sdk.ParamMigrateDisks).Response()
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetParams()
	if p.GetBandwidth() == nil || p.GetBandwidth().Value != nil {
		t.Errorf("bandwidth = %v, want a present wrapper without value", p.GetBandwidth())
	}
	if p.GetCompression() == nil || len(p.GetCompression().GetValues()) != 0 {
		t.Errorf("compression = %v, want a present empty list", p.GetCompression())
	}
	if p.GetMigrateDisks() == nil || len(p.GetMigrateDisks().GetValues()) != 0 {
		t.Errorf("migrate_disks = %v, want a present empty list", p.GetMigrateDisks())
	}
	// The wire form must keep the empty wrappers.
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	back := &hooksv1alpha1.PreMigrationSourceResponse{}
	if err := proto.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	if back.GetParams().GetBandwidth() == nil || back.GetParams().GetCompression() == nil {
		t.Fatalf("empty wrappers lost on the wire: %v", back)
	}
}

func TestMigrationChangesApplySemantics(t *testing.T) {
	uri, bw, conns := "tcp://a", uint64(64), int32(2)
	current := sdk.NewMigrationParams(&hooksv1alpha1.MigrationParams{
		MigrateUri:          &hooksv1alpha1.StringParam{Value: &uri},
		Bandwidth:           &hooksv1alpha1.Uint64Param{Value: &bw},
		ParallelConnections: &hooksv1alpha1.IntParam{Value: &conns},
		Compression:         &hooksv1alpha1.StringListParam{Values: []string{"xbzrle"}},
	})
	cases := []struct {
		name      string
		changes   *sdk.MigrationChanges
		wantFlags sdk.MigrationFlags
		want      map[string]any
	}{
		{
			name:      "empty changes keep everything",
			changes:   sdk.NewMigrationChanges(),
			wantFlags: sdk.MigrateLive | sdk.MigratePostcopy,
			want:      map[string]any{"migrate_uri": "tcp://a", "bandwidth": uint64(64), "parallel.connections": int32(2), "compression": []string{"xbzrle"}},
		},
		{
			name:      "nil changes keep everything",
			changes:   nil,
			wantFlags: sdk.MigrateLive | sdk.MigratePostcopy,
			want:      map[string]any{"migrate_uri": "tcp://a", "bandwidth": uint64(64), "parallel.connections": int32(2), "compression": []string{"xbzrle"}},
		},
		{
			name:      "values override and flags change",
			changes:   sdk.NewMigrationChanges().SetFlags(sdk.MigrateParallel).ClearFlags(sdk.MigratePostcopy).SetParallelConnections(8).SetCompression("mt", "xbzrle"),
			wantFlags: sdk.MigrateLive | sdk.MigrateParallel,
			want:      map[string]any{"migrate_uri": "tcp://a", "bandwidth": uint64(64), "parallel.connections": int32(8), "compression": []string{"mt", "xbzrle"}},
		},
		{
			name:      "removals",
			changes:   sdk.NewMigrationChanges().Remove(sdk.ParamMigrateURI).SetList(sdk.ParamCompression),
			wantFlags: sdk.MigrateLive | sdk.MigratePostcopy,
			want:      map[string]any{"bandwidth": uint64(64), "parallel.connections": int32(2)},
		},
		{
			name:      "keep undoes an earlier change",
			changes:   sdk.NewMigrationChanges().SetBandwidth(1).Keep(sdk.ParamBandwidth),
			wantFlags: sdk.MigrateLive | sdk.MigratePostcopy,
			want:      map[string]any{"migrate_uri": "tcp://a", "bandwidth": uint64(64), "parallel.connections": int32(2), "compression": []string{"xbzrle"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			flags, params, err := tc.changes.Apply(sdk.MigrateLive|sdk.MigratePostcopy, current)
			if err != nil {
				t.Fatal(err)
			}
			if flags != tc.wantFlags {
				t.Errorf("flags = %v, want %v", flags, tc.wantFlags)
			}
			if !reflect.DeepEqual(params, tc.want) {
				t.Errorf("params = %v, want %v", params, tc.want)
			}
		})
	}
}

func TestMigrationChangesLaterFlagCallWins(t *testing.T) {
	resp, err := sdk.NewMigrationChanges().ClearFlags(sdk.MigrateTLS | sdk.MigrateLive).SetFlags(sdk.MigrateTLS).Response()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSetFlags() != uint64(sdk.MigrateTLS) || resp.GetClearFlags() != uint64(sdk.MigrateLive) {
		t.Fatalf("set %v clear %v", sdk.MigrationFlags(resp.GetSetFlags()), sdk.MigrationFlags(resp.GetClearFlags()))
	}
}

func TestApplyResponseRejectsBitInBothSets(t *testing.T) {
	resp := &hooksv1alpha1.PreMigrationSourceResponse{SetFlags: uint64(sdk.MigrateTLS), ClearFlags: uint64(sdk.MigrateTLS)}
	if _, _, err := sdk.ApplyResponse(0, sdk.MigrationParams{}, resp); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("err = %v, want an error naming TLS", err)
	}
}

func TestMigrationChangesRejectsMisuse(t *testing.T) {
	cases := []struct {
		name    string
		changes *sdk.MigrationChanges
	}{
		{"unknown name", sdk.NewMigrationChanges().SetString("no.such.param", "x")},
		{"string for an int", sdk.NewMigrationChanges().SetString(sdk.ParamParallelConnections, "4")},
		{"int for a list", sdk.NewMigrationChanges().SetInt(sdk.ParamCompression, 1)},
		{"uint64 for a string", sdk.NewMigrationChanges().SetUint64(sdk.ParamMigrateURI, 1)},
		{"remove unknown", sdk.NewMigrationChanges().Remove("nope")},
		{"first error kept", sdk.NewMigrationChanges().SetString("bad", "x").SetParallelConnections(2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.changes.Err() == nil {
				t.Fatal("Err() = nil")
			}
			if _, err := tc.changes.Response(); err == nil {
				t.Fatal("Response() accepted a misused builder")
			}
		})
	}
}

func TestZeroMigrationChangesUsable(t *testing.T) {
	var c sdk.MigrationChanges
	resp, err := c.Remove(sdk.ParamBandwidth).SetFlags(sdk.MigrateLive).Response()
	if err != nil || resp.GetParams().GetBandwidth() == nil || resp.GetSetFlags() != 1 {
		t.Fatalf("resp = %v, err = %v", resp, err)
	}
}
