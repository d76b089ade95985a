// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
)

// A deletion warning names at most ten objects, sorted, and counts the rest.
func TestDeletionWarningNamesAtMostTenObjects(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("ns/vm-%02d", 11-i))
	}
	got := named(names)
	if !strings.HasPrefix(got, "ns/vm-00, ns/vm-01,") || !strings.HasSuffix(got, "ns/vm-09 and 2 more") {
		t.Errorf("named = %q", got)
	}
}

func TestRequiresReadsTheAnnotationsPluginNames(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{"disk-enc", true},
		{"audit, disk-enc", true},
		{"disk-encryption", false},
		{"", false},
	} {
		m := metav1.ObjectMeta{Annotations: map[string]string{required.Annotation: tc.value}}
		if got := requires(m, "disk-enc"); got != tc.want {
			t.Errorf("%q requires disk-enc = %v, want %v", tc.value, got, tc.want)
		}
	}
}
