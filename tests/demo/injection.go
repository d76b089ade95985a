// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sampleBinding is the MutatingAdmissionPolicyBinding of a sample's
// injection policy.
type sampleBinding struct {
	sample string
	obj    *unstructured.Unstructured
}

// deniedByBinding matches the API server's refusal of a Pod by an
// admission policy.
var deniedByBinding = regexp.MustCompile(`with binding '[^']+' denied request`)

// bindInjectionPolicies binds the samples' injection policies and waits,
// with dry runs of pod's creation, until each has added its sidecar. A
// policy the API server refuses to apply (it denies the Pod) fails the
// step.
func (s *scenario) bindInjectionPolicies(ctx context.Context, pod *corev1.Pod) error {
	c := s.server.Client
	var names []string
	for _, b := range s.bindings {
		if err := c.Create(ctx, b.obj.DeepCopy()); err != nil {
			return fmt.Errorf("create MutatingAdmissionPolicyBinding %s: %w", b.obj.GetName(), err)
		}
		names = append(names, b.sample)
		s.show("created MutatingAdmissionPolicyBinding " + b.obj.GetName())
	}
	// Bindings take effect when the API server's policy informer sees
	// them: dry-run until every policy has injected its sidecar.
	wctx, cancel := context.WithTimeout(ctx, policyWait)
	defer cancel()
	var refused error
	err := waitFor(wctx, "the injection policies to add their sidecars", func() (bool, error) {
		try := pod.DeepCopy()
		err := c.Create(wctx, try, client.DryRunAll)
		if deniedByBinding.MatchString(errText(err)) {
			refused = err
			return true, nil
		}
		if err != nil {
			return false, err
		}
		for _, name := range names {
			if nativeSidecar(try, name) == nil {
				return false, fmt.Errorf("the %s sidecar is not injected yet", name)
			}
		}
		return true, nil
	})
	if err == nil && refused != nil {
		err = refused
	}
	if !s.check("the injection policies of "+strings.Join(names, ", ")+" add their native sidecars to launcher Pods", err == nil, "%s", errText(err)) {
		return errCheckFailed
	}
	return nil
}
