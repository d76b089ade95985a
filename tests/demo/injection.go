package demo

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// sampleBinding is the MutatingAdmissionPolicyBinding of a sample's
// injection policy.
type sampleBinding struct {
	sample string
	obj    *unstructured.Unstructured
}

var deniedByBinding = regexp.MustCompile(`with binding '([^']+)' denied request`)

// bindInjectionPolicies binds the samples' injection policies and waits,
// with dry runs of pod's creation, until they inject their sidecars. A
// policy the API server cannot apply (it denies the Pod) is unbound again
// and reported as a warning; withSidecars then adds its sidecar as the
// policy describes it (fallbackSidecar), so that the rest of the scenario
// can go on.
func (s *scenario) bindInjectionPolicies(ctx context.Context, pod *corev1.Pod) error {
	c := s.server.Client
	bound := map[string]sampleBinding{}
	for _, b := range s.bindings {
		if err := c.Create(ctx, b.obj.DeepCopy()); err != nil {
			return fmt.Errorf("create MutatingAdmissionPolicyBinding %s: %w", b.obj.GetName(), err)
		}
		bound[b.obj.GetName()] = b
		s.show("created MutatingAdmissionPolicyBinding " + b.obj.GetName())
	}
	// Bindings take effect when the API server's policy informer sees
	// them: dry-run until every working policy has injected its sidecar.
	err := waitFor(ctx, "the injection policies to take effect", func() (bool, error) {
		try := pod.DeepCopy()
		err := c.Create(ctx, try, client.DryRunAll)
		if m := deniedByBinding.FindStringSubmatch(errText(err)); m != nil {
			b, ok := bound[m[1]]
			if !ok {
				return false, err // unbound already; the informer lags
			}
			s.show(fmt.Sprintf("NOTE: the API server refuses the %s injection policy: %v", b.sample, err))
			s.show(fmt.Sprintf("NOTE: unbinding it; the demo adds the %s sidecar as the policy describes it", b.sample))
			if err := c.Delete(ctx, b.obj.DeepCopy()); err != nil {
				return false, err
			}
			delete(bound, m[1])
			s.unboundPolicies = append(s.unboundPolicies, b.sample)
			return false, err
		}
		if err != nil {
			return false, err
		}
		for _, b := range bound {
			if !slices.ContainsFunc(try.Spec.Containers, func(c corev1.Container) bool { return c.Name == b.sample }) {
				return false, fmt.Errorf("the %s sidecar is not injected yet", b.sample)
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if len(s.unboundPolicies) > 0 {
		s.warn(fmt.Sprintf("injection policies refused by the API server, their sidecars added by the demo instead: %s", strings.Join(s.unboundPolicies, ", ")))
	}
	return nil
}

// withSidecars adds to pod the sidecars of the policies that had to be
// unbound; the API server's policies inject the others.
func (s *scenario) withSidecars(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	for _, sample := range s.unboundPolicies {
		fallbackSidecar(out, sample)
	}
	return out
}

// fallbackSidecar adds the sidecar container (and volumes) of sample to
// pod, as the sample's injection-policy.yaml describes it.
func fallbackSidecar(pod *corev1.Pod, sample string) {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(qemuUID)),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	ctr := corev1.Container{
		Name: sample, Image: "kvp-" + sample + ":latest", ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"--plugin-name=" + sample},
		SecurityContext: sc,
		VolumeMounts: []corev1.VolumeMount{{
			Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot + "/" + sample, SubPath: sample,
		}},
	}
	if sample == "cloudinit-network" {
		ctr.Args = append(ctr.Args, "--network-status-file=/etc/podinfo/network-status")
		ctr.VolumeMounts = append(ctr.VolumeMounts,
			corev1.VolumeMount{Name: "ephemeral-disks", MountPath: pluginv1alpha1.EphemeralDiskDir},
			corev1.VolumeMount{Name: "cloudinit-network-podinfo", MountPath: "/etc/podinfo", ReadOnly: true},
			corev1.VolumeMount{Name: "cloudinit-network-tmp", MountPath: "/tmp"},
		)
		pod.Spec.Volumes = append(pod.Spec.Volumes,
			corev1.Volume{Name: "cloudinit-network-podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "network-status", FieldRef: &corev1.ObjectFieldSelector{
					FieldPath: "metadata.annotations['" + networkStatusAnnotation + "']",
				}}},
			}}},
			corev1.Volume{Name: "cloudinit-network-tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		)
	}
	pod.Spec.Containers = append(pod.Spec.Containers, ctr)
}
