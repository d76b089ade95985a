// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

const launcherNamespace = "launchers"

var namespaceOnce sync.Once

// ensureLauncherNamespace creates the namespace the launcher Pods go to,
// with the default ServiceAccount Pods need (no controller-manager here
// creates it).
func ensureLauncherNamespace(t *testing.T) {
	t.Helper()
	var err error
	namespaceOnce.Do(func() {
		ctx := t.Context()
		if err = admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: launcherNamespace}}); err != nil {
			return
		}
		err = admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: launcherNamespace}})
	})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", launcherNamespace, err)
	}
}

var launcherLabels = map[string]string{"kubevirt.io": "virt-launcher"}

// launcherPod is shaped like a virt-launcher Pod with the plugin sockets
// volume: compute mounts the whole volume; extra containers are added by
// the caller.
func launcherPod(name string, labels map[string]string, withVolume bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: launcherNamespace, Labels: labels},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{
				Name: "compute", Image: "virt-launcher",
				VolumeMounts: []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}},
			}},
		},
	}
	if withVolume {
		p.Spec.Volumes = []corev1.Volume{{
			Name: pluginv1alpha1.SocketsVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		}}
	} else {
		p.Spec.Containers[0].VolumeMounts = nil
	}
	return p
}

func sidecar(name, subPath string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "sidecar",
		VolumeMounts: []corev1.VolumeMount{{
			Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.PluginDir(name), SubPath: subPath,
		}},
	}
}

const policyMessage = "must mount volume kubevirt-plugin-sockets with a subPath of exactly one path segment"

var subPathPolicyOnce sync.Once

// applySubPathPolicy installs deploy/policies/launcher-sockets-subpath.yaml
// and waits until the API server enforces it: the policy takes effect
// shortly after creation, so a known-bad Pod is retried until refused.
func applySubPathPolicy(t *testing.T) {
	t.Helper()
	ensureLauncherNamespace(t)
	subPathPolicyOnce.Do(func() {
		applyManifest(t, "deploy", "policies", "launcher-sockets-subpath.yaml")
		i := 0
		poll.Until(t, "the subPath policy is enforced", 60*time.Second, func() error {
			i++
			p := launcherPod(fmt.Sprintf("policy-probe-%d", i), launcherLabels, true)
			p.Spec.Containers = append(p.Spec.Containers, sidecar("probe", ""))
			err := apiserver.CreateT(t, admin, p)
			if err == nil {
				return fmt.Errorf("policy not enforced yet: Pod %s admitted", p.Name)
			}
			if !strings.Contains(err.Error(), policyMessage) {
				return fmt.Errorf("Pod %s refused for another reason: %w", p.Name, err)
			}
			return nil
		})
	})
}

func TestLauncherPodSidecarMustMountSocketsWithOneSegmentSubPath(t *testing.T) {
	applySubPathPolicy(t)
	cases := []struct {
		name     string
		labels   map[string]string
		mutate   func(*corev1.Pod)
		rejected bool
		// refusal is the message expected; default policyMessage.
		refusal string
	}{
		{name: "sidecar without subPath", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", "")) }},
		{name: "sidecar with subPath a/b", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", "a/b")) }},
		// Pod validation refuses ".." before the policy is asked.
		{name: "sidecar with subPath ..", labels: launcherLabels, rejected: true, refusal: "must not contain '..'",
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", "..")) }},
		{name: "sidecar with subPath .", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", ".")) }},
		{name: "sidecar with subPath a/", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", "a/")) }},
		{name: "sidecar with subPathExpr", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) {
				c := sidecar("my-plugin", "")
				c.VolumeMounts[0].SubPathExpr = "$(POD_NAME)"
				p.Spec.Containers = append(p.Spec.Containers, c)
			}},
		{name: "native sidecar (init container) without subPath", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) {
				always := corev1.ContainerRestartPolicyAlways
				c := sidecar("my-plugin", "")
				c.RestartPolicy = &always
				p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			}},
		{name: "second sidecar wrong while the first is right", labels: launcherLabels, rejected: true,
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, sidecar("good", "good"), sidecar("bad", ""))
			}},
		{name: "sidecar with its plugin name as subPath", labels: launcherLabels,
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", "my-plugin")) }},
		{name: "two sidecars, each in its own directory", labels: launcherLabels,
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, sidecar("one", "one"), sidecar("two", "two"))
			}},
		{name: "compute mounts the whole volume and no sidecar", labels: launcherLabels, mutate: func(*corev1.Pod) {}},
		{name: "sidecar not mounting the volume", labels: launcherLabels,
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other", Image: "other"})
			}},
		{name: "not a launcher Pod", labels: map[string]string{"app": "other"},
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, sidecar("my-plugin", "")) }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := launcherPod(fmt.Sprintf("subpath-%d", i), tc.labels, true)
			tc.mutate(p)
			err := apiserver.CreateT(t, admin, p)
			refusal := tc.refusal
			if refusal == "" {
				refusal = policyMessage
			}
			switch {
			case tc.rejected && err == nil:
				t.Fatal("Pod admitted")
			case tc.rejected && !strings.Contains(err.Error(), refusal):
				t.Fatalf("Pod refused without the policy's message: %v", err)
			case tc.rejected:
				t.Logf("refused: %v", err)
			case err != nil:
				t.Fatalf("Pod refused: %v", err)
			}
		})
	}
}

// Ephemeral containers cannot have a subPath at all, so the policy keeps
// them (kubectl debug) away from the sockets volume altogether.
func TestEphemeralContainerMayNotMountTheSocketsVolume(t *testing.T) {
	applySubPathPolicy(t)
	ctx := t.Context()
	p := launcherPod("subpath-ephemeral", launcherLabels, true)
	if err := apiserver.CreateT(t, admin, p); err != nil {
		t.Fatal(err)
	}
	debug := func(name string, mounts []corev1.VolumeMount) error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "debug", VolumeMounts: mounts},
		})
		return admin.SubResource("ephemeralcontainers").Update(ctx, p)
	}
	err := debug("snooper", sidecar("snooper", "").VolumeMounts)
	if err == nil || !strings.Contains(err.Error(), policyMessage) {
		t.Fatalf("ephemeral container mounting the sockets volume: error %v, want the policy's refusal", err)
	}
	if err := debug("debugger", nil); err != nil {
		t.Fatalf("ephemeral container without the sockets volume refused: %v", err)
	}
}

func TestRefusalNamesTheOffendingContainers(t *testing.T) {
	applySubPathPolicy(t)
	p := launcherPod("subpath-names", launcherLabels, true)
	p.Spec.Containers = append(p.Spec.Containers, sidecar("fine", "fine"), sidecar("nosub", ""), sidecar("nested", "x/y"))
	p.Spec.InitContainers = []corev1.Container{sidecar("init", "")}
	err := apiserver.CreateT(t, admin, p)
	if err == nil {
		t.Fatal("Pod admitted")
	}
	if !strings.Contains(err.Error(), "offending containers: nosub, nested, init") {
		t.Fatalf("refusal %q does not name exactly nosub, nested and init", err)
	}
}
