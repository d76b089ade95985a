// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// MinimalDomainXML is a small but complete KVM domain, the default input of
// the GuestDefinition checks.
const MinimalDomainXML = `<domain type="kvm">
  <name>default_testvmi</name>
  <uuid>5d1b9b4e-8a3c-4f5e-9a43-3f2a8a7c1e01</uuid>
  <memory unit="b">134217728</memory>
  <vcpu placement="static">1</vcpu>
  <os>
    <type arch="x86_64" machine="q35">hvm</type>
    <boot dev="hd"></boot>
  </os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type="file" device="disk">
      <driver name="qemu" type="raw" cache="none"></driver>
      <source file="/var/run/kubevirt-private/vmi-disks/rootdisk/disk.img"></source>
      <target dev="vda" bus="virtio"></target>
      <alias name="ua-rootdisk"></alias>
    </disk>
    <serial type="unix">
      <target port="0"></target>
      <source mode="bind" path="/var/run/kubevirt-private/5d1b9b4e/virt-serial0"></source>
    </serial>
  </devices>
</domain>`

// KubeVirtDomainXML is a domain as KubeVirt's converter generates it
// (disks, cloud-init, interfaces, channels, graphics, memballoon, KubeVirt
// metadata), the default input of the GuestDefinition checks: a sidecar
// must keep what it does not mean to change in a real domain, not only in
// a minimal one.
//
//go:embed testdata/domain_x86_64.xml
var KubeVirtDomainXML string

// VMIJSON returns the JSON of a minimal VirtualMachineInstance with the
// given namespace, name, labels and annotations (either may be nil).
func VMIJSON(namespace, name string, labels, annotations map[string]string) []byte {
	vmi := map[string]any{
		"apiVersion": "kubevirt.io/v1",
		"kind":       "VirtualMachineInstance",
		"metadata": map[string]any{
			"namespace":   namespace,
			"name":        name,
			"uid":         "5d1b9b4e-8a3c-4f5e-9a43-3f2a8a7c1e01",
			"labels":      labels,
			"annotations": annotations,
		},
		"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}}},
	}
	b, err := json.Marshal(vmi)
	if err != nil {
		panic(fmt.Sprintf("encode VMI: %v", err)) // only maps of strings: cannot happen
	}
	return b
}
