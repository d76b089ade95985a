// SPDX-License-Identifier: Apache-2.0

// Package kustomize builds the repository's kustomizations into objects,
// as `kubectl apply -k` would send them.
package kustomize

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Build builds the kustomization in dir.
func Build(dir string) ([]*unstructured.Unstructured, error) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
