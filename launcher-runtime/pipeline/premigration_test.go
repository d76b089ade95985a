// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

const pms = pluginv1alpha1.PreMigrationSource

// Flag bits of libvirt's virDomainMigrateFlags used below.
const (
	virMigrateLive      = 1 << 0
	virMigratePeer2Peer = 1 << 1
	virMigrateAutoConv  = 1 << 13
	virMigratePostcopy  = 1 << 15 // VIR_MIGRATE_POSTCOPY, 32768
	virMigrateParallel  = 1 << 17
)

func answer(resp *hooksv1alpha1.PreMigrationSourceResponse) *sidecar {
	return &sidecar{preMigrationSource: func(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
		return resp, nil
	}}
}

func str(s string) *hooksv1alpha1.StringParam { return &hooksv1alpha1.StringParam{Value: &s} }
func i32(v int32) *hooksv1alpha1.IntParam     { return &hooksv1alpha1.IntParam{Value: &v} }
func u64(v uint64) *hooksv1alpha1.Uint64Param { return &hooksv1alpha1.Uint64Param{Value: &v} }

func baseParams() *hooksv1alpha1.MigrationParams {
	return &hooksv1alpha1.MigrationParams{
		MigrateUri:    str("tcp://10.0.0.2:49152"),
		Bandwidth:     u64(0),
		MigrateDisks:  &hooksv1alpha1.StringListParam{Values: []string{"vdb"}},
		ListenAddress: str("10.0.0.2"),
	}
}

func runPMS(t *testing.T, flags uint64, params *hooksv1alpha1.MigrationParams, hooks ...*sidecar) (*pipeline.MigrationResult, error) {
	t.Helper()
	root := socketRoot(t)
	var lh []pluginv1alpha1.LauncherHook
	for i, s := range hooks {
		lh = append(lh, sidecarHook(serve(t, root, "tuner", string(rune('a'+i))+".sock", s), pms))
	}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("tuner", lh...)})
	return p.PreMigrationSource(t.Context(), testVMI(t), flags, params)
}

