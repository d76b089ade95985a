// SPDX-License-Identifier: Apache-2.0

package handover_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kvpluginv1alpha1 "kubevirt.io/api/plugin/v1alpha1"

	"github.com/kubevirt-plugins/framework/api/handover"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// handed is what virt-handler hands over for two Plugins, one of them with
// a plugin condition, a hook condition and node hooks: every field an
// alpha-1 launcher could act on, under another name or the same.
func handed(t *testing.T) []byte {
	t.Helper()
	timeout := metav1.Duration{Duration: 5e9}
	plugins := []pluginv1alpha1.Plugin{
		{
			TypeMeta:   metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
			ObjectMeta: metav1.ObjectMeta{Name: "cel-tuning", Generation: 3},
			Spec: pluginv1alpha1.PluginSpec{
				Condition:       `"plugins.example.com/cel-tuning" in vmi.Labels`,
				FailureStrategy: pluginv1alpha1.Fail,
				LauncherHooks: []pluginv1alpha1.LauncherHook{{
					CEL:       &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{Title: "x"}`},
					Condition: `vmi.Name != ""`,
				}},
				NodeHooks: []pluginv1alpha1.NodeHook{{Socket: "/var/run/kubevirt/plugins/r.sock", Timeout: &timeout}},
			},
		},
		{
			TypeMeta:   metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
			ObjectMeta: metav1.ObjectMeta{Name: "smbios-watchdog", Generation: 1},
			Spec: pluginv1alpha1.PluginSpec{
				LauncherHooks: []pluginv1alpha1.LauncherHook{{
					Sidecar: &pluginv1alpha1.SidecarHook{SocketPath: "/var/run/kubevirt/plugins/s.sock", PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.GuestDefinition}},
				}},
			},
		},
	}
	data, err := handover.Encode(plugins)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeReadsWhatEncodeWrote(t *testing.T) {
	got, err := handover.Decode(handed(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "cel-tuning" || got[0].Generation != 3 || got[1].Name != "smbios-watchdog" ||
		got[0].Spec.LauncherHooks[0].CEL.Expression != `Domain{Title: "x"}` || got[1].Spec.LauncherHooks[0].Sidecar == nil {
		t.Fatalf("decoded %+v", got)
	}
}

// An alpha-1 virt-launcher (KubeVirt v1.9.0's) decodes the field as
// []kubevirt.io/api/plugin/v1alpha1.Plugin. It must read the framework's
// data without an error and find nothing to run: no name to log, no
// condition to evaluate, no domain hook.
func TestAnAlpha1LauncherReadsTheHandoverAsPluginsWithoutHooks(t *testing.T) {
	var alpha1 []kvpluginv1alpha1.Plugin
	if err := json.Unmarshal(handed(t), &alpha1); err != nil {
		t.Fatalf("an alpha-1 launcher cannot read the handover: %v", err)
	}
	if len(alpha1) != 2 {
		t.Fatalf("alpha-1 read %d Plugins, want 2", len(alpha1))
	}
	for i, p := range alpha1 {
		if p.Name != "" || p.Spec.Condition != "" || len(p.Spec.DomainHooks) != 0 || len(p.Spec.NodeHooks) != 0 || p.Spec.FailureStrategy != "" {
			t.Errorf("alpha-1 Plugin %d has something to act on: %+v", i, p)
		}
	}
}

func TestDecodeRefusesAnAlpha1Handover(t *testing.T) {
	alpha1, err := json.Marshal([]kvpluginv1alpha1.Plugin{{
		ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec:       kvpluginv1alpha1.PluginSpec{DomainHooks: []kvpluginv1alpha1.DomainHook{{CEL: &kvpluginv1alpha1.CELDomainHook{Expression: "x"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = handover.Decode(alpha1)
	if err == nil || !strings.Contains(err.Error(), "element 0 holds no \"plugin\"") {
		t.Fatalf("Decode of an alpha-1 array: %v", err)
	}
}

func TestDecodeRefusesAPluginWithoutAName(t *testing.T) {
	_, err := handover.Decode([]byte(`[{"plugin":{"spec":{}}}]`))
	if err == nil || !strings.Contains(err.Error(), "element 0: the Plugin has no metadata.name") {
		t.Fatalf("Decode: %v", err)
	}
}

func TestDecodeReadsEmptyDataAsNoPlugin(t *testing.T) {
	for _, data := range []string{"", " \n", "[]"} {
		got, err := handover.Decode([]byte(data))
		if err != nil || len(got) != 0 {
			t.Errorf("Decode(%q) = %v, %v", data, got, err)
		}
	}
}

// A newer virt-handler may hand fields this launcher does not know; it
// reads the rest.
func TestDecodeIgnoresFieldsItDoesNotKnow(t *testing.T) {
	got, err := handover.Decode([]byte(`[{"plugin":{"metadata":{"name":"p"},"spec":{"futureField":1}},"futureEnvelope":true}]`))
	if err != nil || len(got) != 1 || got[0].Name != "p" {
		t.Fatalf("Decode = %v, %v", got, err)
	}
}

func TestDecodeRefusesWhatIsNotAnArray(t *testing.T) {
	_, err := handover.Decode([]byte(`{"apiVersion":"plugin.kubevirt.io/v1alpha1","kind":"PluginList","items":[]}`))
	if err == nil || !strings.Contains(err.Error(), "reading the Plugins virt-handler handed over") {
		t.Fatalf("Decode of a PluginList: %v", err)
	}
}
