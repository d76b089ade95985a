// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// sidecarStopTimeout is how long the kubelet stand-in waits after SIGTERM
// before it kills a sidecar (docker stop); the samples' grace period is
// 10s.
const sidecarStopTimeout = 15 * time.Second

// endSidecars plays the kubelet once a launcher Pod's compute container has
// exited: it stops the Pod's native sidecars with SIGTERM. Each must exit 0
// and remove its socket, so that the Pod completes.
func (s *scenario) endSidecars(ctx context.Context, host *podHost, why string) error {
	sockets, err := host.volumeDir(pluginv1alpha1.SocketsVolumeName, s.hostRoot)
	if err != nil {
		return err
	}
	s.show(why + ": the kubelet stops Pod " + host.pod.Name + "'s native sidecars (SIGTERM)")
	for _, name := range samplePlugins {
		ctr := host.sidecars[name]
		if ctr == nil {
			return fmt.Errorf("no running %s sidecar in Pod %s", name, host.pod.Name)
		}
		timeout := sidecarStopTimeout
		began := time.Now()
		err := ctr.Stop(ctx, &timeout)
		took := time.Since(began).Round(time.Millisecond)
		exit := -1
		if err == nil {
			var st *container.State
			if st, err = ctr.State(ctx); err == nil {
				exit = st.ExitCode
			}
		}
		sock := filepath.Join(sockets, name, "hook.sock")
		_, statErr := os.Lstat(sock)
		s.check(fmt.Sprintf("%s in Pod %s exits 0 on SIGTERM and removes its socket", name, host.pod.Name),
			err == nil && exit == 0 && errors.Is(statErr, os.ErrNotExist),
			"exit code %d after %s, socket %s: %s", exit, took, strings.TrimPrefix(sock, s.tmp+"/"), withErr(socketState(statErr), err))
	}
	return nil
}

func socketState(statErr error) string {
	if errors.Is(statErr, os.ErrNotExist) {
		return "removed"
	}
	if statErr != nil {
		return statErr.Error()
	}
	return "still there"
}
