// SPDX-License-Identifier: Apache-2.0

package sidecarinjection_test

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
)

const minimal = `
plugin: my-plugin
label: plugins.example.com/my-plugin
image: example.com/my-plugin:v1
`

func TestParseFillsInTheDefaults(t *testing.T) {
	s, err := sidecarinjection.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy %q, want IfNotPresent", s.ImagePullPolicy)
	}
	g := s.Resources.Guaranteed
	if g.Cpu().String() != "200m" || g.Memory().String() != "64Mi" {
		t.Errorf("guaranteed %v, want 200m and 64Mi", g)
	}
	b := s.Resources.Burstable
	if b.Requests.Cpu().String() != "10m" || b.Requests.Memory().String() != "16Mi" || b.Limits.Memory().String() != "64Mi" {
		t.Errorf("burstable %v, want 10m/16Mi requested, 64Mi limit", b)
	}
}

func TestParseNamesTheFieldOfEachProblem(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"PluginNotAContainerName", "plugin: My_Plugin\nlabel: a/b\nimage: x", `plugin: "My_Plugin" is not a container name`},
		{"LabelNotALabelKey", "plugin: p\nlabel: 'a b'\nimage: x", `label: "a b" is not a label key`},
		{"ImageMissing", "plugin: p\nlabel: a/b", "image: required"},
		{"PullPolicyUnknown", "plugin: p\nlabel: a/b\nimage: x\nimagePullPolicy: Sometimes", `imagePullPolicy: "Sometimes"`},
		{"GuaranteedWithoutCPU", "plugin: p\nlabel: a/b\nimage: x\nresources: {guaranteed: {memory: 64Mi}}", "resources.guaranteed.cpu: required"},
		{"BurstableRequestAboveLimit", "plugin: p\nlabel: a/b\nimage: x\nresources: {burstable: {requests: {memory: 1Gi}, limits: {memory: 64Mi}}}",
			"resources.burstable.requests.memory: 1Gi is above its limit 64Mi"},
		{"MountsTheSocketsVolume", "plugin: p\nlabel: a/b\nimage: x\nvolumeMounts: [{name: kubevirt-plugin-sockets, mountPath: /s}]",
			"volumeMounts[0].name: the sockets volume kubevirt-plugin-sockets is mounted by the framework"},
		{"MountsUnderTheSocketsRoot", "plugin: p\nlabel: a/b\nimage: x\nvolumeMounts: [{name: v, mountPath: /var/run/kubevirt-plugin/other}]",
			"volumeMounts[0].mountPath: /var/run/kubevirt-plugin/other is under /var/run/kubevirt-plugin"},
		{"RelativeMountPath", "plugin: p\nlabel: a/b\nimage: x\nvolumeMounts: [{name: v, mountPath: tmp}]", `volumeMounts[0].mountPath: "tmp" is not an absolute path`},
		{"AddsTheSocketsVolume", "plugin: p\nlabel: a/b\nimage: x\nvolumes: [{name: kubevirt-plugin-sockets, emptyDir: {}}]",
			"volumes[0].name: the sockets volume kubevirt-plugin-sockets is added by the framework"},
		{"VolumeTwice", "plugin: p\nlabel: a/b\nimage: x\nvolumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}]", "volumes[1].name: v is named twice"},
		{"UnknownField", "plugin: p\nlabel: a/b\nimage: x\nsecurityContext: {privileged: true}", `unknown field "securityContext"`},
		{"TooLarge", "plugin: p\n#" + strings.Repeat("x", sidecarinjection.MaxSize), "at most 65536 are read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sidecarinjection.Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestContainerIsANativeSidecarWithItsOwnSocketsDirectory(t *testing.T) {
	s, err := sidecarinjection.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Container(false)
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("restartPolicy %v, want Always (a native sidecar)", c.RestartPolicy)
	}
	m := c.VolumeMounts[0]
	if m.Name != "kubevirt-plugin-sockets" || m.SubPath != "my-plugin" || m.MountPath != "/var/run/kubevirt-plugin/my-plugin" {
		t.Errorf("first mount %+v, want the sockets volume, subPath my-plugin at /var/run/kubevirt-plugin/my-plugin", m)
	}
	sc := c.SecurityContext
	if sc == nil || *sc.RunAsUser != 107 || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("securityContext %+v, want UID 107, non-root, read-only root, no escalation, all capabilities dropped", sc)
	}
	withArgs, err := sidecarinjection.Parse([]byte(minimal + "args: [--verbose]\n"))
	if err != nil {
		t.Fatal(err)
	}
	first := withArgs.Container(false)
	first.Args[0] = "changed"
	first.Resources.Requests[corev1.ResourceCPU] = q("3")
	if again := withArgs.Container(false); again.Args[0] != "--verbose" || again.Resources.Requests.Cpu().String() != "10m" {
		t.Errorf("a change to one injected container changed the next one: args %v, requests %v", again.Args, again.Resources.Requests)
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func limited(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for name, v := range map[corev1.ResourceName][2]string{corev1.ResourceCPU: {cpuReq, cpuLim}, corev1.ResourceMemory: {memReq, memLim}} {
		if v[0] != "" {
			r.Requests[name] = q(v[0])
		}
		if v[1] != "" {
			r.Limits[name] = q(v[1])
		}
	}
	return r
}

func TestGuaranteedFollowsTheQoSRule(t *testing.T) {
	cases := []struct {
		name       string
		containers []corev1.ResourceRequirements
		init       []corev1.ResourceRequirements
		want       bool
	}{
		{"RequestsEqualLimits", []corev1.ResourceRequirements{limited("1", "1", "1Gi", "1Gi")}, nil, true},
		{"EqualInOtherUnits", []corev1.ResourceRequirements{limited("1000m", "1", "1024Mi", "1Gi")}, nil, true},
		{"RequestsLeftOut", []corev1.ResourceRequirements{limited("", "2", "", "1Gi")}, nil, true},
		{"CPURequestBelowLimit", []corev1.ResourceRequirements{limited("500m", "1", "1Gi", "1Gi")}, nil, false},
		{"NoCPULimit", []corev1.ResourceRequirements{limited("1", "", "1Gi", "1Gi")}, nil, false},
		{"NoResources", []corev1.ResourceRequirements{{}}, nil, false},
		{"OneContainerOfTwoBurstable", []corev1.ResourceRequirements{limited("1", "1", "1Gi", "1Gi"), limited("10m", "", "16Mi", "64Mi")}, nil, false},
		{"InitContainerBurstable", []corev1.ResourceRequirements{limited("1", "1", "1Gi", "1Gi")}, []corev1.ResourceRequirements{limited("10m", "", "16Mi", "")}, false},
		{"InitContainerGuaranteed", []corev1.ResourceRequirements{limited("1", "1", "1Gi", "1Gi")}, []corev1.ResourceRequirements{limited("100m", "100m", "16Mi", "16Mi")}, true},
		{"ZeroLimit", []corev1.ResourceRequirements{limited("0", "0", "1Gi", "1Gi")}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var spec corev1.PodSpec
			for i, r := range tc.containers {
				spec.Containers = append(spec.Containers, corev1.Container{Name: "c" + string(rune('a'+i)), Resources: r})
			}
			for i, r := range tc.init {
				spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: "i" + string(rune('a'+i)), Resources: r})
			}
			if got := sidecarinjection.Guaranteed(&spec); got != tc.want {
				t.Errorf("Guaranteed = %v, want %v", got, tc.want)
			}
		})
	}
}

