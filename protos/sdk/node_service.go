// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

type nodeService struct {
	hooksv1alpha1.UnimplementedNodeHookServiceServer
	socket  string
	handler NodeHookHandler
}

var _ hooksv1alpha1.NodeHookServiceServer = (*nodeService)(nil)

func (s *nodeService) ExecuteNodeHook(ctx context.Context, req *hooksv1alpha1.ExecuteNodeHookRequest) (*hooksv1alpha1.ExecuteNodeHookResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	point := NodeHookPoint(req.GetHookPoint())
	if !knownNodeHookPoint(point) {
		return nil, status.Errorf(codes.InvalidArgument, "node hook server %s: unknown hook point %q", s.socket, point)
	}
	vmi, err := decodeVMI(req.GetVmi())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "node hook server %s: %s: %v", s.socket, point, err)
	}
	err = s.handler.ExecuteNodeHook(ctx, &NodeHookRequest{
		HookPoint: point,
		VMI:       vmi,
		NodeName:  req.GetNodeContext().GetNodeName(),
		Raw:       req,
	})
	what := fmt.Sprintf("node hook server %s: %s for VMI %s/%s", s.socket, point, vmi.Namespace, vmi.Name)
	if err := handlerResult(ctx, what, err); err != nil {
		return nil, err
	}
	return &hooksv1alpha1.ExecuteNodeHookResponse{}, nil
}

func knownNodeHookPoint(p NodeHookPoint) bool {
	return slices.Contains(pluginv1alpha1.NodeHookPoints, p)
}
