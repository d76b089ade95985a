// SPDX-License-Identifier: Apache-2.0

package sidecarinjection

import (
	"errors"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

const (
	// LauncherLabel and LauncherLabelValue mark the Pods KubeVirt runs a
	// VMI in; nothing else is injected.
	LauncherLabel      = "kubevirt.io"
	LauncherLabelValue = "virt-launcher"
	// ConfigMapLabel marks a ConfigMap, in the plugin-controller's
	// namespace, that holds one sidecar description under ConfigMapKey;
	// its value is the plugin's name. The webhook injects what these
	// ConfigMaps describe.
	ConfigMapLabel = "plugin.kubevirt.io/sidecar"
	// ConfigMapKey is the ConfigMap's key holding the description.
	ConfigMapKey = "sidecar.yaml"
	// SidecarUID is the user the sidecar runs as: KubeVirt's qemu user,
	// which owns the launcher's files.
	SidecarUID = 107
	// MaxSize bounds a description: it is a few dozen lines.
	MaxSize = 64 << 10
)

// DefaultGuaranteed is a sidecar's requests (and limits) in a Guaranteed
// launcher Pod when its description names none: 200m of CPU, as KubeVirt
// gives its own hook sidecars of dedicated-CPU VMIs, and 64Mi of memory. In
// a Guaranteed Pod the request is also the limit, the line past which the
// kernel kills the sidecar, so it keeps a wide margin over the Go samples'
// peak in their containers' cgroups on the kubelet (at most 4.4 MiB through
// a boot and a migration, docs/benchmarks-node.md).
func DefaultGuaranteed() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("200m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	}
}

// DefaultBurstable is a sidecar's resources in any other launcher Pod
// when its description names none: a 16Mi request, about four times the
// Go samples' working set measured on the kubelet (2.2 to 3.7 MiB, of
// which 1.8 to 3.2 MiB anonymous, peak 4.4 MiB), which is what the
// scheduler counts per VM; and a 64Mi limit, with room for a large
// domain's calls.
func DefaultBurstable() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("16Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
}

// Sidecar is one plugin's sidecar as it is injected.
type Sidecar struct {
	// Plugin is the Plugin's name: the container's name, and the
	// directory of the sockets volume it mounts (SocketsRoot/<plugin>).
	Plugin string `json:"plugin"`
	// Label is the label key that asks for the sidecar: a launcher Pod
	// carrying it (with any value) gets it. KubeVirt copies a VMI's labels
	// to its launcher Pod.
	Label string `json:"label"`
	// Image, ImagePullPolicy, Command, Args and Env are the container's.
	Image           string            `json:"image"`
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	Command         []string          `json:"command,omitempty"`
	Args            []string          `json:"args,omitempty"`
	Env             []corev1.EnvVar   `json:"env,omitempty"`
	// Resources are the sidecar's per QoS class of the launcher Pod.
	Resources Resources `json:"resources,omitzero"`
	// VolumeMounts are mounts besides the sockets directory, which is
	// always mounted.
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// Volumes are added to the Pod when it has none of that name (a
	// launcher Pod's own volumes, such as ephemeral-disks, are shared).
	Volumes []corev1.Volume `json:"volumes,omitempty"`
}

// Resources are a sidecar's resources in each kind of launcher Pod.
type Resources struct {
	// Guaranteed is the sidecar's requests, and its limits, in a
	// Guaranteed launcher Pod; it names CPU and memory. Default:
	// DefaultGuaranteed.
	Guaranteed corev1.ResourceList `json:"guaranteed,omitempty"`
	// Burstable is the sidecar's resources in any other launcher Pod.
	// Default: DefaultBurstable.
	Burstable *corev1.ResourceRequirements `json:"burstable,omitempty"`
}

// Parse reads a description, fills in the defaults and checks it. Errors
// name the field.
func Parse(data []byte) (*Sidecar, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("the description is %d bytes; at most %d are read", len(data), MaxSize)
	}
	var s Sidecar
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, err
	}
	s.Default()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Default fills in what the description left out.
