// SPDX-License-Identifier: Apache-2.0

package sidecar

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
)

// The descriptions are read from ConfigMaps of the controller's namespace.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch,namespace=kubevirt

// Path is where the webhook is served; deploy/sidecar-injector's
// MutatingWebhookConfiguration points at it.
const Path = "/inject-launcher-sidecars"

// Injector adds the described sidecars to the launcher Pods that ask for
// them.
type Injector struct {
	// Reader lists the description ConfigMaps; the manager's cache,
	// restricted to Namespace and ConfigMaps labelled
	// sidecarinjection.ConfigMapLabel, serves it. Required.
	Reader client.Reader
	// Namespace holds the description ConfigMaps. Required.
	Namespace string

	decoder admission.Decoder
	mu      sync.Mutex
	// parsed keeps each ConfigMap's description by resourceVersion, so a
	// description is parsed once, not at every Pod.
	parsed map[types.NamespacedName]parsedDescription
}

type parsedDescription struct {
	resourceVersion string
	sidecar         *sidecarinjection.Sidecar
	// label is the label the description asks for, read leniently when
	// the description is invalid, so that the Pods asking for it are
	// refused; "" when not even that could be read.
	label string
	err   error
}

// SetupWebhookWithManager registers the injector on the manager's webhook
// server at Path.
func (i *Injector) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if i.Reader == nil || i.Namespace == "" {
		return fmt.Errorf("sidecar injector: a Reader and a Namespace are required")
	}
	i.decoder = admission.NewDecoder(mgr.GetScheme())
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: i})
	return nil
}

// Handle injects into a launcher Pod being created every described
// sidecar whose label it carries.
func (i *Injector) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" {
		return admission.Allowed("only Pod creation is handled")
	}
	if i.decoder == nil {
		i.decoder = admission.NewDecoder(scheme.Scheme)
	}
	pod := &corev1.Pod{}
	if err := i.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if pod.Labels[sidecarinjection.LauncherLabel] != sidecarinjection.LauncherLabelValue {
		return admission.Allowed("not a virt-launcher Pod")
	}
	sidecars, err := i.descriptions(ctx, pod)
	if err != nil {
		return admission.Denied(err.Error())
	}
	added := sidecarinjection.Inject(pod, sidecars)
	if len(added) == 0 {
		return admission.Allowed("no sidecar asked for")
	}
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	logf.FromContext(ctx).V(1).Info("sidecars injected", "pod", client.ObjectKey{Namespace: req.Namespace, Name: pod.Name + pod.GenerateName}, "plugins", added)
	resp := admission.PatchResponseFromRaw(req.Object.Raw, mutated)
	if resp.Result == nil {
		resp.Result = &metav1.Status{}
	}
	resp.Result.Message = "injected the sidecars of " + strings.Join(added, ", ")
	return resp
}

// descriptions are the valid descriptions, ordered by plugin name. It
// fails when the Pod carries the label of an invalid one.
func (i *Injector) descriptions(ctx context.Context, pod *corev1.Pod) ([]*sidecarinjection.Sidecar, error) {
	var list corev1.ConfigMapList
	if err := i.Reader.List(ctx, &list, client.InNamespace(i.Namespace), client.HasLabels{sidecarinjection.ConfigMapLabel}); err != nil {
		return nil, fmt.Errorf("listing the sidecar descriptions (ConfigMaps labelled %s in %s): %w", sidecarinjection.ConfigMapLabel, i.Namespace, err)
	}
	var out []*sidecarinjection.Sidecar
	var problems []string
	for idx := range list.Items {
		d := i.parse(&list.Items[idx])
		if d.err == nil {
			out = append(out, d.sidecar)
			continue
		}
		if _, asked := pod.Labels[d.label]; asked && d.label != "" {
			problems = append(problems, fmt.Sprintf("ConfigMap %s/%s, key %s: %v", i.Namespace, list.Items[idx].Name, sidecarinjection.ConfigMapKey, d.err))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the Pod asks for a sidecar whose description is invalid, and is not created without it: %s", strings.Join(problems, "; "))
	}
	slices.SortFunc(out, func(a, b *sidecarinjection.Sidecar) int { return cmp.Compare(a.Plugin, b.Plugin) })
	return out, nil
}

func (i *Injector) parse(cm *corev1.ConfigMap) parsedDescription {
	key := client.ObjectKeyFromObject(cm)
	i.mu.Lock()
	defer i.mu.Unlock()
	if d, ok := i.parsed[key]; ok && d.resourceVersion == cm.ResourceVersion && cm.ResourceVersion != "" {
		return d
	}
	d := parsedDescription{resourceVersion: cm.ResourceVersion}
	data, ok := cm.Data[sidecarinjection.ConfigMapKey]
	if !ok {
		d.err = fmt.Errorf("no key %s", sidecarinjection.ConfigMapKey)
	} else {
		d.sidecar, d.err = sidecarinjection.Parse([]byte(data))
	}
	if d.err != nil {
		var lenient struct {
			Label string `json:"label"`
		}
		if yaml.Unmarshal([]byte(data), &lenient) == nil {
			d.label = lenient.Label
		}
	} else if want := cm.Labels[sidecarinjection.ConfigMapLabel]; want != d.sidecar.Plugin {
		d.label = d.sidecar.Label
		d.err = fmt.Errorf("plugin: %q, but the ConfigMap's label %s names %q", d.sidecar.Plugin, sidecarinjection.ConfigMapLabel, want)
		d.sidecar = nil
	}
	if i.parsed == nil {
		i.parsed = map[types.NamespacedName]parsedDescription{}
	}
	i.parsed[key] = d
	return d
}
