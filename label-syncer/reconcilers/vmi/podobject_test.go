// SPDX-License-Identifier: Apache-2.0

package vmi

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reconciler watches Pod metadata unless FullPodWatch is set.
func TestPodsAreWatchedAsMetadataUnlessFullPodWatch(t *testing.T) {
	if _, ok := (&Reconciler{}).podObject().(*metav1.PartialObjectMetadata); !ok {
		t.Fatal("the default Pod watch is not metadata-only")
	}
	if _, ok := (&Reconciler{FullPodWatch: true}).podObject().(*corev1.Pod); !ok {
		t.Fatal("FullPodWatch does not watch whole Pods")
	}
}