func TestEmptyResponseChangesNothing(t *testing.T) {
	in := baseParams()
	res, err := runPMS(t, virMigrateLive|virMigratePeer2Peer, in, answer(&hooksv1alpha1.PreMigrationSourceResponse{}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Flags != virMigrateLive|virMigratePeer2Peer || !proto.Equal(res.Params, baseParams()) {
		t.Errorf("an empty response changed the configuration: flags %#x params %v", res.Flags, res.Params)
	}
}

func TestSetAndClearFlags(t *testing.T) {
	res, err := runPMS(t, virMigrateLive|virMigrateAutoConv, nil, answer(&hooksv1alpha1.PreMigrationSourceResponse{
		SetFlags:   virMigrateParallel,
		ClearFlags: virMigrateAutoConv,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(virMigrateLive | virMigrateParallel); res.Flags != want {
		t.Errorf("flags %#x, want %#x", res.Flags, want)
	}
}

func TestSetAndClearSameBitIsError(t *testing.T) {
	_, err := runPMS(t, virMigrateLive, nil,
		answer(&hooksv1alpha1.PreMigrationSourceResponse{}),
		answer(&hooksv1alpha1.PreMigrationSourceResponse{SetFlags: virMigrateParallel | virMigrateLive, ClearFlags: virMigrateParallel}))
	mustContain(t, err, `plugin "tuner" launcher hook #1 (sidecar) at PreMigrationSource`, "0x20000", "both set_flags and clear_flags")
}

func TestParameterOverrideAndKeep(t *testing.T) {
	res, err := runPMS(t, 0, baseParams(), answer(&hooksv1alpha1.PreMigrationSourceResponse{
		SetFlags: virMigrateParallel,
		Params: &hooksv1alpha1.MigrationParams{
			ParallelConnections: i32(4),
			MigrateUri:          str("tcp://10.0.0.9:49152"),
			MigrateDisks:        &hooksv1alpha1.StringListParam{Values: []string{"vdb", "vdc"}},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := baseParams()
	want.ParallelConnections = i32(4)
	want.MigrateUri = str("tcp://10.0.0.9:49152")
	want.MigrateDisks = &hooksv1alpha1.StringListParam{Values: []string{"vdb", "vdc"}}
	if !proto.Equal(res.Params, want) {
		t.Errorf("params\n got %v\nwant %v", res.Params, want)
	}
}

func TestEmptyWrapperRemovesParam(t *testing.T) {
	res, err := runPMS(t, 0, baseParams(), answer(&hooksv1alpha1.PreMigrationSourceResponse{
		Params: &hooksv1alpha1.MigrationParams{
			ListenAddress: &hooksv1alpha1.StringParam{},
			Bandwidth:     &hooksv1alpha1.Uint64Param{},
			MigrateDisks:  &hooksv1alpha1.StringListParam{},
			// Removing what is not set is not an error.
			ParallelConnections: &hooksv1alpha1.IntParam{},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://10.0.0.2:49152")}
	if !proto.Equal(res.Params, want) {
		t.Errorf("params\n got %v\nwant %v", res.Params, want)
	}
}

func TestEachHookSeesPreviousResult(t *testing.T) {
	second := &sidecar{}
	_, err := runPMS(t, virMigrateLive, baseParams(),
		answer(&hooksv1alpha1.PreMigrationSourceResponse{SetFlags: virMigrateParallel, Params: &hooksv1alpha1.MigrationParams{ParallelConnections: i32(3)}}),
		second)
	if err != nil {
		t.Fatal(err)
	}
	req := second.pmsReqs[0]
	if req.Flags != virMigrateLive|virMigrateParallel || req.Params.GetParallelConnections().GetValue() != 3 {
		t.Errorf("second hook saw flags %#x params %v, want the first hook's result", req.Flags, req.Params)
	}
	if len(req.Vmi) == 0 {
		t.Errorf("request carries no VMI")
	}
}

func TestIgnoreKeepsPreviousSuccessfulResult(t *testing.T) {
	root := socketRoot(t)
	third := answer(&hooksv1alpha1.PreMigrationSourceResponse{Params: &hooksv1alpha1.MigrationParams{CompressionMtThreads: i32(2)}})
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("tuner",
		sidecarHook(serve(t, root, "tuner", "a.sock", answer(&hooksv1alpha1.PreMigrationSourceResponse{
			SetFlags: virMigrateParallel, Params: &hooksv1alpha1.MigrationParams{ParallelConnections: i32(4)},
		})), pms),
		// Answers with changes that are not applicable as a whole: nothing of
		// it may leak into the result.
		ignore(sidecarHook(serve(t, root, "tuner", "b.sock", answer(&hooksv1alpha1.PreMigrationSourceResponse{
			SetFlags: virMigrateAutoConv | virMigrateLive, ClearFlags: virMigrateLive,
			Params: &hooksv1alpha1.MigrationParams{ParallelConnections: i32(16), MigrateUri: &hooksv1alpha1.StringParam{}},
		})), pms)),
		ignore(sidecarHook(serve(t, root, "tuner", "c.sock", &sidecar{preMigrationSource: func(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
			return nil, errors.New("tuning service unreachable")
		}}), pms)),
		sidecarHook(serve(t, root, "tuner", "d.sock", third), pms),
	)})
	res, err := p.PreMigrationSource(t.Context(), testVMI(t), virMigrateLive, baseParams())
	if err != nil {
		t.Fatal(err)
	}
	want := baseParams()
	want.ParallelConnections = i32(4)
	want.CompressionMtThreads = i32(2)
	if res.Flags != virMigrateLive|virMigrateParallel || !proto.Equal(res.Params, want) {
		t.Errorf("got flags %#x params %v\nwant flags %#x params %v", res.Flags, res.Params, virMigrateLive|virMigrateParallel, want)
	}
	if got := third.pmsReqs[0].Params.GetParallelConnections().GetValue(); got != 4 {
		t.Errorf("the hook after the ignored ones saw parallel.connections %d, want 4", got)
	}
}

func TestCallerParamsNotMutated(t *testing.T) {
	in := baseParams()
	_, err := runPMS(t, 0, in, answer(&hooksv1alpha1.PreMigrationSourceResponse{
		Params: &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://elsewhere"), ListenAddress: &hooksv1alpha1.StringParam{}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, baseParams()) {
		t.Errorf("the caller's params changed: %v", in)
	}
}

func TestAbortCancelsHookContext(t *testing.T) {
	root := socketRoot(t)
	started := make(chan struct{})
	sawCancel := make(chan error, 1)
	hang := &sidecar{preMigrationSource: func(ctx context.Context, _ *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
		close(started)
		<-ctx.Done()
		sawCancel <- ctx.Err()
		return nil, ctx.Err()
	}}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("slow", ignore(sidecarHook(serve(t, root, "slow", "hook.sock", hang), pms)))})
	ctx, abort := context.WithCancel(t.Context())
	go func() {
		<-started
		abort()
	}()
	res, err := p.PreMigrationSource(ctx, testVMI(t), virMigrateLive, nil)
	if res != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("want the migration to fail with context.Canceled even under Ignore, got %v, %v", res, err)
	}
	if got := <-sawCancel; !errors.Is(got, context.Canceled) {
		t.Errorf("the sidecar's request context ended with %v, want Canceled", got)
	}
}

func TestPostCopyBitExposed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   uint64
		resp *hooksv1alpha1.PreMigrationSourceResponse
		want bool
	}{
		{"SetByHook", virMigrateLive, &hooksv1alpha1.PreMigrationSourceResponse{SetFlags: virMigratePostcopy}, true},
		{"ClearedByHook", virMigrateLive | virMigratePostcopy, &hooksv1alpha1.PreMigrationSourceResponse{ClearFlags: virMigratePostcopy}, false},
		{"KeptFromKubeVirt", virMigrateLive | virMigratePostcopy, &hooksv1alpha1.PreMigrationSourceResponse{}, true},
		{"NeverSet", virMigrateLive, &hooksv1alpha1.PreMigrationSourceResponse{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runPMS(t, tc.in, nil, answer(tc.resp))
			if err != nil {
				t.Fatal(err)
			}
			if res.PostCopy() != tc.want {
				t.Errorf("PostCopy() = %v, want %v (flags %#x)", res.PostCopy(), tc.want, res.Flags)
			}
		})
	}
}

func TestNoHooksReturnsInputConfiguration(t *testing.T) {
	p := newPipeline(t, socketRoot(t), nil)
	in := baseParams()
	res, err := p.PreMigrationSource(t.Context(), testVMI(t), virMigrateLive, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Flags != virMigrateLive || !proto.Equal(res.Params, in) || res.Params == in {
		t.Errorf("want an equal copy of the input, got %#x %v (same pointer: %v)", res.Flags, res.Params, res.Params == in)
	}
}