func launcher(labels map[string]string, compute corev1.ResourceRequirements) *corev1.Pod {
	l := map[string]string{"kubevirt.io": "virt-launcher"}
	maps.Copy(l, labels)
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "compute", Resources: compute}},
		Volumes:    []corev1.Volume{{Name: "kubevirt-plugin-sockets", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	p.Labels = l
	return p
}

func TestInjectKeepsAGuaranteedPodGuaranteed(t *testing.T) {
	s, _ := sidecarinjection.Parse([]byte(minimal))
	other, _ := sidecarinjection.Parse([]byte("plugin: other\nlabel: plugins.example.com/other\nimage: x"))
	pod := launcher(map[string]string{s.Label: "", other.Label: "on"}, limited("2", "2", "1Gi", "1Gi"))
	if added := sidecarinjection.Inject(pod, []*sidecarinjection.Sidecar{s, other}); len(added) != 2 {
		t.Fatalf("added %v, want both", added)
	}
	if !sidecarinjection.Guaranteed(&pod.Spec) {
		t.Error("the Pod is no longer Guaranteed")
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Resources.Requests.Cpu().Cmp(*c.Resources.Limits.Cpu()) != 0 {
			t.Errorf("sidecar %s: requests %v, limits %v", c.Name, c.Resources.Requests, c.Resources.Limits)
		}
	}
}

func TestInjectGivesABurstablePodLightRequests(t *testing.T) {
	s, _ := sidecarinjection.Parse([]byte(minimal))
	pod := launcher(map[string]string{s.Label: "x"}, limited("100m", "", "1Gi", "1Gi"))
	sidecarinjection.Inject(pod, []*sidecarinjection.Sidecar{s})
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("init containers %v, want the sidecar", pod.Spec.InitContainers)
	}
	r := pod.Spec.InitContainers[0].Resources
	if r.Requests.Cpu().String() != "10m" || r.Limits.Cpu() != nil && !r.Limits.Cpu().IsZero() {
		t.Errorf("resources %v, want the burstable defaults", r)
	}
}

