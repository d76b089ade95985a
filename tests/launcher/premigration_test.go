// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"libvirt.org/go/libvirt"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

func TestLiveMigrationRunsWithFlagsAndParamsFromPreMigrationSourceSidecar(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		// wantFlags must all be set in the result, wantParams present.
		wantFlags  libvirt.DomainMigrateFlags
		wantParams map[string]any
		// xbzrle: the completed job reports XBZRLE cache statistics, which
		// only that method produces (libvirt has no statistics for mt).
		xbzrle bool
	}{{
		name:       "parallel connections",
		labels:     map[string]string{"migration.example.com/parallel": "2"},
		wantFlags:  libvirt.MIGRATE_PARALLEL,
		wantParams: map[string]any{"parallel.connections": int32(2)},
	}, {
		name:       "xbzrle compression",
		labels:     map[string]string{"migration.example.com/compression": "xbzrle"},
		wantFlags:  libvirt.MIGRATE_COMPRESSED,
		wantParams: map[string]any{"compression": []string{"xbzrle"}},
		xbzrle:     true,
	}, {
		name:       "mt compression with two threads",
		labels:     map[string]string{"migration.example.com/compression": "mt", "migration.example.com/mt-threads": "2"},
		wantFlags:  libvirt.MIGRATE_COMPRESSED,
		wantParams: map[string]any{"compression": []string{"mt"}, "compression.mt.threads": int32(2)},
	}}
	bin := sidecarBinary(t, "migration-tuner/cmd/migration-tuner")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			root := shortTempDir(t, "kvp-sock-")
			startSidecar(t, bin, "migration-tuner", root)
			pl := newPipeline(t, root, plugins(t, samplePlugin(t, "migration-tuner")))
			labels := map[string]string{"plugins.example.com/migration-tuner": "true"}
			maps.Copy(labels, tc.labels)
			pair := startMigrationPair(t, ctx, libvirtd.DisklessDomain("vm-tuned"))

			// What KubeVirt would hand libvirt without the plugin.
			flags := p2pLive
			params := &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://" + pair.target.Hostname)}
			result, err := pl.PreMigrationSource(ctx, newVMI("vm-tuned", labels), flags, params)
			if err != nil {
				t.Fatal(err)
			}
			if got := libvirt.DomainMigrateFlags(result.Flags); got&(tc.wantFlags|libvirt.MIGRATE_LIVE|libvirt.MIGRATE_PEER2PEER) != tc.wantFlags|libvirt.MIGRATE_LIVE|libvirt.MIGRATE_PEER2PEER {
				t.Fatalf("flags after the sidecar = %#x, want %#x kept and %#x added", result.Flags, flags, uint64(tc.wantFlags))
			}
			got := hooksv1alpha1.ParamsToMap(result.Params)
			if got["migrate_uri"] != "tcp://"+pair.target.Hostname {
				t.Fatalf("migrate_uri after the sidecar = %v, want it kept", got["migrate_uri"])
			}
			for k, want := range tc.wantParams {
				if !equalParam(got[k], want) {
					t.Fatalf("param %s after the sidecar = %#v, want %#v (all: %v)", k, got[k], want, got)
				}
			}

			if err := domainrun.Migrate(ctx, pair.dom, pair.target.PeerURI(), result.Flags, result.Params); err != nil {
				t.Fatalf("%v\nsource log:\n%s", err, pair.source.Logs(ctx))
			}
			pair.requireRunningOnTargetOnly(t)

			stats, err := pair.dom.GetJobStats(libvirt.DOMAIN_JOB_STATS_COMPLETED)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Type != libvirt.DOMAIN_JOB_COMPLETED {
				t.Fatalf("completed job stats: type %d, want completed", stats.Type)
			}
			if tc.xbzrle != stats.CompressionCacheSet {
				t.Fatalf("completed job reports XBZRLE statistics: %v, want %v", stats.CompressionCacheSet, tc.xbzrle)
			}
		})
	}
}

func equalParam(got, want any) bool {
	switch w := want.(type) {
	case []string:
		g, ok := got.([]string)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if g[i] != w[i] {
				return false
			}
		}
		return true
	default:
		return got == want
	}
}

// libvirt 9.0 in the containers has no zlib or zstd compression method (it
// answers "invalid argument: Unsupported compression method 'zlib'" once
// the job started); the adapter refuses the sidecar's choice up front,
// naming the method, and the domain stays on the source.
func TestSidecarCompressionMethodTheConnectedLibvirtLacksFailsTheMigrationClearly(t *testing.T) {
	ctx := testContext(t)
	root := shortTempDir(t, "kvp-sock-")
	startSidecar(t, sidecarBinary(t, "migration-tuner/cmd/migration-tuner"), "migration-tuner", root)
	pl := newPipeline(t, root, plugins(t, samplePlugin(t, "migration-tuner")))
	pair := startMigrationPair(t, ctx, libvirtd.DisklessDomain("vm-zlib"))
	vmi := newVMI("vm-zlib", map[string]string{
		"plugins.example.com/migration-tuner": "true",
		"migration.example.com/parallel":      "2",
		"migration.example.com/compression":   "zlib",
	})

	params := &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://" + pair.target.Hostname)}
	result, err := pl.PreMigrationSource(ctx, vmi, p2pLive, params)
	if err != nil {
		t.Fatal(err)
	}
	err = domainrun.Migrate(ctx, pair.dom, pair.target.PeerURI(), result.Flags, result.Params)
	if !errors.Is(err, domainrun.ErrUnsupportedParam) || !strings.Contains(err.Error(), `"zlib"`) {
		t.Fatalf("Migrate = %v, want ErrUnsupportedParam naming the zlib method", err)
	}
	t.Logf("refused: %v", err)
	if state, _ := domainState(t, pair.sourceConn, pair.name); state != libvirt.DOMAIN_RUNNING {
		t.Fatalf("domain on the source: state %d, want running", state)
	}
	if state, _ := domainState(t, pair.targetConn, pair.name); state != -1 {
		t.Fatalf("domain exists on the target: state %d", state)
	}
}
