// SPDX-License-Identifier: Apache-2.0

package vmi

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsAreIndexedByTheirControllerOwnerOnly(t *testing.T) {
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want []string
	}{
		{"no owner", nil, nil},
		{"owner that is not the controller", []metav1.OwnerReference{{UID: "a"}}, nil},
		{"controller owner", []metav1.OwnerReference{{UID: "a"}, {UID: "b", Controller: new(true)}}, []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.refs}}
			if got := controllerUID(pod); !slices.Equal(got, tc.want) {
				t.Fatalf("controllerUID = %q, want %q", got, tc.want)
			}
		})
	}
}
