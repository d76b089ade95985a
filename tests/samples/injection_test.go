// SPDX-License-Identifier: Apache-2.0

package samples

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
)

// forEachPath runs test on every injection path, as a subtest named
// after it.
func forEachPath(t *testing.T, test func(t *testing.T, in *injectionPath)) {
	for _, in := range setup(t) {
		t.Run(in.name, func(t *testing.T) { test(t, in) })
	}
}

// stored reads the Pod back as the API server keeps it.
func stored(t *testing.T, c client.Client, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatalf("reading Pod %s: %v", p.Name, err)
	}
	return got
}

// checkSidecar checks that the Pod holds the sample's sidecar as a native
// sidecar (an init container with restartPolicy Always, after the init
// containers the Pod came with, so that the kubelet stops it once compute
// has exited), mounting the sockets volume with the plugin name as subPath
// at the plugin directory and only volumes the Pod has, next to an
// unchanged compute container, with every volume it came with kept and a
// single sockets volume.
func checkSidecar(t *testing.T, s sample, before, after *corev1.Pod) {
	t.Helper()
	c := sidecar(after, s.name)
	if c == nil {
		t.Fatalf("no %s init container in %v (containers %v)", s.name, initContainerNames(after), containerNames(after))
	}
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("init container %s has restartPolicy %v, want Always: a native sidecar, which the kubelet stops once compute has exited", s.name, c.RestartPolicy)
	}
	if container(after, s.name) != nil {
		t.Errorf("%s is a regular container as well: it would keep the Pod running after the VM stops", s.name)
	}
	for i, want := range before.Spec.InitContainers {
		if i >= len(after.Spec.InitContainers) || after.Spec.InitContainers[i].Name != want.Name ||
			after.Spec.InitContainers[i].RestartPolicy != nil ||
			!equality.Semantic.DeepEqual(after.Spec.InitContainers[i].VolumeMounts, want.VolumeMounts) {
			t.Errorf("init containers %v, want the Pod's own %s unchanged at index %d", initContainerNames(after), want.Name, i)
		}
	}
	if want := "kvp-" + s.name + ":latest"; c.Image != want {
		t.Errorf("sidecar image %s, want %s", c.Image, want)
	}
	wantPath := strings.TrimSuffix(pluginv1alpha1.PluginDir(s.name), "/")
	var socketMounts []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if m.Name == pluginv1alpha1.SocketsVolumeName {
			socketMounts = append(socketMounts, m)
		}
		if len(volumes(after, m.Name)) != 1 {
			t.Errorf("sidecar mounts volume %s, which the Pod has %d times", m.Name, len(volumes(after, m.Name)))
		}
	}
	if len(socketMounts) != 1 || socketMounts[0].SubPath != s.name || socketMounts[0].MountPath != wantPath || socketMounts[0].SubPathExpr != "" {
		t.Errorf("sidecar mounts of %s: %+v, want one with subPath %s at %s", pluginv1alpha1.SocketsVolumeName, socketMounts, s.name, wantPath)
	}
	if compute := container(after, "compute"); compute == nil || !equality.Semantic.DeepEqual(compute.VolumeMounts, before.Spec.Containers[0].VolumeMounts) {
		t.Errorf("compute container changed: %+v", compute)
	}
	for _, v := range before.Spec.Volumes {
		got := volumes(after, v.Name)
		if len(got) != 1 || !equality.Semantic.DeepEqual(got[0].VolumeSource, v.VolumeSource) {
			t.Errorf("volume %s the Pod came with is now %+v", v.Name, got)
		}
	}
	sockets := volumes(after, pluginv1alpha1.SocketsVolumeName)
	if len(sockets) != 1 || sockets[0].EmptyDir == nil {
		t.Errorf("sockets volumes %+v, want one emptyDir", sockets)
	}
}

func TestSampleInjectionPoliciesAddANativeSidecarWithPluginSubPath(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		for _, s := range in.samples {
			for _, shape := range volumeShapes {
				t.Run(s.name+"/"+shape.String(), func(t *testing.T) {
					p := launcherPod(fmt.Sprintf("add-%s-%d", s.name, shape), map[string]string{s.optIn: "enabled"}, shape)
					before := p.DeepCopy()
					if err := apiserver.CreateT(t, in.c, p); err != nil {
						t.Fatalf("opted-in launcher Pod refused: %v", err)
					}
					after := stored(t, in.c, p)
					if got := containerNames(after); !slices.Equal(got, []string{"compute"}) {
						t.Fatalf("containers %v, want compute alone", got)
					}
					if got, want := initContainerNames(after), append(initContainerNames(before), s.name); !slices.Equal(got, want) {
						t.Fatalf("init containers %v, want %v", got, want)
					}
					checkSidecar(t, s, before, after)
				})
			}
		}
	})
}

