// SPDX-License-Identifier: Apache-2.0

package libvirtd_test

import (
	"context"
	"fmt"

	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

// Two daemons on one network, as a live migration test needs them: the
// host reaches each at URI(), the daemons reach each other at PeerURI().
func ExampleStart() {
	ctx := context.Background()
	nw, err := libvirtd.NewNetwork(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = nw.Remove(ctx) }()
	source, err := libvirtd.Start(ctx, libvirtd.Options{Network: nw, Alias: "source"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = source.Terminate(ctx) }()
	target, err := libvirtd.Start(ctx, libvirtd.Options{Network: nw, Alias: "target"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = target.Terminate(ctx) }()
	fmt.Println(source.URI(), "migrates to", target.PeerURI())
}
