// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

func nodeCall(ctx context.Context, conn grpc.ClientConnInterface, hp sdk.NodeHookPoint, c NodeContract) error {
	_, err := hooksv1alpha1.NewNodeHookServiceClient(conn).ExecuteNodeHook(ctx, &hooksv1alpha1.ExecuteNodeHookRequest{
		HookPoint:   string(hp),
		Vmi:         c.VMI,
		NodeContext: &hooksv1alpha1.NodeContext{NodeName: c.NodeName},
	})
	return err
}

func checkNodeRepeatable(c NodeContract, hp sdk.NodeHookPoint) Check {
	return Check{
		Name: "Node/" + string(hp) + "/Repeatable",
		Rule: "node hooks may fire several times for one lifecycle event and are idempotent: a repeated call answers as the first did",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			var seen [3]codes.Code
			for i := range seen {
				callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
				err := nodeCall(callCtx, conn, hp, c)
				cancel()
				seen[i] = status.Code(err)
				if seen[i] == codes.Unimplemented || seen[i] == codes.Unavailable {
					return failed(fmt.Errorf("ExecuteNodeHook(%s) answered %v: %w", hp, seen[i], err))
				}
				if seen[i] != seen[0] {
					return failed(fmt.Errorf("ExecuteNodeHook(%s) called %d times for one event answered %v", hp, i+1, seen[:i+1]))
				}
			}
			return passed("three calls answered %v", seen[0])
		},
	}
}

func checkNodeContextHonoured(c NodeContract, hp sdk.NodeHookPoint) Check {
	return Check{
		Name: "Node/" + string(hp) + "/ContextHonoured",
		Rule: "node hooks honour the request context: a handler stops when its call is canceled or its deadline passes",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			return contextHonoured(ctx, "ExecuteNodeHook("+string(hp)+")", c.ShortDeadline, c.CallTimeout, c.Grace, func(ctx context.Context) error {
				return nodeCall(ctx, conn, hp, c)
			})
		},
	}
}
