// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package socketpath

import (
	"context"
	"net"
)

// Dial connects to the Unix socket at components below the root after
// checking them with Walk. Only the Linux version is the checked dial of
// the package documentation; here a component swapped between the check
// and connect(2) is not detected.
func (r *Root) Dial(ctx context.Context, components []string) (net.Conn, error) {
	path, err := r.Walk(components)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}
