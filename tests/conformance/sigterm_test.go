// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// TestSampleServersStopOnSIGTERMWithACallInFlight: the kubelet sends a
// native sidecar SIGTERM once the compute container has exited. The built
// sample stops taking calls, lets the call in flight finish within its
// grace period or cancels it through its context when the period ends,
// removes its socket and exits 0, so that the launcher Pod completes.
func TestSampleServersStopOnSIGTERMWithACallInFlight(t *testing.T) {
	t.Run("launcher sidecar: the call in flight finishes within the grace period", func(t *testing.T) {
		const grace = 30 * time.Second
		root := socketRoot(t)
		socket := filepath.Join(root, "cloudinit-network", "hook.sock")
		// The handler reads the network status from this FIFO: its open
		// blocks until the test opens the other end, which holds the call
		// in flight for as long as the test wants.
		fifo := filepath.Join(t.TempDir(), "network-status")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		p := launch(t, socket, nil, binary("cloudinit-network").Path(t),
			"--plugin-name=cloudinit-network", "--socket-root="+root, "--network-status-file="+fifo, "--grace-period="+grace.String())
		iso := noCloudISO(t)
		isoBefore := readFile(t, iso)

		client := launcherClient(t, socket)
		req := &hooksv1alpha1.PreBootRequest{
			Vmi:       vmiJSON(t, sampleNamed(t, "cloudinit-network").vmi),
			Artifacts: &hooksv1alpha1.BootArtifacts{CloudInitIso: iso, EphemeralDiskDir: filepath.Dir(iso)},
		}
		result := make(chan error, 1)
		go func() {
			_, err := client.PreBoot(t.Context(), req)
			result <- err
		}()
		// The handler is in the call once it has opened the FIFO for
		// reading: only then does a non-blocking open for writing succeed.
		var writer *os.File
		poll.Until(t, "PreBoot reading the network status", 30*time.Second, func() error {
			f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			writer = f
			return err
		})
		defer writer.Close()

		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The server has taken the signal once it stops taking calls; the
		// socket is still there while the call runs.
		poll.Until(t, "refusal of new connections after SIGTERM", 30*time.Second, func() error {
			c, err := net.Dial("unix", socket)
			if err == nil {
				_ = c.Close()
				return errors.New("the socket still takes connections")
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return err
			}
			return nil
		})
		if _, err := os.Lstat(socket); err != nil {
			t.Fatalf("socket gone while a call is in flight: %v", err)
		}
		if _, err := writer.WriteString(networkStatus); err != nil {
			t.Fatalf("handing the call in flight its network status: %v (did the sidecar exit with the call in flight?)\n%s", err, logsOnceExited(p))
		}
		_ = writer.Close()

		select {
		case err := <-result:
			if err != nil {
				t.Fatalf("PreBoot in flight at SIGTERM: %v, want it to finish\n%s", err, logsOnceExited(p))
			}
		case <-time.After(grace):
			t.Fatalf("PreBoot did not finish within the grace period %s", grace)
		}
		if bytes.Equal(readFile(t, iso), isoBefore) {
			t.Error("the ISO is as it was: the call did not do its work")
		}
		wantCleanExit(t, p, socket, grace)
	})

	t.Run("node hook server: the call in flight is cancelled when the grace period ends", func(t *testing.T) {
		const grace = time.Second
		root := socketRoot(t)
		socket := filepath.Join(root, "node.sock")
		events := filepath.Join(root, "events.jsonl")
		// --delay holds every call after recording it, until its context
		// ends.
		p := launch(t, socket, nil, binary("node-hook-recorder").Path(t),
			"--socket="+socket, "--events-file="+events, "--delay=1h", "--grace-period="+grace.String())
		client := hooksv1alpha1.NewNodeHookServiceClient(dial(t, socket))
		req := &hooksv1alpha1.ExecuteNodeHookRequest{
			HookPoint: "PreVMStart", Vmi: vmiJSON(t, sampleNamed(t, "node-hook-recorder").vmi),
			NodeContext: &hooksv1alpha1.NodeContext{NodeName: "node1"},
		}
		result := make(chan error, 1)
		go func() {
			_, err := client.ExecuteNodeHook(t.Context(), req)
			result <- err
		}()
		poll.Until(t, "PreVMStart recorded in "+events, 30*time.Second, func() error {
			b, err := os.ReadFile(events)
			if err == nil && !strings.Contains(string(b), `"hookPoint":"PreVMStart"`) {
				return errors.New("not recorded yet")
			}
			return err
		})

		signalled := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-result:
			if code := status.Code(err); code != codes.Unavailable && code != codes.Canceled {
				t.Errorf("call cut off at the end of the grace period: %v, want Unavailable or Canceled", err)
			}
		case <-time.After(grace + 10*time.Second):
			t.Fatalf("call still in flight %s after SIGTERM, with a grace period of %s", grace+10*time.Second, grace)
		}
		wantCleanExit(t, p, socket, 10*time.Second)
		if waited := time.Since(signalled); waited < grace {
			t.Errorf("exited %s after SIGTERM, before the grace period of %s ended", waited, grace)
		}
		t.Logf("exited %s after SIGTERM (grace period %s)", time.Since(signalled).Round(time.Millisecond), grace)
	})
}

// wantCleanExit fails t unless the process exits 0 within the bound and its
// socket is gone.
func wantCleanExit(t *testing.T, p *process, socket string, within time.Duration) {
	t.Helper()
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM, want 0\n%s", p.name, err, p.logs.String())
		}
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.exited //nolint:errcheck // only waits for the exit; the process was stopped on purpose
		t.Fatalf("%s still running %s after its call ended\n%s", p.name, within, p.logs.String())
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left its socket %s behind (%v)", p.name, socket, err)
	}
}

// logsOnceExited kills the process and returns its output, for a failure
// message.
func logsOnceExited(p *process) string {
	_ = p.cmd.Process.Kill()
	<-p.exited //nolint:errcheck // only waits for the exit
	return p.logs.String()
}

func launcherClient(t *testing.T, socket string) hooksv1alpha1.LauncherHookServiceClient {
	t.Helper()
	return hooksv1alpha1.NewLauncherHookServiceClient(dial(t, socket))
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := sdktest.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func sampleNamed(t *testing.T, name string) sample {
	t.Helper()
	for _, s := range samples {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no sample %s", name)
	return sample{}
}

func vmiJSON(t *testing.T, vmiYAML string) []byte {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(vmiYAML))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
