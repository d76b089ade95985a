// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// The host wires the store with its own rest.Config and feature gate, runs
// it for its lifetime and waits for the initial list before dispatching.
func Example() {
	var cfg *rest.Config // virt-handler's in-cluster config
	pluginsGate := func() bool { return true }

	s, err := store.New(store.Options{Config: cfg, FeatureGate: pluginsGate})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	go func() { _ = s.Run(ctx) }()
	if !s.WaitForSync(ctx) {
		return
	}
	snap, _ := s.Snapshot()
	for _, p := range snap.Plugins {
		fmt.Println(p.Name)
	}
}
