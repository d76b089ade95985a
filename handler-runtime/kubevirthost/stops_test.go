// SPDX-License-Identifier: Apache-2.0

package kubevirthost

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
)

// At most MaxOwedStops stopping VMIs are remembered; the oldest goes first.
func TestOwedStopsForgetTheOldestPastTheirBound(t *testing.T) {
	var o owedStops
	start := time.Now()
	vmi := func(i int) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("vm-", i), UID: types.UID(fmt.Sprint(i))}}
	}
	for i := range MaxOwedStops + 1 {
		o.owe(vmi(i), start.Add(time.Duration(i)*time.Second))
	}
	if len(o.byKey) != MaxOwedStops {
		t.Fatalf("%d remembered, want %d", len(o.byKey), MaxOwedStops)
	}
	if _, ok := o.take(vmi(0)); ok {
		t.Error("the oldest stop is still remembered")
	}
	for _, i := range []int{1, MaxOwedStops} {
		if _, ok := o.take(vmi(i)); !ok {
			t.Errorf("stop %d was forgotten", i)
		}
	}
}
