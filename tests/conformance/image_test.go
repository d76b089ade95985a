// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/kubevirt-plugins/framework/tests/framework/docker"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// The Python sample's image, built as `make images` builds it (a
// debootstrapped python3-grpcio base, cached by Docker), serves the
// contract from a container as the launcher Pod's sidecar would: as UID
// 107, on a socket in a bind-mounted directory.
func TestPythonSampleImagePassesConformance(t *testing.T) {
	script, err := repo.Path("hack", "build-python-image.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, pythonSample).Output()
	if err != nil {
		if exit, ok := errors.AsType[*exec.ExitError](err); ok {
			t.Fatalf("%s: %v\n%s", script, err, exit.Stderr)
		}
		t.Fatalf("%s: %v", script, err)
	}
	image := strings.TrimSpace(string(out))

	root := socketRoot(t)
	// In a launcher Pod the sidecar's directory is its subPath of the
	// sockets emptyDir, which the kubelet makes before the container
	// starts: it exists, owned by root, and the sidecar (UID 107) may write
	// in it but not change its mode.
	dir := filepath.Join(root, pythonSample)
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, dir} { // an emptyDir is 0777
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	docker.NoReaper()
	ctx := t.Context()
	ctr, err := testcontainers.Run(ctx, image,
		testcontainers.WithLogger(tclog.TestLogger(t)),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, root+":/var/run/kubevirt-plugin")
		}))
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(t.Context())
		}
		t.Fatalf("run %s: %v", image, err)
	}
	socket := filepath.Join(root, pythonSample, "hook.sock")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = ctr.Terminate(context.WithoutCancel(t.Context()))
		}
	})
	err = poll.UntilContext(ctx, 30*time.Second, func() error { return isSocket(socket) })
	if err != nil {
		var logs []byte
		if r, err := ctr.Logs(ctx); err == nil {
			logs, _ = io.ReadAll(r)
		}
		t.Fatalf("no socket: %v; container logs:\n%s", err, logs)
	}
	vmiFile := writeFile(t, t.TempDir(), "vmi.yaml", vmi(pythonSample, "", ""))
	code, stdout, stderr := conformance(t, "--plugin", samplePath(t, pythonSample, "plugin.yaml"), "--socket", socket, "--vmi", vmiFile)
	wantAllPassed(t, code, stdout, stderr, 8)

	// SIGTERM (docker stop) ends it gracefully, and the socket goes away.
	timeout := 10 * time.Second
	if err := ctr.Stop(ctx, &timeout); err != nil {
		t.Fatalf("stop: %v", err)
	}
	state, err := ctr.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if state.ExitCode != 0 {
		t.Errorf("the sidecar exited %d after SIGTERM, want 0", state.ExitCode)
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sidecar left its socket %s behind", socket)
	}
	stopped = true
	if err := ctr.Terminate(t.Context()); err != nil {
		t.Errorf("terminate: %v", err)
	}
}