// The PreBoot sample rewrites the cloud-init ISO: it must see the compute
// container's ephemeral disks at the same path, read the network status
// from a downward API file, and have a writable /tmp.
func TestCloudInitNetworkSidecarSharesEphemeralDisksAndReadsNetworkStatus(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		var s sample
		for _, c := range in.samples {
			if c.name == "cloudinit-network" {
				s = c
			}
		}
		if s.name == "" {
			t.Fatal("sample cloudinit-network has no injection policy")
		}
		for _, shape := range volumeShapes {
			t.Run(shape.String(), func(t *testing.T) {
				p := launcherPod(fmt.Sprintf("cloudinit-%d", shape), map[string]string{s.optIn: "enabled"}, shape)
				if err := apiserver.CreateT(t, in.c, p); err != nil {
					t.Fatalf("opted-in launcher Pod refused: %v", err)
				}
				after := stored(t, in.c, p)
				c := sidecar(after, s.name)
				if c == nil {
					t.Fatalf("no %s init container in %v", s.name, initContainerNames(after))
				}
				mounts := map[string]corev1.VolumeMount{}
				for _, m := range c.VolumeMounts {
					mounts[m.MountPath] = m
				}
				disks, ok := mounts[pluginv1alpha1.EphemeralDiskDir]
				if !ok || disks.Name != "ephemeral-disks" || disks.SubPath != "" {
					t.Errorf("mount at %s: %+v, want the whole ephemeral-disks volume", pluginv1alpha1.EphemeralDiskDir, disks)
				}
				if v := volumes(after, "ephemeral-disks"); len(v) != 1 || v[0].EmptyDir == nil {
					t.Errorf("ephemeral-disks volumes %+v, want one emptyDir", v)
				}
				tmp, ok := mounts["/tmp"]
				if v := volumes(after, tmp.Name); !ok || len(v) != 1 || v[0].EmptyDir == nil || tmp.ReadOnly {
					t.Errorf("mount at /tmp %+v of volumes %+v, want a writable emptyDir", tmp, v)
				}
				var statusFile string
				for _, m := range c.VolumeMounts {
					for _, v := range volumes(after, m.Name) {
						if v.DownwardAPI == nil {
							continue
						}
						for _, item := range v.DownwardAPI.Items {
							if item.FieldRef != nil && item.FieldRef.FieldPath == "metadata.annotations['k8s.v1.cni.cncf.io/network-status']" {
								statusFile = path.Join(m.MountPath, item.Path)
							}
						}
					}
				}
				if statusFile == "" {
					t.Fatalf("no downward API file with the network-status annotation among mounts %+v", c.VolumeMounts)
				}
				if !slices.Contains(c.Args, "--network-status-file="+statusFile) {
					t.Errorf("args %v do not read the network status from %s", c.Args, statusFile)
				}
			})
		}
	})
}

func TestSampleInjectionPoliciesLeaveOtherPodsAlone(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		for _, s := range in.samples {
			cases := []struct {
				name string
				pod  func(name string) *corev1.Pod
			}{
				{name: "launcher Pod of a VMI not opted in", pod: func(name string) *corev1.Pod {
					return launcherPod(name, map[string]string{"plugins.example.com/some-other-plugin": "enabled"}, withSocketsVolume)
				}},
				{name: "opt-in label on a Pod that is not a launcher", pod: func(name string) *corev1.Pod {
					p := launcherPod(name, map[string]string{s.optIn: "enabled"}, withoutVolumes)
					delete(p.Labels, "kubevirt.io")
					return p
				}},
				{name: "opt-in label on a launcher Pod that already has the native sidecar", pod: func(name string) *corev1.Pod {
					p := launcherPod(name, map[string]string{s.optIn: "enabled"}, withSocketsVolume)
					c := ownSidecar(s.name)
					c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
					p.Spec.InitContainers = append(p.Spec.InitContainers, c)
					return p
				}},
				// A second container of that name would make the Pod invalid.
				{name: "opt-in label on a launcher Pod that has the sidecar as a regular container", pod: func(name string) *corev1.Pod {
					p := launcherPod(name, map[string]string{s.optIn: "enabled"}, withSocketsVolume)
					p.Spec.Containers = append(p.Spec.Containers, ownSidecar(s.name))
					return p
				}},
			}
			for i, tc := range cases {
				t.Run(s.name+"/"+tc.name, func(t *testing.T) {
					p := tc.pod(fmt.Sprintf("alone-%s-%d", s.name, i))
					before := p.DeepCopy()
					if err := apiserver.CreateT(t, in.c, p); err != nil {
						t.Fatalf("Pod refused: %v", err)
					}
					after := stored(t, in.c, p)
					if got, want := containerImages(after), containerImages(before); !slices.Equal(got, want) {
						t.Errorf("containers %v, want %v as created", got, want)
					}
					if got, want := volumeNames(after), volumeNames(before); !slices.Equal(got, want) {
						t.Errorf("volumes %v, want %v as created", got, want)
					}
				})
			}
		}
	})
}

