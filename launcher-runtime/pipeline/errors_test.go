package pipeline_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// TestHookFailureIsATypedHookError: every kind of hook failure reaches the
// host as a *pipeline.HookError it can errors.As, with the plugin, hook
// index, kind, hook point and socket as fields, and the cause still
// reachable through the chain (gRPC status, missing socket).
func TestHookFailureIsATypedHookError(t *testing.T) {
	root := socketRoot(t)
	failingGD := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return nil, status.Error(codes.Internal, "cannot rewrite the domain")
	}}
	sidecarSocket := serve(t, root, "side", "hook.sock", failingGD)
	vmi := testVMI(t)
	for _, tc := range []struct {
		name    string
		plugin  pluginv1alpha1.Plugin
		point   pluginv1alpha1.LauncherHookPoint
		want    pipeline.HookError
		isCause func(error) bool
	}{
		{"SidecarStatus", plugin("side", celHook(celAppend("x")), sidecarHook(sidecarSocket, gd)), gd,
			pipeline.HookError{Plugin: "side", HookIndex: 1, Kind: pipeline.KindSidecar, HookPoint: gd, Socket: sidecarSocket},
			func(err error) bool { return status.Code(err) == codes.Internal }},
		{"CELEvaluation", plugin("cel", celHook(celAppend("x")), celHook(`Domain{Title: vmi.Annotations["absent"]}`)), gd,
			pipeline.HookError{Plugin: "cel", HookIndex: 1, Kind: pipeline.KindCEL, HookPoint: gd},
			func(err error) bool { return err != nil }},
		{"SocketNeverAppeared", plugin("gone", sidecarHook(declared("gone", "hook.sock"), pb)), pb,
			pipeline.HookError{Plugin: "gone", HookIndex: 0, Kind: pipeline.KindSidecar, HookPoint: pb, Socket: declared("gone", "hook.sock")},
			func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"PluginCondition", func() pluginv1alpha1.Plugin {
			p := plugin("cond", sidecarHook(declared("cond", "hook.sock"), pb))
			p.Spec.Condition = `vmi.Labels["no-such-label"] == "x"`
			return p
		}(), pb,
			pipeline.HookError{Plugin: "cond", HookIndex: pipeline.PluginCondition, HookPoint: pb},
			func(err error) bool { return err != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{tc.plugin}, func(o *pipeline.Options) { o.SocketWaitBudget = 100 * time.Millisecond })
			var err error
			if tc.point == gd {
				_, err = p.GuestDefinition(context.Background(), vmi, testDomain(t), pipeline.Boot)
			} else {
				err = p.PreBoot(context.Background(), vmi, pipeline.Artifacts{})
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
