// SPDX-License-Identifier: Apache-2.0

package labelsync_test

import (
	"fmt"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
)

func ExamplePlan() {
	f, err := keyfilter.Parse("ops.example.com/*")
	if err != nil {
		panic(err)
	}
	template := labelsync.Metadata{Labels: map[string]string{"ops.example.com/owner-a": "team-a-v2", "ops.example.com/dynamic-a": "enabled"}}
	vmi := labelsync.Metadata{Labels: map[string]string{"ops.example.com/owner-a": "team-a", "kubevirt.io/nodeName": "node01"}}

	change := labelsync.Plan(labelsync.Rules{Labels: f}, template, vmi)
	fmt.Println(change.Describe())
	patch, err := change.JSONPatch("3148fea0-fa94-4311-863a-fdb959ef15d2")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(patch))
	// Output:
	// labels: added ops.example.com/dynamic-a; updated ops.example.com/owner-a
	// [{"op":"test","path":"/metadata/uid","value":"3148fea0-fa94-4311-863a-fdb959ef15d2"},{"op":"test","path":"/metadata/labels","value":{"kubevirt.io/nodeName":"node01","ops.example.com/owner-a":"team-a"}},{"op":"replace","path":"/metadata/labels","value":{"kubevirt.io/nodeName":"node01","ops.example.com/dynamic-a":"enabled","ops.example.com/owner-a":"team-a-v2"}}]
}