// Each policy sees the Pod as the previous ones left it: a launcher Pod of
// a VMI using every sample gets every sidecar and still a single sockets
// volume, each sidecar in its own directory.
func TestSampleInjectionPoliciesComposeOnOneLauncherPod(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		all := in.samples
		labels := map[string]string{}
		for _, s := range all {
			labels[s.optIn] = "enabled"
		}
		for _, shape := range volumeShapes {
			t.Run(shape.String(), func(t *testing.T) {
				p := launcherPod(fmt.Sprintf("compose-%d", shape), labels, shape)
				before := p.DeepCopy()
				if err := apiserver.CreateT(t, in.c, p); err != nil {
					t.Fatalf("launcher Pod using every sample refused: %v", err)
				}
				after := stored(t, in.c, p)
				if got := containerNames(after); !slices.Equal(got, []string{"compute"}) {
					t.Errorf("containers %v, want compute alone", got)
				}
				if got := len(after.Spec.InitContainers); got != len(before.Spec.InitContainers)+len(all) {
					t.Errorf("init containers %v, want the Pod's own and %d sidecars", initContainerNames(after), len(all))
				}
				for _, s := range all {
					checkSidecar(t, s, before, after)
				}
			})
		}
	})
}

// The subPath policy validates Pods after the mutating policies ran, so a
// Pod it admits with the sidecar in place shows the injected sidecar
// passes it.
func TestInjectedPodsPassTheLauncherSocketsPolicy(t *testing.T) {
	forEachPath(t, func(t *testing.T, in *injectionPath) {
		all := in.samples
		ctx := t.Context()
		for _, s := range all {
			t.Run(s.name, func(t *testing.T) {
				labels := map[string]string{s.optIn: "enabled"}
				// The policy is on for these very Pods: with a hand-made
				// sidecar mounting the whole volume next to the injected
				// one, the Pod is refused.
				bad := launcherPod("sockets-bad-"+s.name, labels, withSocketsVolume)
				bad.Spec.Containers = append(bad.Spec.Containers, corev1.Container{
					Name: "greedy", Image: "greedy",
					VolumeMounts: []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}},
				})
				err := in.c.Create(ctx, bad, client.DryRunAll)
				if err == nil || !strings.Contains(err.Error(), subPathPolicyMessage) || !strings.Contains(err.Error(), "offending containers: greedy") {
					t.Fatalf("opted-in Pod with a sidecar mounting the whole volume: error %v, want the subPath policy's refusal naming greedy alone", err)
				}
				for _, shape := range volumeShapes {
					p := launcherPod(fmt.Sprintf("sockets-%s-%d", s.name, shape), labels, shape)
					if err := apiserver.CreateT(t, in.c, p); err != nil {
						t.Fatalf("%s: mutated Pod refused: %v", shape, err)
					}
					if sidecar(stored(t, in.c, p), s.name) == nil {
						t.Fatalf("%s: Pod admitted without the %s sidecar", shape, s.name)
					}
				}
			})
		}
		t.Run("every sample on one Pod", func(t *testing.T) {
			labels := map[string]string{}
			for _, s := range all {
				labels[s.optIn] = "enabled"
			}
			p := launcherPod("sockets-all", labels, withoutVolumes)
			if err := apiserver.CreateT(t, in.c, p); err != nil {
				t.Fatalf("mutated Pod refused: %v", err)
			}
			if got := slices.Sorted(maps.Keys(labels)); len(stored(t, in.c, p).Spec.InitContainers) != len(got) {
				t.Fatalf("init containers %v, want one sidecar per label of %v", initContainerNames(stored(t, in.c, p)), got)
			}
		})
	})
}

// ownSidecar is a sidecar the Pod's author added under the sample's name.
func ownSidecar(name string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "own-build",
		VolumeMounts: []corev1.VolumeMount{{
			Name: pluginv1alpha1.SocketsVolumeName, SubPath: name,
			MountPath: strings.TrimSuffix(pluginv1alpha1.PluginDir(name), "/"),
		}},
	}
}
