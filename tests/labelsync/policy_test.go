// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// subPathRefusal is part of the refusal of deploy/policies'
// launcher-sockets-subpath.yaml.
const subPathRefusal = "must mount volume kubevirt-plugin-sockets with a subPath of exactly one path segment"

// installSubPathPolicy creates the objects of
// deploy/policies/launcher-sockets-subpath.yaml, removes them when the
// test ends, and waits until the API server enforces the policy: a
// launcher Pod in ns breaking it (dry run) is refused.
func installSubPathPolicy(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	path, err := repo.Path("deploy", "policies", "launcher-sockets-subpath.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := server.Client.Create(ctx, obj); err != nil {
			t.Fatalf("%s: creating %s %s: %v", path, obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() {
			if err := server.Client.Delete(context.WithoutCancel(t.Context()), obj); err != nil {
				t.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		})
	}
	probeVMI := vmiObject(vmObject(ns, "probe", nil, nil), nil, nil)
	probeVMI.UID = "probe-uid"
	probe := greedyLauncherPod(probeVMI)
	poll.Until(t, "the sockets subPath policy enforced", waitTimeout, func() error {
		err := server.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		switch {
		case err == nil:
			return errors.New("a launcher Pod whose sidecar mounts the whole sockets volume is admitted")
		case !strings.Contains(err.Error(), subPathRefusal):
			return fmt.Errorf("refused for another reason: %w", err)
		}
		return nil
	})
}

// greedyLauncherPod is a launcher Pod of vmi the policy refuses: its
// sidecar "greedy" mounts the whole sockets volume (no subPath).
func greedyLauncherPod(vmi *kubevirtv1.VirtualMachineInstance) *corev1.Pod {
	return withGreedySidecar(launcherPodObject(vmi, nil, nil))
}

func withGreedySidecar(p *corev1.Pod) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{
		Name: pluginv1alpha1.SocketsVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})
	whole := corev1.VolumeMount{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, whole)
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "greedy", Image: "greedy", VolumeMounts: []corev1.VolumeMount{whole}})
	return p
}

// addEphemeralContainer adds a debug container to the Pod through the
// ephemeralcontainers subresource, as kubectl debug does.
func addEphemeralContainer(ctx context.Context, pod *corev1.Pod, name string, mounts []corev1.VolumeMount) error {
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return err
	}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "debug", VolumeMounts: mounts},
	})
	return server.Client.SubResource("ephemeralcontainers").Update(ctx, pod)
}

// TestLauncherPodAdmittedBeforeTheSubPathPolicyStillTakesMetadataPatches
// replays an upgrade: a launcher Pod that breaks the sockets subPath rule
// exists before the policy is installed. Afterwards the label syncer's
// label patch, an annotation patch and the removal of a finalizer go
// through, and so does a debug container without the sockets volume; a new
// Pod breaking the rule, and an ephemeral container mounting the volume,
// are refused.
func TestLauncherPodAdmittedBeforeTheSubPathPolicyStillTakesMetadataPatches(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	vm := vmObject(ns, "vm-upgrade", map[string]string{"ops.example.com/owner": "team-a"}, nil)
	if err := server.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	vmi := vmiObject(vm, map[string]string{"ops.example.com/owner": "team-a"}, nil)
	if err := server.Client.Create(ctx, vmi); err != nil {
		t.Fatal(err)
	}
	old := withGreedySidecar(launcherPodObject(vmi, map[string]string{"ops.example.com/owner": "team-a"}, nil))
	old.Finalizers = []string{holdFinalizer}
	if err := server.Client.Create(ctx, old); err != nil {
		t.Fatalf("creating the launcher Pod before the policy: %v", err)
	}
	t.Cleanup(func() { setFinalizers(t, old, nil) })
	r := running{vm: vm, vmi: vmi, pod: old}
	_, _, podUID := current(t, old)

	installSubPathPolicy(t, ns)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)

	patchTemplate(t, vm, map[string]any{"ops.example.com/owner": "team-b"}, nil)
	poll.Until(t, "the syncer's label patch on the old launcher Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b"})
	})
	if _, _, uid := current(t, old); uid != podUID {
		t.Fatalf("launcher Pod recreated: UID %s, was %s", uid, podUID)
	}
	if err := server.Client.Patch(ctx, old, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"notes.example.com/ticket":"T-1"}}}`))); err != nil {
		t.Errorf("annotation patch of the old launcher Pod refused: %v", err)
	}
	if err := addEphemeralContainer(ctx, old, "debugger", nil); err != nil {
		t.Errorf("debug container without the sockets volume refused on the old launcher Pod: %v", err)
	}
	err := addEphemeralContainer(ctx, old, "snooper", []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: "/snoop"}})
	if err == nil || !strings.Contains(err.Error(), subPathRefusal) || !strings.Contains(err.Error(), "offending containers: snooper") {
		t.Errorf("ephemeral container mounting the sockets volume: error %v, want the policy's refusal naming snooper alone", err)
	}
	setFinalizers(t, old, nil)

	fresh := greedyLauncherPod(vmi)
	err = server.Client.Create(ctx, fresh)
	if err == nil || !strings.Contains(err.Error(), subPathRefusal) || !strings.Contains(err.Error(), "offending containers: greedy") {
		t.Errorf("new launcher Pod breaking the rule: error %v, want the policy's refusal naming greedy", err)
	}
}
