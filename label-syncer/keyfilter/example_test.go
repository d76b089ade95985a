// SPDX-License-Identifier: Apache-2.0

package keyfilter_test

import (
	"fmt"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
)

func ExampleParse() {
	f, err := keyfilter.Parse("ops.example.com/*,team.example.com/owner")
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Match("ops.example.com/vm-id"), f.Match("team.example.com/owner"), f.Match("vm.kubevirt.io/name"))

	_, err = keyfilter.Parse("kubevirt.io/*")
	fmt.Println(err)
	// Output:
	// true true false
	// entry 1 ("kubevirt.io/*"): could match keys in the domain kubevirt.io, which KubeVirt owns (for example "kubevirt.io/x"); add kubevirt.io to --allow-owned-domains to sync it anyway
}

func ExampleNewGuard() {
	g, err := keyfilter.NewGuard([]string{"node-role.kubernetes.io"})
	if err != nil {
		panic(err)
	}
	f, err := g.Parse("app.kubernetes.io/*,node-role.kubernetes.io/worker")
	if err != nil {
		panic(err)
	}
	for _, e := range f.Admitted() {
		fmt.Printf("%s prefix=%v allowedOwned=%q\n", e.Text, e.Prefix, e.AllowedOwned)
	}
	// Output:
	// app.kubernetes.io/* prefix=true allowedOwned=""
	// node-role.kubernetes.io/worker prefix=false allowedOwned="node-role.kubernetes.io"
}
