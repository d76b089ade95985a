// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"strings"
	"testing"
)

const bootOne = `<domain type='qemu' id='1'>
  <name>default_no-plugin-vm</name>
  <devices>
    <serial type='unix'>
      <source mode='bind' path='/var/run/kubevirt-private/932873a5-949f-47ec-914e-f119f977b6c3/virt-serial0'/>
    </serial>
    <channel type='unix'>
      <source mode='bind' path='/var/run/libvirt/qemu/run/channel/1-default_no-plugin-vm/org.qemu.guest_agent.0'/>
    </channel>
  </devices>
</domain>
`

// Two boots of the same VM differ in the domain's id and the VMI's UID
// only; normalized, they are equal.
func TestNormalizedBootsOfOneVMAreEqual(t *testing.T) {
	other := strings.NewReplacer("id='1'", "id='12'", "932873a5-949f-47ec-914e-f119f977b6c3", "0c1d2e3f-0000-4000-8000-000000000001",
		"/channel/1-", "/channel/12-").Replace(bootOne)
	a := normalizeDomain(bootOne, "932873a5-949f-47ec-914e-f119f977b6c3")
	b := normalizeDomain(other, "0c1d2e3f-0000-4000-8000-000000000001")
	if line, diff := firstDifference(a, b); diff != "" {
		t.Fatalf("normalized boots differ at line %d: %s", line, diff)
	}
	if !strings.HasPrefix(a, "<domain type='qemu'>") || strings.Contains(a, "932873a5") || !strings.Contains(a, "/channel/ID-default") {
		t.Errorf("normalized domain:\n%s", a)
	}
}

// What a Plugin adds is not normalized away: the comparison names the
// first line that differs.
func TestNormalizedDomainKeepsAPluginsChange(t *testing.T) {
	changed := strings.Replace(bootOne, "  <name>default_no-plugin-vm</name>\n", "  <name>default_no-plugin-vm</name>\n  <title>VM default/no-plugin-vm</title>\n", 1)
	a := normalizeDomain(bootOne, "932873a5-949f-47ec-914e-f119f977b6c3")
	b := normalizeDomain(changed, "932873a5-949f-47ec-914e-f119f977b6c3")
	line, diff := firstDifference(a, b)
	if line != 3 || !strings.Contains(diff, "<title>") {
		t.Fatalf("first difference = line %d: %q, want line 3 naming the title", line, diff)
	}
}
