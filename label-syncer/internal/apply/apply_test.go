// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func planner(t *testing.T, source map[string]string) Planner {
	t.Helper()
	f, err := keyfilter.Parse("ops.example.com/*")
	if err != nil {
		t.Fatal(err)
	}
	return func(target labelsync.Metadata) labelsync.Change {
		return labelsync.Plan(labelsync.Rules{Labels: f}, labelsync.Metadata{Labels: source}, target)
	}
}

var podGR = schema.GroupResource{Resource: "pods"}

// refused is what the API server answers when a JSON patch test fails.
func refused() error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, "testing value failed")})
}

type setup struct {
	patcher *Patcher
	reader  client.Client
	pod     *corev1.Pod
	reg     *prometheus.Registry
	patches int
}

func newSetup(t *testing.T, onPatch func(s *setup, ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch) error) *setup {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "x"}}}
	s := &setup{reg: prometheus.NewRegistry()}
	base := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pod).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			s.patches++
			if onPatch != nil {
				return onPatch(s, ctx, c, obj, p)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
	m, err := syncmetrics.New(s.reg)
	if err != nil {
		t.Fatal(err)
	}
	s.patcher = &Patcher{Writer: c, Reader: base, Metrics: m, Target: syncmetrics.TargetPod}
	s.reader = base
	s.pod = &corev1.Pod{}
	if err := base.Get(t.Context(), client.ObjectKeyFromObject(pod), s.pod); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNoPatchWhenThePlanIsEmpty(t *testing.T) {
	s := newSetup(t, nil)
	change, err := s.patcher.Apply(t.Context(), s.pod, planner(t, nil))
	if err != nil || !change.Empty() || s.patches != 0 {
		t.Fatalf("change %+v, err %v, patches %d; want no patch", change, err, s.patches)
	}
}

func TestOnePatchPerChange(t *testing.T) {
	s := newSetup(t, nil)
	change, err := s.patcher.Apply(t.Context(), s.pod, planner(t, map[string]string{"ops.example.com/a": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.patches != 1 || change.Labels.String() != "added ops.example.com/a" {
		t.Fatalf("patches %d, change %q", s.patches, change.Labels)
	}
	got := &corev1.Pod{}
	if err := s.reader.Get(t.Context(), client.ObjectKeyFromObject(s.pod), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["ops.example.com/a"] != "1" || got.Labels["app"] != "x" {
		t.Fatalf("labels = %v", got.Labels)
	}
}

func TestFailedTestRereadsAndRetries(t *testing.T) {
	s := newSetup(t, func(s *setup, ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch) error {
		if s.patches == 1 {
			// Another writer adds a label between our read and our patch.
			other := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
				return err
			}
			other.Labels["writer.example.com/k"] = "v"
			if err := c.Update(ctx, other); err != nil {
				return err
			}
			return refused()
		}
		return c.Patch(ctx, obj, p)
	})
	if _, err := s.patcher.Apply(t.Context(), s.pod, planner(t, map[string]string{"ops.example.com/a": "1"})); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := s.reader.Get(t.Context(), client.ObjectKeyFromObject(s.pod), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["ops.example.com/a"] != "1" || got.Labels["writer.example.com/k"] != "v" {
		t.Fatalf("a side's key was lost: %v", got.Labels)
	}
	if s.patches != 2 {
		t.Fatalf("patches = %d, want 2", s.patches)
	}
	if n := counterValue(t, s.reg, syncmetrics.MetricPatchConflicts, syncmetrics.TargetPod); n != 1 {
		t.Fatalf("conflicts = %v, want 1", n)
	}
}

func TestRefusedPatchOnAnUnchangedObjectIsAnError(t *testing.T) {
	s := newSetup(t, func(*setup, context.Context, client.WithWatch, client.Object, client.Patch) error {
		return refused()
	})
	_, err := s.patcher.Apply(t.Context(), s.pod, planner(t, map[string]string{"ops.example.com/a": "1"}))
	if !apierrors.IsInvalid(err) || s.patches != 1 {
		t.Fatalf("err %v after %d patches; want the 422 after one patch", err, s.patches)
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	s := newSetup(t, func(s *setup, ctx context.Context, c client.WithWatch, obj client.Object, _ client.Patch) error {
		other := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
			return err
		}
		other.Labels["writer.example.com/k"] = other.ResourceVersion
		if err := c.Update(ctx, other); err != nil {
			return err
		}
		return refused()
	})
	s.patcher.MaxAttempts = 3
	_, err := s.patcher.Apply(t.Context(), s.pod, planner(t, map[string]string{"ops.example.com/a": "1"}))
	if !apierrors.IsInvalid(err) || s.patches != 3 {
		t.Fatalf("err %v after %d patches; want an error after 3", err, s.patches)
	}
}

func TestTargetGoneIsNotAnError(t *testing.T) {
	s := newSetup(t, func(*setup, context.Context, client.WithWatch, client.Object, client.Patch) error {
		return apierrors.NewNotFound(podGR, "p")
	})
	change, err := s.patcher.Apply(t.Context(), s.pod, planner(t, map[string]string{"ops.example.com/a": "1"}))
	if err != nil || !change.Empty() {
		t.Fatalf("change %+v, err %v", change, err)
	}
}

// counterValue returns the value of the counter series name{target}. New
// makes one series per target at 0, so the target is chosen by its label.
func counterValue(t *testing.T, reg *prometheus.Registry, name, target string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, lp := range s.GetLabel() {
				if lp.GetName() == "target" && lp.GetValue() == target {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("series %s{target=%q} not found", name, target)
	return 0
}
