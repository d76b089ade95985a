// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"testing"

	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// What the guest of the KubeVirt phase printed of its NoCloud disk.
const noCloudReport = `KVP-GUEST cidata=mounted
KVP-GUEST cidata.network-config=ethernets:
KVP-GUEST cidata.network-config=  default:
KVP-GUEST cidata.network-config=    dhcp4: true
KVP-GUEST cidata.network-config=    match:
KVP-GUEST cidata.network-config=      macaddress: 02:ab:00:00:00:0a
KVP-GUEST cidata.network-config=  red:
KVP-GUEST cidata.network-config=    addresses:
KVP-GUEST cidata.network-config=    - 192.168.10.9/24
KVP-GUEST cidata.network-config=    match:
KVP-GUEST cidata.network-config=      macaddress: 02:ab:00:00:00:01
KVP-GUEST cidata.network-config=version: 2
KVP-GUEST ready=1
`

func TestNetworkConfigHasEachPart(t *testing.T) {
	r := guest.Parse(noCloudReport)
	if !networkConfigHas(r, redMAC, "192.168.10.9/24") || !networkConfigHas(r, kvDefaultMAC) {
		t.Fatal("the entries the guest read are not found")
	}
	for _, missing := range [][]string{
		{redMAC, "192.168.10.5/24"}, // another address than Multus gave
		{"02:ab:00:00:00:02"},       // another MAC
	} {
		if networkConfigHas(r, missing...) {
			t.Errorf("networkConfigHas(%q) = true, want false", missing)
		}
	}
	if networkConfigHas(guest.Parse("KVP-GUEST cidata=absent\nKVP-GUEST ready=1\n"), kvDefaultMAC) {
		t.Error("a guest without a NoCloud disk has no network-config")
	}
}
