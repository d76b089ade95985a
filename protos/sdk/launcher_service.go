// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// launcherService adapts a handler to the generated service interface.
// Only the methods of the hook points the handler implements are
// registered, so the type assertions below hold whenever a method is called.
type launcherService struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
	plugin  string
	handler any
}

var _ hooksv1alpha1.LauncherHookServiceServer = (*launcherService)(nil)

func (s *launcherService) GuestDefinition(ctx context.Context, req *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	const hook = HookGuestDefinition
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	vmi, err := decodeVMI(req.GetVmi())
	if err != nil {
		return nil, s.invalid(hook, err)
	}
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(string(req.GetDomainXml())); err != nil {
		return nil, s.invalid(hook, fmt.Errorf("decode domain XML: %w", err))
	}
	out, err := s.handler.(GuestDefinitionHandler).GuestDefinition(ctx, &GuestDefinitionRequest{
		VMI:               vmi,
		Domain:            dom,
		InvocationContext: InvocationContext(req.GetSidecarContext().GetInvocationContext()),
		Raw:               req,
	})
	if err := s.result(ctx, hook, vmi, err); err != nil {
		return nil, err
	}
	if out == nil {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: req.GetDomainXml()}, nil
	}
	xml, err := out.Marshal()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "plugin %s: %s: encode domain XML: %v", s.plugin, hook, err)
	}
	return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(xml)}, nil
}

func (s *launcherService) PreBoot(ctx context.Context, req *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
	const hook = HookPreBoot
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	vmi, err := decodeVMI(req.GetVmi())
	if err != nil {
		return nil, s.invalid(hook, err)
	}
	err = s.handler.(PreBootHandler).PreBoot(ctx, &PreBootRequest{
		VMI:              vmi,
		CloudInitISO:     req.GetArtifacts().GetCloudInitIso(),
		EphemeralDiskDir: req.GetArtifacts().GetEphemeralDiskDir(),
		Raw:              req,
	})
	if err := s.result(ctx, hook, vmi, err); err != nil {
		return nil, err
	}
	return &hooksv1alpha1.PreBootResponse{}, nil
}

func (s *launcherService) PreMigrationSource(ctx context.Context, req *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	const hook = HookPreMigrationSource
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	vmi, err := decodeVMI(req.GetVmi())
	if err != nil {
		return nil, s.invalid(hook, err)
	}
	changes, err := s.handler.(PreMigrationSourceHandler).PreMigrationSource(ctx, &PreMigrationSourceRequest{
		VMI:    vmi,
		Flags:  MigrationFlags(req.GetFlags()),
		Params: NewMigrationParams(req.GetParams()),
		Raw:    req,
	})
	if err := s.result(ctx, hook, vmi, err); err != nil {
		return nil, err
	}
	resp, err := changes.Response()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "plugin %s: %s: invalid migration changes: %v", s.plugin, hook, err)
	}
	return resp, nil
}

func (s *launcherService) invalid(hook string, err error) error {
	return status.Errorf(codes.InvalidArgument, "plugin %s: %s: %v", s.plugin, hook, err)
}

// result turns a handler's outcome into the call's status. A result that
// arrives after the caller gave up is reported as the context's error: the
// caller will not use it, and saying so keeps logs and metrics honest.
func (s *launcherService) result(ctx context.Context, hook string, vmi *kubevirtv1.VirtualMachineInstance, err error) error {
	return handlerResult(ctx, fmt.Sprintf("plugin %s: %s for VMI %s/%s", s.plugin, hook, vmi.Namespace, vmi.Name), err)
}

func handlerResult(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok {
		return status.Errorf(st.Code(), "%s: %s", what, st.Message())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.Errorf(status.FromContextError(err).Code(), "%s: %v", what, err)
	}
	return status.Errorf(codes.Unknown, "%s: %v", what, err)
}

func decodeVMI(b []byte) (*kubevirtv1.VirtualMachineInstance, error) {
	if len(b) == 0 {
		return nil, errors.New("request carries no VMI")
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := json.Unmarshal(b, vmi); err != nil {
		return nil, fmt.Errorf("decode VMI: %w", err)
	}
	return vmi, nil
}
