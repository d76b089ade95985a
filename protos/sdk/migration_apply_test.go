// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// The change rule at the wire level, as the launcher applies it
// (ApplyResponseProto); migration_test.go tests it through
// MigrationChanges.Apply and ApplyResponse.

func strParam(v string) *hooksv1alpha1.StringParam { return &hooksv1alpha1.StringParam{Value: &v} }
func u64Param(v uint64) *hooksv1alpha1.Uint64Param { return &hooksv1alpha1.Uint64Param{Value: &v} }
func intParam(v int32) *hooksv1alpha1.IntParam     { return &hooksv1alpha1.IntParam{Value: &v} }
func listParam(v ...string) *hooksv1alpha1.StringListParam {
	return &hooksv1alpha1.StringListParam{Values: v}
}

func TestChangeOnlyMerge(t *testing.T) {
	current := func() *hooksv1alpha1.MigrationParams {
		return &hooksv1alpha1.MigrationParams{
			MigrateUri:  strParam("tcp://a"),
			Bandwidth:   u64Param(100),
			DisksPort:   intParam(49153),
			Compression: listParam("xbzrle"),
		}
	}
	for _, tc := range []struct {
		name      string
		resp      *hooksv1alpha1.PreMigrationSourceResponse
		flags     sdk.MigrationFlags
		want      *hooksv1alpha1.MigrationParams
		wantFlags sdk.MigrationFlags
		wantErr   bool
	}{
		{name: "NilResponseChangesNothing", resp: nil, flags: 3, wantFlags: 3, want: current()},
		{name: "EmptyResponseChangesNothing", resp: &hooksv1alpha1.PreMigrationSourceResponse{}, flags: 3, wantFlags: 3, want: current()},
		{name: "AbsentKeeps", resp: &hooksv1alpha1.PreMigrationSourceResponse{Params: &hooksv1alpha1.MigrationParams{}}, flags: 1, wantFlags: 1, want: current()},
		{name: "ValueOverrides", flags: 1, wantFlags: 1,
			resp: &hooksv1alpha1.PreMigrationSourceResponse{Params: &hooksv1alpha1.MigrationParams{MigrateUri: strParam("tcp://b"), Bandwidth: u64Param(0), DisksPort: intParam(-1), Compression: listParam("mt", "xbzrle")}},
			want: &hooksv1alpha1.MigrationParams{MigrateUri: strParam("tcp://b"), Bandwidth: u64Param(0), DisksPort: intParam(-1), Compression: listParam("mt", "xbzrle")}},
		{name: "ValueAddsUnsetParam", flags: 1, wantFlags: 1,
			resp: &hooksv1alpha1.PreMigrationSourceResponse{Params: &hooksv1alpha1.MigrationParams{ParallelConnections: intParam(4)}},
			want: func() *hooksv1alpha1.MigrationParams { p := current(); p.ParallelConnections = intParam(4); return p }()},
		{name: "EmptyWrapperRemoves", flags: 1, wantFlags: 1,
			resp: &hooksv1alpha1.PreMigrationSourceResponse{Params: &hooksv1alpha1.MigrationParams{
				MigrateUri: &hooksv1alpha1.StringParam{}, Bandwidth: &hooksv1alpha1.Uint64Param{},
				DisksPort: &hooksv1alpha1.IntParam{}, Compression: &hooksv1alpha1.StringListParam{},
			}},
			want: &hooksv1alpha1.MigrationParams{}},
		{name: "SetAndClearFlags", flags: 0b0101, wantFlags: 0b0011, want: current(),
			resp: &hooksv1alpha1.PreMigrationSourceResponse{SetFlags: 0b0010, ClearFlags: 0b0100}},
		{name: "BitInBothIsError", flags: 1, wantErr: true,
			resp: &hooksv1alpha1.PreMigrationSourceResponse{SetFlags: 0b0110, ClearFlags: 0b0100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := current()
			flags, got, err := sdk.ApplyResponseProto(tc.flags, in, tc.resp)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got flags %#x params %v", flags, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if flags != tc.wantFlags || !proto.Equal(got, tc.want) {
				t.Errorf("got %#x %v, want %#x %v", flags, got, tc.wantFlags, tc.want)
			}
			if !proto.Equal(in, current()) {
				t.Errorf("ApplyResponseProto modified its input: %v", in)
			}
			if tc.resp.GetParams() != nil && got.GetMigrateUri() != nil && got.GetMigrateUri() == tc.resp.GetParams().GetMigrateUri() {
				t.Errorf("the result shares a wrapper with the response")
			}
		})
	}
}

func TestCopyParamsDropsValuelessWrappers(t *testing.T) {
	in := &hooksv1alpha1.MigrationParams{MigrateUri: strParam("tcp://a"), Bandwidth: &hooksv1alpha1.Uint64Param{}, MigrateDisks: listParam()}
	got := sdk.CopyParams(in)
	if want := (&hooksv1alpha1.MigrationParams{MigrateUri: strParam("tcp://a")}); !proto.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if in.Bandwidth == nil {
		t.Errorf("CopyParams modified its input")
	}
}
