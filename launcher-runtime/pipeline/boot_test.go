// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// orderRecorder records which RPC each call was, in arrival order.
type orderRecorder struct {
	mu    sync.Mutex
	order []string
}

func (o *orderRecorder) add(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.order = append(o.order, name)
}

func TestGuestDefinitionRunsBeforePreBoot(t *testing.T) {
	root := socketRoot(t)
	rec := &orderRecorder{}
	s := &sidecar{
		guestDefinition: func(_ context.Context, req *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
			rec.add("GuestDefinition")
			return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: req.DomainXml}, nil
		},
		preBoot: func(context.Context, *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
			rec.add("PreBoot")
			return &hooksv1alpha1.PreBootResponse{}, nil
		},
	}
	// PreBoot is declared first on purpose: the order of hook points comes
	// from the boot, not from permittedHooks.
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("both", sidecarHook(serve(t, root, "both", "hook.sock", s), pluginv1alpha1.PreBoot, gd)),
	})
	if _, err := p.Boot(t.Context(), testVMI(t), testDomain(t), pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.order; len(got) != 2 || got[0] != "GuestDefinition" || got[1] != "PreBoot" {
		t.Fatalf("calls in order %v, want [GuestDefinition PreBoot]", got)
	}
	if ic := s.gdReqs[0].GetSidecarContext().GetInvocationContext(); ic != string(pipeline.Boot) {
		t.Errorf("invocation context %q, want Boot", ic)
	}
}

func TestFailedGuestDefinitionSkipsPreBoot(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return nil, status.Error(codes.Internal, "no domain today")
	}}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("both", sidecarHook(serve(t, root, "both", "hook.sock", s), gd, pluginv1alpha1.PreBoot)),
	})
	_, err := p.Boot(t.Context(), testVMI(t), testDomain(t), pipeline.Artifacts{})
	if err == nil || !strings.Contains(err.Error(), "no domain today") {
		t.Fatalf("want the GuestDefinition error, got %v", err)
	}
	if len(s.pbReqs) != 0 {
		t.Fatalf("PreBoot ran %d times after GuestDefinition failed", len(s.pbReqs))
	}
}

// everyPoint serves all three launcher hook points and records the order
// of the calls it gets.
func everyPoint(rec *orderRecorder) *sidecar {
	return &sidecar{
		guestDefinition: func(_ context.Context, req *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
			rec.add("GuestDefinition/" + req.GetSidecarContext().GetInvocationContext())
			return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: req.DomainXml}, nil
		},
		preBoot: func(context.Context, *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
			rec.add("PreBoot")
			return &hooksv1alpha1.PreBootResponse{}, nil
		},
		preMigrationSource: func(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
			rec.add("PreMigrationSource")
			return &hooksv1alpha1.PreMigrationSourceResponse{}, nil
		},
	}
}

func everyPointPipeline(t *testing.T, rec *orderRecorder) *pipeline.Pipeline {
	root := socketRoot(t)
	return newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("all", sidecarHook(serve(t, root, "all", "hook.sock", everyPoint(rec)),
			gd, pluginv1alpha1.PreBoot, pluginv1alpha1.PreMigrationSource)),
	})
}

func TestPreBootDoesNotRunOnTheMigrationTarget(t *testing.T) {
	rec := &orderRecorder{}
	p := everyPointPipeline(t, rec)
	if err := p.MigrationTarget(t.Context(), testVMI(t), testDomain(t)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.order, " "); got != "GuestDefinition/MigrationTarget" {
		t.Fatalf("the migration target ran %q, want only GuestDefinition with the MigrationTarget context", got)
	}
}

func TestGuestDefinitionDoesNotRunOnTheMigrationSource(t *testing.T) {
	rec := &orderRecorder{}
	p := everyPointPipeline(t, rec)
	res, err := p.MigrationSource(t.Context(), testVMI(t), 1, &hooksv1alpha1.MigrationParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.order, " "); got != "PreMigrationSource" {
		t.Fatalf("the migration source ran %q, want only PreMigrationSource", got)
	}
	if res.Flags != 1 {
		t.Errorf("an empty response changed the flags to %d", res.Flags)
	}
}

func TestBootRunsNoMigrationHook(t *testing.T) {
	rec := &orderRecorder{}
	p := everyPointPipeline(t, rec)
	if _, err := p.Boot(t.Context(), testVMI(t), testDomain(t), pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.order, " "); got != "GuestDefinition/Boot PreBoot" {
		t.Fatalf("a boot ran %q, want GuestDefinition (Boot) then PreBoot", got)
	}
}
