// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// appendToISO stands in for a sidecar that edits the cloud-init ISO: it
// appends its tag to the file it is pointed at, atomically.
func appendToISO(tag string) *sidecar {
	return &sidecar{preBoot: func(_ context.Context, req *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		path := req.GetArtifacts().GetCloudInitIso()
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, append(data, []byte(tag+"\n")...), 0o644); err != nil {
			return nil, err
		}
		return &hooksv1alpha1.PreBootResponse{}, os.Rename(tmp, path)
	}}
}

func TestPreBootSidecarsSeePreviousFiles(t *testing.T) {
	root := socketRoot(t)
	disks := t.TempDir()
	iso := filepath.Join(disks, "noCloud.iso")
	if err := os.WriteFile(iso, []byte("generated\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, second := appendToISO("alpha"), appendToISO("beta")
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("beta", sidecarHook(serve(t, root, "beta", "hook.sock", second), pb)),
		plugin("alpha", sidecarHook(serve(t, root, "alpha", "hook.sock", first), pb)),
	})
	err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{CloudInitISO: iso, EphemeralDiskDir: disks})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "generated\nalpha\nbeta\n"; got != want {
		t.Errorf("ISO holds %q, want %q", got, want)
	}
	if got := first.pbReqs[0].GetArtifacts().GetEphemeralDiskDir(); got != disks {
		t.Errorf("ephemeral disk dir %q, want %q", got, disks)
	}
}

func TestPreBootEphemeralDiskDirDefaults(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("defaults", sidecarHook(serve(t, root, "defaults", "hook.sock", s), pb))})
	if err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	a := s.pbReqs[0].GetArtifacts()
	if a.GetEphemeralDiskDir() != pluginv1alpha1.EphemeralDiskDir || a.GetCloudInitIso() != "" {
		t.Errorf("artifacts %v, want the default ephemeral disk dir and no ISO", a)
	}
}
