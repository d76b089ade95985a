// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// TestHookFailureIsATypedHookError: every kind of hook failure reaches the
// host as a *pipeline.HookError it can errors.As, with the plugin, hook
// index, kind, hook point and socket as fields, and the cause still
// reachable through the chain (gRPC status, missing socket, timeout,
// cancellation); the legacy hook sidecars' failures too, with no plugin.
func TestHookFailureIsATypedHookError(t *testing.T) {
	root := socketRoot(t)
	failingGD := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return nil, status.Error(codes.Internal, "cannot rewrite the domain")
	}}
	sidecarSocket := serve(t, root, "side", "hook.sock", failingGD)
	failingPMS := &sidecar{preMigrationSource: func(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
		return nil, status.Error(codes.FailedPrecondition, "migration not possible now")
	}}
	pmsSocket := serve(t, root, "mig", "hook.sock", failingPMS)
	hang := func(ctx context.Context, _ *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	hangSocket := serve(t, root, "slow", "hook.sock", &sidecar{preBoot: hang})
	// cancelled is a context cancelled as soon as the sidecar serving
	// cancelSocket receives its call, as a migration abort would.
	cancelled, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancelSocket := serve(t, root, "abort", "hook.sock", &sidecar{preBoot: func(ctx context.Context, req *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		cancel()
		return hang(ctx, req)
	}})
	legacyFailed := errors.New("hook sidecar crashed")
	vmi := testVMI(t)
	for _, tc := range []struct {
		name    string
		plugin  pluginv1alpha1.Plugin
		point   pluginv1alpha1.LauncherHookPoint
		want    pipeline.HookError
		isCause func(error) bool
		ctx     context.Context           // default: t.Context()
		opts    func(o *pipeline.Options) // default: none
	}{
		{"SidecarStatus", plugin("side", celHook(celAppend("x")), sidecarHook(sidecarSocket, gd)), gd,
			pipeline.HookError{Plugin: "side", HookIndex: 1, Kind: pipeline.KindSidecar, HookPoint: gd, Socket: sidecarSocket},
			func(err error) bool { return status.Code(err) == codes.Internal }, nil, nil},
		{"CELEvaluation", plugin("cel", celHook(celAppend("x")), celHook(`Domain{Title: vmi.Annotations["absent"]}`)), gd,
			pipeline.HookError{Plugin: "cel", HookIndex: 1, Kind: pipeline.KindCEL, HookPoint: gd},
			func(err error) bool { return err != nil }, nil, nil},
		{"SocketNeverAppeared", plugin("gone", sidecarHook(declared("gone", "hook.sock"), pb)), pb,
			pipeline.HookError{Plugin: "gone", HookIndex: 0, Kind: pipeline.KindSidecar, HookPoint: pb, Socket: declared("gone", "hook.sock")},
			func(err error) bool { return errors.Is(err, fs.ErrNotExist) }, nil, nil},
		{"PluginCondition", func() pluginv1alpha1.Plugin {
			p := plugin("cond", sidecarHook(declared("cond", "hook.sock"), pb))
			p.Spec.Condition = `vmi.Labels["no-such-label"] == "x"`
			return p
		}(), pb,
			pipeline.HookError{Plugin: "cond", Scope: hookresult.ScopePlugin, HookIndex: pipeline.PluginCondition, HookPoint: pb},
			func(err error) bool { return err != nil }, nil, nil},
		{"PreMigrationSourceStatus", plugin("mig", sidecarHook(pmsSocket, pms)), pms,
			pipeline.HookError{Plugin: "mig", HookIndex: 0, Kind: pipeline.KindSidecar, HookPoint: pms, Socket: pmsSocket},
			func(err error) bool { return status.Code(err) == codes.FailedPrecondition }, nil, nil},
		{"Timeout", plugin("slow", withTimeout(sidecarHook(hangSocket, pb), 100*time.Millisecond)), pb,
			pipeline.HookError{Plugin: "slow", HookIndex: 0, Kind: pipeline.KindSidecar, HookPoint: pb, Socket: hangSocket},
			func(err error) bool { return status.Code(err) == codes.DeadlineExceeded }, nil, nil},
		// Ignore does not turn a cancelled operation into a success.
		{"Cancelled", plugin("abort", ignore(sidecarHook(cancelSocket, pb))), pb,
			pipeline.HookError{Plugin: "abort", HookIndex: 0, Kind: pipeline.KindSidecar, HookPoint: pb, Socket: cancelSocket},
			func(err error) bool { return errors.Is(err, context.Canceled) }, cancelled, nil},
		{"LegacyHookSidecars", plugin("after", celHook(celAppend("x"))), gd,
			pipeline.HookError{Scope: hookresult.ScopeLegacyHooks, HookIndex: pipeline.LegacyHooksIndex, Kind: pipeline.KindLegacy, HookPoint: gd},
			func(err error) bool { return errors.Is(err, legacyFailed) }, nil,
			func(o *pipeline.Options) { o.LegacyHooks = &legacyHooks{err: legacyFailed} }},
		{"LegacyAnswerDoesNotDecode", plugin("after", celHook(celAppend("x"))), gd,
			pipeline.HookError{Scope: hookresult.ScopeLegacyHooks, HookIndex: pipeline.LegacyHooksIndex, Kind: pipeline.KindLegacy, HookPoint: gd},
			func(err error) bool { return strings.Contains(err.Error(), "invalid domain XML") }, nil,
			func(o *pipeline.Options) {
				o.LegacyHooks = &legacyHooks{answer: []byte(`<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><vcpu>many</vcpu></domain>`)}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{tc.plugin}, func(o *pipeline.Options) {
				o.SocketWaitBudget = 100 * time.Millisecond
				if tc.opts != nil {
					tc.opts(o)
				}
			})
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			var err error
			switch tc.point {
			case gd:
				_, err = p.GuestDefinition(ctx, vmi, testDomain(t), pipeline.Boot)
			case pb:
				err = p.PreBoot(ctx, vmi, pipeline.Artifacts{})
			case pms:
				_, err = p.PreMigrationSource(ctx, vmi, 0, baseParams())
			}
			var he *pipeline.HookError
			if !errors.As(err, &he) {
				t.Fatalf("errors.As found no *HookError in %v", err)
			}
			got := *he
			got.Err = nil
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if he.Err == nil || !tc.isCause(err) {
				t.Errorf("the cause is not reachable through the error: %v", err)
			}
		})
	}
}

// A HookError built with only the deprecated indices reads as one built
// with its scope.
func TestHookErrorDeprecatedIndicesMeanTheirScope(t *testing.T) {
	cause := errors.New("boom")
	for _, pair := range [][2]pipeline.HookError{
		{{Plugin: "p", HookIndex: pipeline.PluginCondition, HookPoint: "PreBoot", Err: cause},
			{Plugin: "p", Scope: hookresult.ScopePlugin, HookPoint: "PreBoot", Err: cause}},
		{{HookIndex: pipeline.LegacyHooksIndex, Kind: pipeline.KindLegacy, HookPoint: "GuestDefinition", Err: cause},
			{Scope: hookresult.ScopeLegacyHooks, Kind: pipeline.KindLegacy, HookPoint: "GuestDefinition", Err: cause}},
	} {
		if old, scoped := pair[0].Error(), pair[1].Error(); old != scoped {
			t.Errorf("deprecated index reads %q, scope reads %q", old, scoped)
		}
	}
}
