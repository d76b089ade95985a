// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
)

const (
	vmNamespace = "default"
	// syncedLabel is under the label-syncer's configured prefix
	// (deploy/label-syncer: --additional-launcher-labels-sync=ops.example.com/*).
	syncedLabel = "ops.example.com/tier"
	// networkStatusAnnotation is where Multus publishes a Pod's networks;
	// cloudinit-network reads it.
	networkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	redMAC                  = "02:ab:00:00:00:01"
	launcherImage           = "kvp-standin-virt-launcher:latest"
	handlerFinalizer        = "standin.kubevirt-plugins.io/virt-handler"
	migrationConfigKey      = "standin.kubevirt-plugins.io/migration-config"
	// podFinalizer keeps a launcher Pod, once its VMI is gone and the
	// garbage collector deletes it, until the scenario has seen how it
	// ended.
	podFinalizer = "standin.kubevirt-plugins.io/scenario"
)

// samples are the sample plugins applied, each with the sidecar its
// sidecar.yaml describes, which the chosen injection path adds to launcher
// Pods.
var samples = []string{"cloudinit-network", "migration-tuner", "smbios-watchdog"}

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
          Title: "VM " + vmi.Namespace + "/" + vmi.Name,
          VCPU: DomainVCPU{Value: 2u},
          CPU: DomainCPU{Topology: DomainCPUTopology{Sockets: 1, Cores: 2, Threads: 1}}
        }
`

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

func vmiSpec(uuid string) kubevirtv1.VirtualMachineInstanceSpec {
	return kubevirtv1.VirtualMachineInstanceSpec{
		Domain: kubevirtv1.DomainSpec{
			Firmware: &kubevirtv1.Firmware{UUID: types.UID(uuid)},
			Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
				{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
				{Name: "red", MacAddress: redMAC, InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
			}},
			// What the test guest needs to boot (tests/framework/guest).
			Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("192Mi")}},
		},
		Networks: []kubevirtv1.Network{
			{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
			{Name: "red", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "red-net"}}},
		},
	}
}

// newDedicatedVM is a VM with dedicated CPUs: one core placed on an
// exclusive CPU (spec.domain.cpu.dedicatedCpuPlacement), which KubeVirt
// gives a Guaranteed launcher Pod.
func newDedicatedVM(name, uuid string) *kubevirtv1.VirtualMachine {
	vm := newVM(name, uuid)
	d := &vm.Spec.Template.Spec.Domain
	d.CPU = &kubevirtv1.CPU{Cores: 1, DedicatedCPUPlacement: true}
	d.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	d.Resources.Limits = d.Resources.Requests.DeepCopy()
	return vm
}

// launcherOverhead is what a launcher Pod's compute container needs besides
// the guest's memory: libvirtd, QEMU (TCG) and the launcher (448Mi with the
// stand-in's 64Mi diskless guest ran on both minors; kept with the 192Mi
// test guest).
var launcherOverhead = resource.MustParse("448Mi")

// launcherResources are the compute container's resources for vmi. A VMI
// with dedicated CPUs gets, as virt-controller gives it, requests equal to
// limits: its vCPUs as whole CPUs, and its memory plus launcherOverhead,
// so that the Pod is Guaranteed and the kubelet's static CPU manager (where
// it runs) gives compute exclusive CPUs. Any other VMI's launcher sets
// none here (the stand-in guest is tiny).
func launcherResources(vmi *kubevirtv1.VirtualMachineInstance) corev1.ResourceRequirements {
	cpu := vmi.Spec.Domain.CPU
	if cpu == nil || !cpu.DedicatedCPUPlacement {
		return corev1.ResourceRequirements{}
	}
	vcpus := int64(max(cpu.Cores, 1) * max(cpu.Sockets, 1) * max(cpu.Threads, 1))
	mem := vmi.Spec.Domain.Resources.Requests.Memory().DeepCopy()
	mem.Add(launcherOverhead)
	list := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(vcpus, resource.DecimalSI),
		corev1.ResourceMemory: mem,
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

func newVM(name, uuid string) *kubevirtv1.VirtualMachine {
	running := kubevirtv1.RunStrategyAlways
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmNamespace, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &running,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: templateLabels()},
				Spec:       vmiSpec(uuid),
			},
		},
	}
}

// newVMI is the VMI virt-controller creates for vm, with the finalizer the
// virt-handler stand-in releases once it stopped the VM.
func newVMI(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachineInstance {
	yes := true
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vm.Namespace, Name: vm.Name, Labels: maps.Clone(vm.Spec.Template.ObjectMeta.Labels),
			Finalizers: []string{handlerFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: *vm.Spec.Template.Spec.DeepCopy(),
	}
}

// networkStatus is what Multus would write on the launcher Pod.
const networkStatus = `[
  {"name": "default", "interface": "eth0", "ips": ["10.244.1.17"], "mac": "0a:58:0a:f4:01:11", "default": true},
  {"name": "default/red-net", "interface": "pod7f1e2d3c4b5", "ips": ["192.168.10.5"], "mac": "` + redMAC + `",
   "dns": {"nameservers": ["192.168.10.1"], "search": ["red.example.com"]}}
]`

// newLauncherPod is the launcher Pod virt-controller creates for vmi, on
// node (through the scheduler, by node name label): labelled
// kubevirt.io=virt-launcher and with the VMI's labels, controlled by the
// VMI, with the command sockets, plugin sockets and ephemeral disks
// volumes, and the resources launcherResources gives compute (Guaranteed
// for dedicated CPUs). It completes when compute exits (restartPolicy
// Never), once the kubelet has stopped its native sidecars.
func newLauncherPod(vmi *kubevirtv1.VirtualMachineInstance, suffix, node string) *corev1.Pod {
	yes := true
	labels := map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmi.UID), "vm.kubevirt.io/name": vmi.Name}
	maps.Copy(labels, vmi.Labels)
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vmi.Namespace, Name: "virt-launcher-" + vmi.Name + "-" + suffix, Labels: labels,
			Annotations: map[string]string{networkStatusAnnotation: networkStatus},
			Finalizers:  []string{podFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmi.Name, UID: vmi.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: "compute", Image: launcherImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Resources: launcherResources(vmi),
				VolumeMounts: []corev1.VolumeMount{
					{Name: cmdsock.VolumeName, MountPath: cmdsock.MountPath},
					{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot},
					{Name: "ephemeral-disks", MountPath: pluginv1alpha1.EphemeralDiskDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: cmdsock.VolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: pluginv1alpha1.SocketsVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "ephemeral-disks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}
