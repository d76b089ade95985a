package sockets

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial returns a gRPC client for a plugin's declared socketPath. The path is
// checked again (Check) each time the connection is established, right
// before connect(2), so a socket swapped for a symlink after the wait is
// refused. maxMessageSize bounds messages in both directions.
func (r *Root) Dial(pluginName, socketPath string, maxMessageSize int) (*grpc.ClientConn, error) {
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		path, err := r.Check(pluginName, socketPath)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	return grpc.NewClient("passthrough:///"+socketPath,
		grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessageSize),
			grpc.MaxCallSendMsgSize(maxMessageSize),
		),
	)
}
