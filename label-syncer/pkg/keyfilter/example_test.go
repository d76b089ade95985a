package keyfilter_test

import (
	"fmt"

	"github.com/kubevirt-plugins/framework/label-syncer/pkg/keyfilter"
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
	// entry 1 ("kubevirt.io/*"): could match keys in the reserved domain kubevirt.io (for example "kubevirt.io/x")
}
