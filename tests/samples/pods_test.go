// SPDX-License-Identifier: Apache-2.0

package samples

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// volumeShape is what a launcher Pod holds before the policies run.
type volumeShape int

const (
	// withSocketsVolume is a launcher Pod as KubeVirt makes it with the
	// Plugins feature on: the sockets volume and the ephemeral disks, both
	// mounted whole by compute.
	withSocketsVolume volumeShape = iota
	// withOtherVolumes has volumes, but not the sockets volume.
	withOtherVolumes
	// withoutVolumes has no volumes at all.
	withoutVolumes
	// withInitContainer is withSocketsVolume plus an init container that
	// runs to completion, as KubeVirt adds for container disks: the
	// sidecar goes after it.
	withInitContainer
)

func (v volumeShape) String() string {
	return [...]string{"sockets volume present", "other volumes only", "no volumes", "init container present"}[v]
}

var volumeShapes = []volumeShape{withSocketsVolume, withOtherVolumes, withoutVolumes, withInitContainer}

// kubevirtInitContainer is the init container of the withInitContainer
// shape.
const kubevirtInitContainer = "container-disk-binary"

// socketsSizeLimit marks the sockets volume the Pod came with, to tell it
// from one a policy would add.
var socketsSizeLimit = resource.MustParse("1Mi")

// launcherPod is shaped like a virt-launcher Pod: the kubevirt.io label
// plus extra labels, a compute container, and the volumes of shape.
func launcherPod(name string, extraLabels map[string]string, shape volumeShape) *corev1.Pod {
	labels := map[string]string{"kubevirt.io": "virt-launcher"}
	maps.Copy(labels, extraLabels)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{
			// Otherwise the ServiceAccount admission plugin adds a token
			// volume, and no Pod would come without volumes.
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "compute", Image: "virt-launcher"}},
		},
	}
	switch shape {
	case withSocketsVolume, withInitContainer:
		limit := socketsSizeLimit
		p.Spec.Volumes = []corev1.Volume{
			{Name: pluginv1alpha1.SocketsVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}},
			{Name: "ephemeral-disks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot},
			{Name: "ephemeral-disks", MountPath: pluginv1alpha1.EphemeralDiskDir},
		}
		if shape == withInitContainer {
			p.Spec.InitContainers = []corev1.Container{{
				Name: kubevirtInitContainer, Image: "virt-launcher",
				VolumeMounts: []corev1.VolumeMount{{Name: "ephemeral-disks", MountPath: "/init/usr/bin"}},
			}}
		}
	case withOtherVolumes:
		p.Spec.Volumes = []corev1.Volume{{Name: "private", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "private", MountPath: "/var/run/kubevirt-private"}}
	}
	return p
}

// container returns the regular container of that name.
func container(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

// sidecar returns the init container of that name: an injected sidecar is
// one, with restartPolicy Always.
func sidecar(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

// volumes returns the Pod's volumes of that name (more than one would make
// the Pod invalid, but a broken policy could try).
func volumes(p *corev1.Pod, name string) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if v.Name == name {
			out = append(out, v)
		}
	}
	return out
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

func initContainerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, c.Name)
	}
	return out
}

// containerImages lists the init containers then the containers as
// name=image, init ones marked.
func containerImages(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, "init "+c.Name+"="+c.Image)
	}
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

func volumeNames(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		out = append(out, v.Name)
	}
	return out
}