func TestInjectLeavesOtherPodsAlone(t *testing.T) {
	s, _ := sidecarinjection.Parse([]byte(minimal))
	cases := map[string]*corev1.Pod{
		"WithoutTheLabel":  launcher(nil, corev1.ResourceRequirements{}),
		"NotALauncher":     {Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
		"ContainerPresent": launcher(map[string]string{s.Label: ""}, corev1.ResourceRequirements{}),
		"InitContainerPresent": func() *corev1.Pod {
			p := launcher(map[string]string{s.Label: ""}, corev1.ResourceRequirements{})
			p.Spec.InitContainers = []corev1.Container{{Name: "my-plugin"}}
			return p
		}(),
	}
	cases["NotALauncher"].Labels = map[string]string{s.Label: ""}
	cases["ContainerPresent"].Spec.Containers = append(cases["ContainerPresent"].Spec.Containers, corev1.Container{Name: "my-plugin"})
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			before := pod.DeepCopy()
			if added := sidecarinjection.Inject(pod, []*sidecarinjection.Sidecar{s}); len(added) != 0 || len(pod.Spec.InitContainers) != len(before.Spec.InitContainers) || len(pod.Spec.Volumes) != len(before.Spec.Volumes) {
				t.Errorf("added %v to a Pod that does not want it", added)
			}
		})
	}
}

func TestInjectAddsOnlyTheVolumesThePodLacks(t *testing.T) {
	s, err := sidecarinjection.Parse([]byte(minimal + "volumes: [{name: ephemeral-disks, emptyDir: {}}, {name: my-tmp, emptyDir: {}}]\n" +
		"volumeMounts: [{name: ephemeral-disks, mountPath: /var/run/kubevirt-ephemeral-disks}, {name: my-tmp, mountPath: /tmp}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pod := launcher(map[string]string{s.Label: ""}, corev1.ResourceRequirements{})
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "ephemeral-disks", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/keep"}}})
	sidecarinjection.Inject(pod, []*sidecarinjection.Sidecar{s})
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	if strings.Join(names, ",") != "kubevirt-plugin-sockets,ephemeral-disks,my-tmp" {
		t.Errorf("volumes %v, want the Pod's two and my-tmp", names)
	}
	if pod.Spec.Volumes[1].HostPath == nil {
		t.Error("the Pod's own ephemeral-disks volume was replaced")
	}
}

func TestInjectCreatesTheSocketsVolumeWhenMissing(t *testing.T) {
	s, _ := sidecarinjection.Parse([]byte(minimal))
	pod := launcher(map[string]string{s.Label: ""}, corev1.ResourceRequirements{})
	pod.Spec.Volumes = nil
	sidecarinjection.Inject(pod, []*sidecarinjection.Sidecar{s})
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Name != "kubevirt-plugin-sockets" || pod.Spec.Volumes[0].EmptyDir == nil {
		t.Errorf("volumes %+v, want the sockets emptyDir", pod.Spec.Volumes)
	}
}
