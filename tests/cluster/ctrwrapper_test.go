// SPDX-License-Identifier: Apache-2.0

package cluster_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeCtr stands in for containerd's ctr inside the node build container:
// it records the archives imported and lists the images it "holds" as ctr
// does, one name per write, with a pause after the first name, so that a
// reader that leaves at the first match makes its later writes fail.
const fakeCtr = `#!/bin/bash
set -u
case "$*" in
  *"images import"*) echo "${@: -1}" >>"$KVP_FAKE_LOG" ;;
  *"images ls -q"*)
    echo registry.k8s.io/pause:3.10
    sleep 0.3
    for i in $(seq 1 200); do echo "registry.k8s.io/other-$i:v1"; done ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
`

// ctrWrapper runs hack/kind/ctr-wrapper.sh on a fake ctr and a directory
// of offline archives, as `kind build node-image` runs it.
func ctrWrapper(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "hack", "kind", "ctr-wrapper.sh")
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(),
		"KVP_CTR="+filepath.Join(dir, "ctr"),
		"KVP_OFFLINE_IMAGES="+filepath.Join(dir, "offline"),
		"KVP_FAKE_LOG="+filepath.Join(dir, "imported"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func fakeNodeBuild(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ctr"), []byte(fakeCtr), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "offline"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etcd.tar", "pause.tar"} {
		if err := os.WriteFile(filepath.Join(dir, "offline", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A fetch of an image that the offline archives hold succeeds, however
// ctr writes its list: the node image build once failed because the
// wrapper's `ctr images ls | grep -q` pipeline lost ctr to SIGPIPE.
func TestCtrWrapperFindsAnImportedImageWhateverCtrWritesAfterIt(t *testing.T) {
	dir := fakeNodeBuild(t)
	out, err := ctrWrapper(t, dir, "--namespace=k8s.io", "content", "fetch", "--platform=linux/amd64", "registry.k8s.io/pause:3.10")
	if err != nil {
		t.Fatalf("fetch of an imported image: %v\n%s", err, out)
	}
	imported, err := os.ReadFile(filepath.Join(dir, "imported"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(imported)); len(got) != 2 || filepath.Base(got[0]) != "etcd.tar" || filepath.Base(got[1]) != "pause.tar" {
		t.Errorf("archives imported: %v, want etcd.tar and pause.tar once each", got)
	}
	// A second fetch finds them imported and imports nothing again.
	if out, err := ctrWrapper(t, dir, "--namespace=k8s.io", "content", "fetch", "registry.k8s.io/pause:3.10"); err != nil {
		t.Fatalf("second fetch: %v\n%s", err, out)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "imported")); string(again) != string(imported) {
		t.Errorf("the second fetch imported again:\n%s", again)
	}
}

// An image the archives do not hold fails the fetch, naming it, as it
// would offline; the two kind installs that these clusters do not run are
// let through.
func TestCtrWrapperRefusesAnImageTheArchivesDoNotHold(t *testing.T) {
	dir := fakeNodeBuild(t)
	out, err := ctrWrapper(t, dir, "--namespace=k8s.io", "content", "fetch", "registry.k8s.io/missing:v1")
	if err == nil || !strings.Contains(out, "registry.k8s.io/missing:v1 is not in") {
		t.Errorf("fetch of a missing image: err %v, output %q; want a failure naming it", err, out)
	}
	if out, err := ctrWrapper(t, dir, "--namespace=k8s.io", "content", "fetch", "docker.io/kindest/kindnetd:v1"); err != nil {
		t.Errorf("fetch of kindnetd: %v\n%s", err, out)
	}
}
