// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// selected is one node hook to call.
type selected struct {
	plugin *pluginv1alpha1.Plugin
	index  int
	hook   *pluginv1alpha1.NodeHook
}

// conditionFunc reports whether a CEL condition holds for vmi.
type conditionFunc func(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error)

// selectHooks returns, in call order, the node hooks of plugins that permit
// point and whose plugin-level and hook-level conditions hold. Every
// condition is evaluated before any hook is called, and the first error
// ends the selection: a dispatch whose conditions cannot be decided calls
// nothing.
func selectHooks(ctx context.Context, plugins []*pluginv1alpha1.Plugin, point pluginv1alpha1.NodeHookPoint,
	vmi *kubevirtv1.VirtualMachineInstance, holds conditionFunc) ([]selected, error) {
	byName := func(a, b *pluginv1alpha1.Plugin) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(plugins, byName) {
		plugins = slices.SortedFunc(slices.Values(plugins), byName)
	}
	var out []selected
	for _, p := range plugins {
		var candidates []int
		for i := range p.Spec.NodeHooks {
			if p.Spec.NodeHooks[i].Handles(point) {
				candidates = append(candidates, i)
			}
		}
		if len(candidates) == 0 {
			continue
		}
		ok, err := holds(ctx, p.Spec.Condition, vmi)
		if err != nil {
			return nil, &HookError{Plugin: p.Name, Scope: hookresult.ScopePlugin, HookIndex: PluginCondition, HookPoint: point,
				Err: fmt.Errorf("plugin condition: %w", err)}
		}
		if !ok {
			continue
		}
		for _, i := range candidates {
			h := &p.Spec.NodeHooks[i]
			ok, err := holds(ctx, h.Condition, vmi)
			if err != nil {
				return nil, &HookError{Plugin: p.Name, HookIndex: i, HookPoint: point, Socket: h.Socket,
					Err: fmt.Errorf("condition: %w", err)}
			}
			if ok {
				out = append(out, selected{plugin: p, index: i, hook: h})
			}
		}
	}
	return out, nil
}
