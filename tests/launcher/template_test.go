// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

// The template sidecar, as a plugin author gets it, works against the
// launcher runtime: its Plugin selects the opted-in VMI, its hook changes the
// domain, and libvirt runs the result.
func TestTemplateSidecarChangesTheDomainThatBoots(t *testing.T) {
	ctx := testContext(t)
	root := shortTempDir(t, "kvp-sock-")
	startSidecar(t, sidecarBinary(t, "template/cmd/template"), "template", root)
	p := newPipeline(t, root, plugins(t, samplePlugin(t, "template")))

	optedIn := newVMI("vm-template", map[string]string{
		"plugins.example.com/template":     "true",
		"template.example.com/description": "made from the template",
	})
	domain, err := p.GuestDefinition(ctx, optedIn, libvirtd.DisklessDomain("vm-template"), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	node := libvirtd.StartT(t, libvirtd.Options{})
	if live := bootRunning(ctx, t, node, node.ConnectT(t), domain); !strings.Contains(live.Description, "made from the template") {
		t.Errorf("live description %q, want the template sidecar's text", live.Description)
	}

	// A VMI without the opt-in label is not the plugin's: its domain passes
	// through untouched, and the launcher does not wait for the socket.
	other := newVMI("vm-other", map[string]string{"template.example.com/description": "ignored"})
	untouched, err := p.GuestDefinition(ctx, other, libvirtd.DisklessDomain("vm-other"), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if untouched.Description != "" {
		t.Errorf("a VMI the Plugin's condition does not select got description %q", untouched.Description)
	}
}
