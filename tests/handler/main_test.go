// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
	"github.com/kubevirt-plugins/framework/tests/framework/docker"
	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// recorderImage is built from sample-sidecars/node-hook-recorder by TestMain.
const recorderImage = "kvp-node-hook-recorder:handler-test"

// recorderUID is the user the recorder image runs as (its Dockerfile).
const recorderUID = 65532

var (
	server *apiserver.Server
	// pluginsGate is the Plugins feature gate handed to the store.
	pluginsGate atomic.Bool
	plugins     *store.Store
	// socketRoot stands in for /var/run/kubevirt: the only root the
	// dispatcher allows; every recorder's socket directory is below it.
	socketRoot string
	dispatcher *dispatch.Dispatcher
	launchers  *launcherplugins.Selector
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	docker.NoReaper()
	if err := buildRecorderImage(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n", recorderImage, err)
		return 1
	}
	s, err := apiserver.Start(apiserver.Options{WithKubeVirtCRDs: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the API server: %v\n", err)
		return 1
	}
	server = s
	defer func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the API server: %v\n", err)
		}
	}()

	// Short, so that socket paths stay far below sun_path's 108 bytes.
	socketRoot, err = os.MkdirTemp("/tmp", "kvph-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(socketRoot)

	pluginsGate.Store(true)
	plugins, err = store.New(store.Options{Config: s.Config, FeatureGate: pluginsGate.Load})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // TestMain has no *testing.T; cancelled when the package's tests end
	defer cancel()
	go func() { _ = plugins.Run(ctx) }()
	if !plugins.WaitForSync(ctx) {
		fmt.Fprintln(os.Stderr, "the plugin store did not sync")
		return 1
	}
	dispatcher, err = dispatch.New(dispatch.Options{Plugins: plugins, SocketRoots: []string{socketRoot}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer dispatcher.Close()
	launchers, err = launcherplugins.New(launcherplugins.Options{Plugins: plugins})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildRecorderImage builds the sample node hook server as a static binary
// and its FROM scratch image, with the sample's own Dockerfile.
func buildRecorderImage() error {
	samples, err := repo.Path("sample-sidecars")
	if err != nil {
		return err
	}
	buildCtx, err := os.MkdirTemp("", "kvp-recorder-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(buildCtx)
	if err := os.MkdirAll(filepath.Join(buildCtx, "bin"), 0o755); err != nil {
		return err
	}
	dockerfile, err := os.ReadFile(filepath.Join(samples, "node-hook-recorder", "Dockerfile"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(buildCtx, "Dockerfile"), dockerfile, 0o644); err != nil {
		return err
	}
	if err := gobuild.Static("sample-sidecars", "./node-hook-recorder/cmd/node-hook-recorder",
		filepath.Join(buildCtx, "bin", "node-hook-recorder")); err != nil {
		return err
	}
	image := exec.Command("docker", "build", "-q", "-t", recorderImage, buildCtx)
	if out, err := image.CombinedOutput(); err != nil {
		return fmt.Errorf("docker build: %w\n%s", err, out)
	}
	return nil
}
