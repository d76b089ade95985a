// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"errors"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// PreMigrationSource calls the PreMigrationSource sidecars in order on the
// migration source, right before the migration is handed to libvirt, and
// returns the flags and parameters to pass to libvirt as they are.
//
// Each sidecar sees the configuration as left by the previous ones and
// answers with changes only, applied with sdk.ApplyResponseProto (the rule
// plugin authors test against): set_flags and clear_flags (a bit in both is
// an error), and per parameter an absent wrapper keeps the value, a wrapper
// with a value (or a non-empty list) overrides it, an empty wrapper (or an
// empty list) removes it. A hook that fails under failureStrategy Ignore
// leaves the configuration as the previous successful hooks made it.
//
// Cancelling ctx (a migration abort) cancels the call in flight and fails
// the chain. params is never modified; the result holds copies.
func (p *Pipeline) PreMigrationSource(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams) (*MigrationResult, error) {
	return p.preMigrationSource(ctx, vmi, flags, params, nil)
}

// preMigrationSource is PreMigrationSource, filling report when it is not
// nil.
func (p *Pipeline) preMigrationSource(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams, report *Report) (*MigrationResult, error) {
	if vmi == nil {
		return nil, errors.New("PreMigrationSource: no VMI given")
	}
	current := &MigrationResult{Flags: flags, Params: sdk.CopyParams(params)}
	c := p.newCall(pluginv1alpha1.PreMigrationSource, vmi)
	c.report = report
	err := c.run(ctx, func(ctx context.Context, pl *compiledPlugin, h *compiledHook) error {
		var resp *hooksv1alpha1.PreMigrationSourceResponse
		err := c.callSidecar(ctx, pl, h, func(ctx context.Context, client hooksv1alpha1.LauncherHookServiceClient, vmiJSON []byte) error {
			var err error
			resp, err = client.PreMigrationSource(ctx, &hooksv1alpha1.PreMigrationSourceRequest{
				Vmi:    vmiJSON,
				Flags:  current.Flags,
				Params: current.Params,
			})
			return err
		})
		if err != nil {
			return err
		}
		nextFlags, nextParams, err := sdk.ApplyResponseProto(sdk.MigrationFlags(current.Flags), current.Params, resp)
		if err != nil {
			return fmt.Errorf("sidecar response: %w", err)
		}
		current = &MigrationResult{Flags: uint64(nextFlags), Params: nextParams}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return current, nil
}
