// SPDX-License-Identifier: Apache-2.0

package tuner

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

const kubevirtFlags = sdk.MigrateLive | sdk.MigratePeer2Peer | sdk.MigrateAutoConverge | sdk.MigratePostcopy

func serve(t *testing.T) hooksv1alpha1.LauncherHookServiceClient {
	t.Helper()
	conn, err := sdktest.Dial(sdktest.StartLauncher(t, "migration-tuner", New(Options{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return hooksv1alpha1.NewLauncherHookServiceClient(conn)
}

func kubevirtParams() *hooksv1alpha1.MigrationParams {
	return &hooksv1alpha1.MigrationParams{
		MigrateUri: &hooksv1alpha1.StringParam{Value: new("tcp://10.0.0.2:49152")},
		Bandwidth:  &hooksv1alpha1.Uint64Param{Value: proto.Uint64(0)},
	}
}

// migrate calls the tuner and applies its answer as the launcher would.
func migrate(t *testing.T, cl hooksv1alpha1.LauncherHookServiceClient, labels map[string]string) (sdk.MigrationFlags, map[string]any, error) {
	t.Helper()
	params := kubevirtParams()
	resp, err := cl.PreMigrationSource(t.Context(), &hooksv1alpha1.PreMigrationSourceRequest{
		Vmi:    sdktest.VMIJSON("default", "vm1", labels, nil),
		Flags:  uint64(kubevirtFlags),
		Params: params,
	})
	if err != nil {
		return 0, nil, err
	}
	flags, out, err := sdk.ApplyResponse(kubevirtFlags, sdk.NewMigrationParams(params), resp)
	if err != nil {
		t.Fatalf("response breaks the contract: %v", err)
	}
	return flags, out, nil
}

func TestLabelsTuneMigration(t *testing.T) {
	cl := serve(t)
	base := map[string]any{"migrate_uri": "tcp://10.0.0.2:49152", "bandwidth": uint64(0)}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		maps.Copy(m, base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name      string
		labels    map[string]string
		wantFlags sdk.MigrationFlags
		want      map[string]any
	}{
		{"no labels change nothing", nil, kubevirtFlags, base},
		{"parallel sets the flag and the connections",
			map[string]string{"migration.example.com/parallel": "4"},
			kubevirtFlags | sdk.MigrateParallel, with("parallel.connections", int32(4))},
		{"parallel 0 turns parallel migration off",
			map[string]string{"migration.example.com/parallel": "0"},
			kubevirtFlags, base},
		{"xbzrle compression",
			map[string]string{"migration.example.com/compression": "xbzrle"},
			kubevirtFlags | sdk.MigrateCompressed, with("compression", []string{"xbzrle"})},
		{"mt compression with threads",
			map[string]string{"migration.example.com/compression": "xbzrle_mt", "migration.example.com/mt-threads": "2"},
			kubevirtFlags | sdk.MigrateCompressed, with("compression", []string{"xbzrle", "mt"}, "compression.mt.threads", int32(2))},
		{"zstd with parallel",
			map[string]string{"migration.example.com/compression": "zstd", "migration.example.com/parallel": "2"},
			kubevirtFlags | sdk.MigrateCompressed | sdk.MigrateParallel, with("compression", []string{"zstd"}, "parallel.connections", int32(2))},
		{"postcopy false clears the flag",
			map[string]string{"migration.example.com/postcopy": "false"},
			kubevirtFlags &^ sdk.MigratePostcopy, base},
		{"labels of other prefixes are ignored",
			map[string]string{"other.example.com/parallel": "4"},
			kubevirtFlags, base},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			flags, params, err := migrate(t, cl, tc.labels)
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

func TestNoLabelsGiveEmptyResponse(t *testing.T) {
	resp, err := serve(t).PreMigrationSource(t.Context(), &hooksv1alpha1.PreMigrationSourceRequest{
		Vmi: sdktest.VMIJSON("default", "vm1", nil, nil), Flags: uint64(kubevirtFlags), Params: kubevirtParams(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSetFlags() != 0 || resp.GetClearFlags() != 0 || resp.GetParams() != nil {
		t.Fatalf("response = %v, want empty", resp)
	}
}

func TestInvalidLabelsAreInvalidArgument(t *testing.T) {
	cl := serve(t)
	cases := map[string]map[string]string{
		"parallel not a number":     {"migration.example.com/parallel": "many"},
		"parallel too large":        {"migration.example.com/parallel": "1000"},
		"unknown compression":       {"migration.example.com/compression": "lz4"},
		"mt threads zero":           {"migration.example.com/mt-threads": "0"},
		"postcopy not a bool":       {"migration.example.com/postcopy": "sometimes"},
		"xbzrle with parallel":      {"migration.example.com/compression": "xbzrle", "migration.example.com/parallel": "2"},
		"zlib without parallel":     {"migration.example.com/compression": "zlib"},
		"two methods with parallel": {"migration.example.com/compression": "zlib_zstd", "migration.example.com/parallel": "2"},
	}
	for name, labels := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := migrate(t, cl, labels)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
			// The VM owner learns which label to change.
			for k, v := range labels {
				if !strings.Contains(status.Convert(err).Message(), fmt.Sprintf("%s=%q", k, v)) {
					t.Errorf("error %q does not name the label %s=%q", status.Convert(err).Message(), k, v)
				}
			}
		})
	}
}

func TestMigrationTunerPassesLauncherContract(t *testing.T) {
	socket := sdktest.StartLauncher(t, "migration-tuner", New(Options{}))
	sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
		Permitted: []string{sdk.HookPreMigrationSource},
		VMI:       sdktest.VMIJSON("default", "vm1", map[string]string{"migration.example.com/parallel": "4"}, nil),
		Flags:     uint64(kubevirtFlags),
		Params:    kubevirtParams(),
	})
}
