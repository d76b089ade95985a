// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

const (
	namespace = "default"
	vmName    = "demo-vm"
	// domainName is the libvirt name KubeVirt gives the VM's domain.
	domainName = namespace + "_" + vmName
	// firmwareUUID is the VMI's firmware UUID, the domain's UUID.
	firmwareUUID = "5e9c7a1d-3b2f-4c8e-9a61-0d4f2b7e8c13"
	// networkStatusAnnotation is where Multus publishes the Pod's networks.
	networkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	// syncedLabel is the template label the label-syncer is configured to
	// sync (team.example.com/*) and the demo changes.
	syncedLabel = "team.example.com/tier"
	// redMAC is the MAC of the VMI's interface on the secondary network.
	redMAC = "02:ab:00:00:00:01"
	// labelSyncConfig is the label-syncer's --additional-launcher-labels-sync.
	labelSyncConfig = "team.example.com/*"
)

// samplePlugins are the sample sidecars the demo applies, with the
// container each one's injection policy adds to the launcher Pod.
var samplePlugins = []string{"cloudinit-network", "migration-tuner", "smbios-watchdog"}

// celPluginName is the demo's own CEL plugin.
const celPluginName = "cel-tuning"

// celPluginYAML is a GuestDefinition CEL hook: a title naming the VM and
// two vCPUs as one socket with two cores.
const celPluginYAML = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: cel-tuning
spec:
  condition: '"plugins.example.com/cel-tuning" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: >-
        Domain{
          Title: "demo VM " + vmi.Namespace + "/" + vmi.Name,
          VCPU: DomainVCPU{Value: 2u},
          CPU: DomainCPU{Topology: DomainCPUTopology{Sockets: 1, Cores: 2, Threads: 1}}
        }
`

// templateLabels are the labels of the VM template, and so of the VMI and
// of its launcher Pod: one opt-in label per plugin, the inputs of the
// sidecars, and the label the label-syncer keeps in sync.
func templateLabels() map[string]string {
	return map[string]string{
		"plugins.example.com/cel-tuning":        "enabled",
		"plugins.example.com/smbios-watchdog":   "enabled",
		"plugins.example.com/cloudinit-network": "enabled",
		"plugins.example.com/migration-tuner":   "enabled",
		"smbios.example.com/manufacturer":       "Example",
		"smbios.example.com/product":            "Edge-1",
		"watchdog.example.com/action":           "reset",
		"migration.example.com/parallel":        "2",
		syncedLabel:                             "silver",
	}
}

// networkStatus is what Multus would write on the launcher Pod: the pod
// network and the secondary network red-net.
const networkStatus = `[
  {"name": "kindnet", "interface": "eth0", "ips": ["10.244.1.17"], "mac": "0a:58:0a:f4:01:11", "default": true},
  {"name": "default/red-net", "interface": "pod7f1e2d3c4b5", "ips": ["192.168.10.5"], "mac": "` + redMAC + `",
   "dns": {"nameservers": ["192.168.10.1"], "search": ["red.example.com"]}}
]`

func vmiSpec() kubevirtv1.VirtualMachineInstanceSpec {
	return kubevirtv1.VirtualMachineInstanceSpec{
		Domain: kubevirtv1.DomainSpec{
			Firmware: &kubevirtv1.Firmware{UUID: firmwareUUID},
			Devices: kubevirtv1.Devices{
				Interfaces: []kubevirtv1.Interface{
					{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
					{Name: "red", MacAddress: redMAC, InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
				},
			},
			Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		},
		Networks: []kubevirtv1.Network{
			{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
			{Name: "red", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "red-net"}}},
		},
	}
}

func newVM() *kubevirtv1.VirtualMachine {
	running := kubevirtv1.RunStrategyAlways
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: vmName},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &running,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: templateLabels()},
				Spec:       vmiSpec(),
			},
		},
	}
}

// newVMI is the VMI virt-controller would create for vm.
func newVMI(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachineInstance {
	yes := true
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: vmName, Labels: templateLabels(),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: vmiSpec(),
	}
}

// newLauncherPod is a virt-launcher Pod virt-controller would create for
// vmi (suffix ends its name): labelled kubevirt.io=virt-launcher and kubevirt.io/created-by with
// the VMI's UID, controlled by the VMI, carrying the VMI's labels, the
// plugin sockets volume and the ephemeral disks volume. The injection
// policies add the sidecars when it is created.
func newLauncherPod(vmi *kubevirtv1.VirtualMachineInstance, suffix string) *corev1.Pod {
	yes := true
	labels := map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmi.UID), "vm.kubevirt.io/name": vmi.Name}
	maps.Copy(labels, vmi.Labels)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: "virt-launcher-" + vmName + "-" + suffix, Labels: labels,
			Annotations: map[string]string{networkStatusAnnotation: networkStatus},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmi.Name, UID: vmi.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "compute", Image: "kvp-libvirtd:latest",
				VolumeMounts: []corev1.VolumeMount{
					{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot},
					{Name: "ephemeral-disks", MountPath: pluginv1alpha1.EphemeralDiskDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: pluginv1alpha1.SocketsVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "ephemeral-disks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// baseDomain is the domain virt-launcher would generate for the VMI before
// any hook: a diskless TCG guest (no /dev/kvm in the libvirtd containers)
// with KubeVirt's SMBIOS system entries and the cloud-init ISO as a CD-ROM.
func baseDomain(isoPath string) *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type: "qemu",
		Name: domainName,
		UUID: firmwareUUID,
		Memory: &libvirtxml.DomainMemory{
			Value: 64, Unit: "MiB",
		},
		VCPU: &libvirtxml.DomainVCPU{Value: 1},
		SysInfo: []libvirtxml.DomainSysInfo{{SMBIOS: &libvirtxml.DomainSysInfoSMBIOS{
			System: &libvirtxml.DomainSysInfoSystem{Entry: []libvirtxml.DomainSysInfoEntry{
				{Name: "uuid", Value: firmwareUUID},
				{Name: "manufacturer", Value: "KubeVirt"},
				{Name: "family", Value: "KubeVirt"},
				{Name: "product", Value: "None"},
			}},
		}}},
		OS: &libvirtxml.DomainOS{
			Type:   &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "pc", Type: "hvm"},
			SMBios: &libvirtxml.DomainSMBios{Mode: "sysinfo"},
		},
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{{
				Device:   "cdrom",
				Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
				Source:   &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: isoPath}},
				Target:   &libvirtxml.DomainDiskTarget{Dev: "hda", Bus: "ide"},
				ReadOnly: &libvirtxml.DomainDiskReadOnly{},
				Alias:    &libvirtxml.DomainAlias{Name: "ua-cloudinitdisk"},
			}},
			Serials: []libvirtxml.DomainSerial{{Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}}},
		},
	}
}

// readManifests decodes every document of a YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeManifests(data, path)
}

func decodeManifests(data []byte, source string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// samplePath is a file of a sample in sample-sidecars.
func (s *scenario) samplePath(sample, file string) string {
	return filepath.Join(s.opts.Root, "sample-sidecars", sample, file)
}

// toTyped converts an unstructured object into out.
func toTyped(u *unstructured.Unstructured, out any) error {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
}

// mergePatch is a JSON merge patch setting one template label on a VM.
func templateLabelPatch(key, value string) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}}}})
	return b
}