func (s *Sidecar) Default() {
	if s.ImagePullPolicy == "" {
		s.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if len(s.Resources.Guaranteed) == 0 {
		s.Resources.Guaranteed = DefaultGuaranteed()
	}
	if s.Resources.Burstable == nil {
		b := DefaultBurstable()
		s.Resources.Burstable = &b
	}
}

// Validate checks a defaulted description.
func (s *Sidecar) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	for _, msg := range validation.IsDNS1123Label(s.Plugin) {
		add("plugin", "%q is not a container name: %s", s.Plugin, msg)
	}
	for _, msg := range validation.IsQualifiedName(s.Label) {
		add("label", "%q is not a label key: %s", s.Label, msg)
	}
	if strings.TrimSpace(s.Image) == "" {
		add("image", "required")
	}
	switch s.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		add("imagePullPolicy", "%q is not Always, IfNotPresent or Never", s.ImagePullPolicy)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := s.Resources.Guaranteed[r]; !ok || q.Sign() <= 0 {
			add("resources.guaranteed."+string(r), "required and above zero: a Guaranteed Pod's containers set both")
		}
	}
	for r, lim := range s.Resources.Burstable.Limits {
		if req, ok := s.Resources.Burstable.Requests[r]; ok && req.Cmp(lim) > 0 {
			add("resources.burstable.requests."+string(r), "%s is above its limit %s", req.String(), lim.String())
		}
	}
	mountPaths := map[string]bool{path.Join(pluginv1alpha1.SocketsRoot, s.Plugin): true}
	for i, m := range s.VolumeMounts {
		field := fmt.Sprintf("volumeMounts[%d]", i)
		switch {
		case m.Name == pluginv1alpha1.SocketsVolumeName:
			add(field+".name", "the sockets volume %s is mounted by the framework (subPath %s)", m.Name, s.Plugin)
		case !path.IsAbs(m.MountPath):
			add(field+".mountPath", "%q is not an absolute path", m.MountPath)
		case mountPaths[path.Clean(m.MountPath)]:
			add(field+".mountPath", "%s is mounted twice", m.MountPath)
		case strings.HasPrefix(path.Clean(m.MountPath)+"/", pluginv1alpha1.SocketsRoot+"/"):
			add(field+".mountPath", "%s is under %s, where the sockets directory is mounted", m.MountPath, pluginv1alpha1.SocketsRoot)
		}
		mountPaths[path.Clean(m.MountPath)] = true
	}
	volumes := map[string]bool{}
	for i, v := range s.Volumes {
		field := fmt.Sprintf("volumes[%d]", i)
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			add(field+".name", "%q: %s", v.Name, msg)
		}
		if v.Name == pluginv1alpha1.SocketsVolumeName {
			add(field+".name", "the sockets volume %s is added by the framework", v.Name)
		}
		if volumes[v.Name] {
			add(field+".name", "%s is named twice", v.Name)
		}
		volumes[v.Name] = true
	}
	return errors.Join(errs...)
}

// Container is the container injected into a launcher Pod, Guaranteed or
// not.
func (s *Sidecar) Container(guaranteed bool) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	no, yes := false, true
	uid := int64(SidecarUID)
	c := corev1.Container{
		Name:            s.Plugin,
		Image:           s.Image,
		ImagePullPolicy: s.ImagePullPolicy,
		Command:         s.Command,
		Args:            s.Args,
		Env:             s.Env,
		RestartPolicy:   &always,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			RunAsNonRoot:             &yes,
			RunAsUser:                &uid,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: append([]corev1.VolumeMount{{
			Name:      pluginv1alpha1.SocketsVolumeName,
			MountPath: path.Join(pluginv1alpha1.SocketsRoot, s.Plugin),
			SubPath:   s.Plugin,
		}}, s.VolumeMounts...),
	}
	if guaranteed {
		c.Resources = corev1.ResourceRequirements{Requests: s.Resources.Guaranteed.DeepCopy(), Limits: s.Resources.Guaranteed.DeepCopy()}
	} else {
		c.Resources = *s.Resources.Burstable.DeepCopy()
	}
	// The Pod gets its own copy of the description's lists.
	return *c.DeepCopy()
}

// volumes are the Pod volumes the sidecar needs: the sockets volume (an
// emptyDir) first, then its own.
func (s *Sidecar) volumes() []corev1.Volume {
	return append([]corev1.Volume{{
		Name:         pluginv1alpha1.SocketsVolumeName,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	}}, s.Volumes...)
}
