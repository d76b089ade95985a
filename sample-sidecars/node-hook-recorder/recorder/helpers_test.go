// SPDX-License-Identifier: Apache-2.0

package recorder

import (
	"encoding/json"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

func sdkVMI(t *testing.T) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := json.Unmarshal(sdktest.VMIJSON("ns1", "vm1", nil, nil), vmi); err != nil {
		t.Fatal(err)
	}
	return vmi
}
