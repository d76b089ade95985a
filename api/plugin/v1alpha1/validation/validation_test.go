// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/examples"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

func decode(t *testing.T, c examples.Case) *v1alpha1.Plugin {
	t.Helper()
	p := &v1alpha1.Plugin{}
	if err := yaml.UnmarshalStrict(c.YAML, p); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return p
}

func TestGuideExamplesAreValid(t *testing.T) {
	cases, err := examples.Valid()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 5 {
		t.Fatalf("want the 5 examples of the user guide, got %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if errs := validation.Plugin(decode(t, c)); len(errs) != 0 {
				t.Fatalf("valid example rejected: %v", errs.ToAggregate())
			}
		})
	}
}

func TestInvalidPluginsRejectedNamingTheField(t *testing.T) {
	cases, err := examples.Invalid()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 15 {
		t.Fatalf("want at least 15 invalid cases, got %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			errs := validation.Plugin(decode(t, c))
			if len(errs) == 0 {
				t.Fatal("accepted")
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), c.Field) && strings.Contains(e.Error(), c.Message) {
					return
				}
			}
			t.Fatalf("no error names %q with %q; got: %v", c.Field, c.Message, errs.ToAggregate())
		})
	}
}

func TestSocketPathRules(t *testing.T) {
	long := "/var/run/kubevirt-plugin/p/" + strings.Repeat("a", 77) + ".sock"
	for _, tc := range []struct {
		name, path, want string
	}{
		{"in own directory", "/var/run/kubevirt-plugin/p/hook.sock", ""},
		{"in a subdirectory of its own", "/var/run/kubevirt-plugin/p/sub/hook.sock", ""},
		{"exactly 108 bytes", long[:len(long)-1-5] + ".sock", ""},
		{"109 bytes", long, "more than the 108"},
		{"another plugin's directory", "/var/run/kubevirt-plugin/q/hook.sock", "own directory"},
		{"prefix of another plugin's name", "/var/run/kubevirt-plugin/pq/hook.sock", "own directory"},
		{"directly in the root", "/var/run/kubevirt-plugin/p.sock", "own directory"},
		{"outside the root", "/tmp/p/hook.sock", "own directory"},
		{"not .sock", "/var/run/kubevirt-plugin/p/hook", "must end with .sock"},
		{"dot dot", "/var/run/kubevirt-plugin/p/../p/hook.sock", "'..'"},
		{"dot component", "/var/run/kubevirt-plugin/p/./hook.sock", "'.' path component"},
		{"dot component below its own directory", "/var/run/kubevirt-plugin/p/sub/./hook.sock", "'.' path component"},
		{"dots inside a name", "/var/run/kubevirt-plugin/p/.hook.v1.sock", ""},
		{"repeated slash", "/var/run/kubevirt-plugin/p//hook.sock", "repeated '/'"},
		{"trailing slash", "/var/run/kubevirt-plugin/p/hook.sock/", "end with '/'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validation.SocketPath("p", tc.path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}

// TestTooLongSocketsAreReportedAsTooLong checks that a socket path longer
// than a Unix socket path may be is reported as field.TooLong with the
// limit, on sidecar and node hook sockets alike, also when the node hook
// socket is relative as well.
func TestTooLongSocketsAreReportedAsTooLong(t *testing.T) {
	long := "/var/run/kubevirt-plugin/p/" + strings.Repeat("a", 77) + ".sock"
	p := &v1alpha1.Plugin{}
	p.Name = "p"
	p.Spec.LauncherHooks = []v1alpha1.LauncherHook{{Sidecar: &v1alpha1.SidecarHook{
		SocketPath: long, PermittedHooks: []v1alpha1.LauncherHookPoint{v1alpha1.PreBoot},
	}}}
	p.Spec.NodeHooks = []v1alpha1.NodeHook{
		{Socket: long, PermittedHooks: []v1alpha1.NodeHookPoint{v1alpha1.PreVMStart}},
		{Socket: long[1:] + "s", PermittedHooks: []v1alpha1.NodeHookPoint{v1alpha1.PreVMStart}},
		{Socket: "run/x.sock", PermittedHooks: []v1alpha1.NodeHookPoint{v1alpha1.PreVMStart}},
	}
	want := map[string]field.ErrorType{
		"spec.launcherHooks[0].sidecar.socketPath": field.ErrorTypeTooLong,
		"spec.nodeHooks[0].socket":                 field.ErrorTypeTooLong,
		"spec.nodeHooks[1].socket":                 field.ErrorTypeTooLong,
		"spec.nodeHooks[2].socket":                 field.ErrorTypeInvalid,
	}
	errs := validation.Plugin(p)
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs.ToAggregate())
	}
	for _, e := range errs {
		if w, ok := want[e.Field]; !ok || e.Type != w {
			t.Errorf("%s: %s, want %q", e.Field, e.Error(), w)
		}
		if e.Type == field.ErrorTypeTooLong && !strings.Contains(e.Error(), strconv.Itoa(v1alpha1.MaxSocketPathLength)) {
			t.Errorf("%s: %s does not name the limit", e.Field, e.Error())
		}
		if e.Field == "spec.nodeHooks[2].socket" && !strings.Contains(e.Error(), "must be an absolute path") {
			t.Errorf("%s: %s", e.Field, e.Error())
		}
	}
}
