// SPDX-License-Identifier: Apache-2.0

package sockets

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial returns a gRPC client for a plugin's declared socketPath. Each time
// the connection is established the path is checked again and connected
// with the checked dial of api/socketpath (Root.Dial, see its package
// documentation): a symlink swapped in after the wait is refused.
// maxMessageSize bounds messages in both directions; opts are added to the
// client's options.
func (r *Root) Dial(pluginName, socketPath string, maxMessageSize int, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		parts, err := relative(pluginName, socketPath)
		if err != nil {
			return nil, err
		}
		return r.fs.Dial(ctx, parts)
	}
	return grpc.NewClient("passthrough:///"+socketPath, append([]grpc.DialOption{
		grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessageSize),
			grpc.MaxCallSendMsgSize(maxMessageSize),
		),
	}, opts...)...)
}
