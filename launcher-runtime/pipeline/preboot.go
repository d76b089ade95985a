// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"errors"

	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// PreBoot calls the PreBoot sidecars in order (plugins alphabetically, hooks
// in declaration order), after the boot artifacts exist and before the guest
// starts. The sidecars edit the files in place, so each sees what the
// previous one left. It runs only when the VM boots, never on a migration
// target, and may run again after a failed start.
//
// A sidecar that exceeds its timeout under failureStrategy Ignore is not
// stopped: its call is cancelled and the chain goes on while it may still be
// writing files.
func (p *Pipeline) PreBoot(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, artifacts Artifacts) error {
	return p.preBoot(ctx, vmi, artifacts, nil)
}

// preBoot is PreBoot, filling report when it is not nil.
func (p *Pipeline) preBoot(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, artifacts Artifacts, report *Report) error {
	if vmi == nil {
		return errors.New("PreBoot: no VMI given")
	}
	if artifacts.EphemeralDiskDir == "" {
		artifacts.EphemeralDiskDir = pluginv1alpha1.EphemeralDiskDir
	}
	c := p.newCall(pluginv1alpha1.PreBoot, vmi)
	c.report = report
	return c.run(ctx, func(ctx context.Context, pl *compiledPlugin, h *compiledHook) error {
		return c.callSidecar(ctx, pl, h, func(ctx context.Context, client hooksv1alpha1.LauncherHookServiceClient, vmiJSON []byte) error {
			_, err := client.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{
				Vmi: vmiJSON,
				Artifacts: &hooksv1alpha1.BootArtifacts{
					CloudInitIso:     artifacts.CloudInitISO,
					EphemeralDiskDir: artifacts.EphemeralDiskDir,
				},
			})
			return err
		})
	})
}
