// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

// TestSocketPathsWithControlCharactersAreRefusedAndQuoted: a sidecar
// socketPath or a node hook socket holding a NUL byte, or any other control
// character (bytes below 0x20 and 0x7f), is refused as Invalid at its
// field, like a "." component; the error quotes the path, so its text
// carries no control character.
func TestSocketPathsWithControlCharactersAreRefusedAndQuoted(t *testing.T) {
	bytes := []byte{0x7f}
	for b := range byte(0x20) {
		bytes = append(bytes, b)
	}
	for _, b := range bytes {
		c := string([]byte{b})
		t.Run(fmt.Sprintf("0x%02x", b), func(t *testing.T) {
			p := &v1alpha1.Plugin{}
			p.Name = "nul"
			p.Spec.LauncherHooks = []v1alpha1.LauncherHook{{Sidecar: &v1alpha1.SidecarHook{
				SocketPath:     "/var/run/kubevirt-plugin/nul/hook.sock" + c + ".sock",
				PermittedHooks: []v1alpha1.LauncherHookPoint{v1alpha1.PreBoot},
			}}}
			p.Spec.NodeHooks = []v1alpha1.NodeHook{{
				Socket:         "/var/run/kubevirt/nul/hook" + c + ".sock",
				PermittedHooks: []v1alpha1.NodeHookPoint{v1alpha1.PreVMStart},
			}}
			if err := validation.SocketPath(p.Name, p.Spec.LauncherHooks[0].Sidecar.SocketPath); err == nil {
				t.Errorf("SocketPath accepted %q", p.Spec.LauncherHooks[0].Sidecar.SocketPath)
			}
			errs := validation.Plugin(p)
			want := map[string]bool{"spec.launcherHooks[0].sidecar.socketPath": false, "spec.nodeHooks[0].socket": false}
			for _, e := range errs {
				if _, ok := want[e.Field]; !ok {
					t.Errorf("unexpected error %s", e.Error())
					continue
				}
				want[e.Field] = true
				msg := e.Error()
				if e.Type != field.ErrorTypeInvalid || !strings.Contains(msg, "must not contain a control character") {
					t.Errorf("%s: %q, want Invalid saying it must not contain a control character", e.Field, msg)
				}
				if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("%s: the error %q carries a control character", e.Field, msg)
				}
			}
			for f, seen := range want {
				if !seen {
					t.Errorf("%s: not refused (errors: %v)", f, errs.ToAggregate())
				}
			}
		})
	}
}
