// SPDX-License-Identifier: Apache-2.0

package samples

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
)

// qos is the QoS class a test launcher Pod is made with.
type qos string

const (
	// guaranteed is a launcher Pod as KubeVirt makes it for a VMI with
	// dedicatedCpuPlacement: integer CPUs, requests equal to limits in
	// every container.
	guaranteed qos = "Guaranteed"
	burstable  qos = "Burstable"
)

func resources(cpu, memory string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// qosLauncherPod is launcherPod with the resources of class q in each
// container it came with.
func qosLauncherPod(name string, labels map[string]string, shape volumeShape, q qos) *corev1.Pod {
	p := launcherPod(name, labels, shape)
	switch q {
	case guaranteed:
		p.Spec.Containers[0].Resources = resources("2", "1Gi")
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].Resources = resources("100m", "40M")
		}
	case burstable:
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
	}
	return p
}

var qosShapes = []volumeShape{withSocketsVolume, withInitContainer}

// createWithSidecar creates the Pod on the path and checks the stored
// Pod's QoS class and the resources of the sample's sidecar in it.
func createWithSidecar(t *testing.T, in *injectionPath, s sample, p *corev1.Pod, class corev1.PodQOSClass, want corev1.ResourceRequirements) {
	t.Helper()
	if err := apiserver.CreateT(t, in.c, p); err != nil {
		t.Fatalf("%s launcher Pod refused: %v", class, err)
	}
	after := stored(t, in.c, p)
	if after.Status.QOSClass != class {
		t.Errorf("status.qosClass %s with the sidecar, want %s", after.Status.QOSClass, class)
	}
	c := sidecar(after, s.name)
	if c == nil {
		t.Fatalf("no %s sidecar in %v", s.name, initContainerNames(after))
	}
	if !equality.Semantic.DeepEqual(c.Resources, want) {
		t.Errorf("sidecar resources %v, want %v", c.Resources, want)
	}
}

// A Guaranteed launcher Pod keeps its class with the sidecar in it, as
// read back from the API server (status.qosClass): the sidecar's requests
// equal its limits, those of the sample's description. Without that the
// kubelet's static CPU manager gives the VM no exclusive CPUs.
func TestGuaranteedLauncherPodsStayGuaranteed(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		for _, s := range in.samples {
			g := s.desc.Resources.Guaranteed
			want := corev1.ResourceRequirements{Requests: g, Limits: g}
			for _, shape := range qosShapes {
				t.Run(s.name+"/"+shape.String(), func(t *testing.T) {
					p := qosLauncherPod(fmt.Sprintf("guaranteed-%s-%d", s.name, shape), map[string]string{s.optIn: ""}, shape, guaranteed)
					createWithSidecar(t, in, s, p, corev1.PodQOSGuaranteed, want)
				})
			}
		}
	})
}

// A Burstable launcher Pod gets the sidecar with the light requests of
// the description, and stays Burstable.
func TestBurstableLauncherPodsGetLightSidecarRequests(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		for _, s := range in.samples {
			t.Run(s.name, func(t *testing.T) {
				p := qosLauncherPod("burstable-"+s.name, map[string]string{s.optIn: ""}, withSocketsVolume, burstable)
				createWithSidecar(t, in, s, p, corev1.PodQOSBurstable, *s.desc.Resources.Burstable)
			})
		}
	})
}

// A Guaranteed launcher Pod without the plugin's label gets no sidecar
// and keeps its class.
func TestUnlabelledGuaranteedLauncherPodsGetNothing(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		p := qosLauncherPod("guaranteed-unlabelled", map[string]string{"plugins.example.com/some-other-plugin": ""}, withInitContainer, guaranteed)
		if err := apiserver.CreateT(t, in.c, p); err != nil {
			t.Fatalf("launcher Pod refused: %v", err)
		}
		after := stored(t, in.c, p)
		if got := initContainerNames(after); !slices.Equal(got, []string{kubevirtInitContainer}) {
			t.Errorf("init containers %v, want the Pod's own alone", got)
		}
		if after.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("status.qosClass %s, want Guaranteed", after.Status.QOSClass)
		}
	})
}

// The policy (1.36) and the webhook (1.34) give the same Pod: for every
// sample, Pod shape and QoS class, the same Pod created on both API
// servers is stored with the same init containers, volumes and class;
// with every sample at once, the same sidecars (their order may differ:
// the API server orders policies, the webhook orders by plugin name).
func TestBothInjectionPathsGiveTheSamePod(t *testing.T) {
	all := setup(t)
	var policy, hook *injectionPath
	for _, in := range all {
		switch in.name {
		case policyPath:
			policy = in
		case webhookPath:
			hook = in
		}
	}
	if policy == nil || hook == nil {
		t.Fatal("want both injection paths")
	}
	compare := func(t *testing.T, name string, labels map[string]string, shape volumeShape, q qos, sorted bool) {
		var pods [2]*corev1.Pod
		for i, in := range []*injectionPath{policy, hook} {
			p := qosLauncherPod(name, labels, shape, q)
			if err := apiserver.CreateT(t, in.c, p); err != nil {
				t.Fatalf("%s path refused the Pod: %v", in.name, err)
			}
			pods[i] = stored(t, in.c, p)
			if sorted {
				slices.SortFunc(pods[i].Spec.InitContainers, func(a, b corev1.Container) int { return strings.Compare(a.Name, b.Name) })
				slices.SortFunc(pods[i].Spec.Volumes, func(a, b corev1.Volume) int { return strings.Compare(a.Name, b.Name) })
			}
		}
		if own := len(qosLauncherPod(name, labels, shape, q).Spec.InitContainers); len(pods[0].Spec.InitContainers) <= own {
			t.Fatal("the policy injected nothing: nothing to compare")
		}
		for i := range max(len(pods[0].Spec.InitContainers), len(pods[1].Spec.InitContainers)) {
			var a, b corev1.Container
			if i < len(pods[0].Spec.InitContainers) {
				a = pods[0].Spec.InitContainers[i]
			}
			if i < len(pods[1].Spec.InitContainers) {
				b = pods[1].Spec.InitContainers[i]
			}
			if !equality.Semantic.DeepEqual(a, b) {
				t.Errorf("init container %d differs:\npolicy:  %+v\nwebhook: %+v", i, a, b)
			}
		}
		if !equality.Semantic.DeepEqual(pods[0].Spec.Volumes, pods[1].Spec.Volumes) {
			t.Errorf("volumes differ:\npolicy:  %+v\nwebhook: %+v", pods[0].Spec.Volumes, pods[1].Spec.Volumes)
		}
		if pods[0].Status.QOSClass != pods[1].Status.QOSClass {
			t.Errorf("status.qosClass: policy %s, webhook %s", pods[0].Status.QOSClass, pods[1].Status.QOSClass)
		}
	}
	labels := map[string]string{}
	for _, s := range policy.samples {
		labels[s.optIn] = "enabled"
		for _, shape := range volumeShapes {
			for _, q := range []qos{guaranteed, burstable} {
				t.Run(fmt.Sprintf("%s/%s/%s", s.name, shape, q), func(t *testing.T) {
					compare(t, fmt.Sprintf("same-%s-%d-%s", s.name, shape, strings.ToLower(string(q))), map[string]string{s.optIn: ""}, shape, q, false)
				})
			}
		}
	}
	for _, q := range []qos{guaranteed, burstable} {
		t.Run("every sample/"+string(q), func(t *testing.T) {
			compare(t, "same-all-"+strings.ToLower(string(q)), labels, withInitContainer, q, true)
		})
	}
}
