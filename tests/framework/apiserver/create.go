// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateT creates obj with c (which updates obj with what the API server
// stored) and, when that succeeded, deletes it when the test ends; an
// object already gone by then is fine. It returns the error of Create, so
// that a test can expect a rejection.
func CreateT(t testing.TB, c client.Client, obj client.Object) error {
	t.Helper()
	err := c.Create(context.Background(), obj)
	if err == nil {
		t.Cleanup(func() {
			if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
	return err
}
