// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/ports"
)

// syncerBinary is cmd/label-syncer, built statically as the image has it;
// TestMain removes it.
var syncerBinary = &gobuild.Binary{Module: "label-syncer", Pkg: "./cmd/label-syncer"}

// kubeconfig writes a kubeconfig for an administrator of the test server.
func kubeconfig(t *testing.T) string {
	t.Helper()
	path, err := server.Kubeconfig(envtest.User{Name: "label-syncer-test", Groups: []string{"system:masters"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartupRejectsInvalidEntriesNamingThem(t *testing.T) {
	bin := syncerBinary.Path(t)
	cfg := kubeconfig(t)
	cases := []struct {
		name string
		flag string
		list string
		want string
	}{
		{"bare star", "--additional-launcher-labels-sync", "*", `--additional-launcher-labels-sync: entry 1 ("*"): a bare "*" would match every key`},
		{"bare star among valid entries", "--additional-launcher-labels-sync", "ops.example.com/*,*", `entry 2 ("*"): a bare "*"`},
		{"not a valid key", "--additional-launcher-labels-sync", "ops.example.com/a/b", `entry 1 ("ops.example.com/a/b"): not a valid key`},
		{"not a valid prefix", "--additional-launcher-labels-sync", "Ops.Example.com/*", `entry 1 ("Ops.Example.com/*"): no valid key starts with`},
		{"star inside", "--additional-launcher-labels-sync", "*.k8s.io/x", `entry 1 ("*.k8s.io/x"): "*" is only allowed as the last character`},
		{"kubevirt.io prefix", "--additional-launcher-labels-sync", "kubevirt.io/*", `entry 1 ("kubevirt.io/*"): could match keys in the domain kubevirt.io, which KubeVirt owns (for example "kubevirt.io/x"); add kubevirt.io to --allow-owned-domains to sync it anyway`},
		{"kubevirt.io subdomain key", "--additional-launcher-labels-sync", "vm.kubevirt.io/name", `entry 1 ("vm.kubevirt.io/name"): is in the domain kubevirt.io, which KubeVirt owns; add vm.kubevirt.io to --allow-owned-domains`},
		{"created-by", "--additional-launcher-labels-sync", "kubevirt.io/created-by", `entry 1 ("kubevirt.io/created-by"): is in the domain kubevirt.io, which KubeVirt owns`},
		{"prefix of kubevirt.io", "--additional-launcher-labels-sync", "kube*", `entry 1 ("kube*"): could match keys in the domain kubevirt.io, which KubeVirt owns (for example "kubevirt.io/x"); end the domain with "/"`},
		{"truncated kubevirt.io", "--additional-launcher-labels-sync", "kubevirt.i*", `entry 1 ("kubevirt.i*"): could match keys in the domain kubevirt.io, which KubeVirt owns`},
		{"kubernetes.io annotations", "--additional-launcher-annotations-sync", "kubectl.kubernetes.io/*", `--additional-launcher-annotations-sync: entry 1 ("kubectl.kubernetes.io/*"): could match keys in the domain kubernetes.io, which Kubernetes owns`},
		{"k8s.io subdomain", "--additional-launcher-annotations-sync", "x.k8s.io/y", `entry 1 ("x.k8s.io/y"): is in the domain k8s.io, which Kubernetes owns`},
		{"the syncer's bookkeeping", "--additional-launcher-annotations-sync", "labelsync.kubevirt-plugins.io/*", `own bookkeeping domain labelsync.kubevirt-plugins.io, which is never synced`},
		{"node roles", "--additional-launcher-labels-sync", "node-role.kubernetes.io/*", `entry 1 ("node-role.kubernetes.io/*"): could match keys in the domain kubernetes.io, which Kubernetes owns (for example "node-role.kubernetes.io/x"); add node-role.kubernetes.io to --allow-owned-domains`},
		{"subdomain of the recommended labels", "--additional-launcher-labels-sync", "x.app.kubernetes.io/name", `entry 1 ("x.app.kubernetes.io/name"): is in the domain kubernetes.io`},
		{"allowance outside the owned domains", "--allow-owned-domains", "ops.example.com", `--allow-owned-domains: entry 1 ("ops.example.com"): is not in an owned domain (kubevirt.io, kubernetes.io, k8s.io): entries in it need no allowance`},
		{"allowance of the bookkeeping", "--allow-owned-domains", "labelsync.kubevirt-plugins.io", `--allow-owned-domains: entry 1 ("labelsync.kubevirt-plugins.io"): is the syncer's own bookkeeping domain`},
		{"descheduler annotation listed", "--additional-launcher-annotations-sync", "descheduler.alpha.kubernetes.io/prefer-no-eviction", `follows the template without an entry unless --sync-descheduler-annotations=false`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+cfg, "--metrics-bind-address=0", "--health-probe-bind-address=0", tc.flag+"="+tc.list)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit = %v, want status 2; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr does not contain %q:\n%s", tc.want, stderr.String())
			}
		})
	}
}

// TestBinaryWithValidEntriesSyncsAndServesMetrics runs the built binary
// as the Deployment does and checks it syncs a VM and reports it.
func TestBinaryWithValidEntriesSyncsAndServesMetrics(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-binary", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	cfg := kubeconfig(t)
	var probe, metricsAddr string
	err := ports.Retry(2, func(p []int) error {
		probe, metricsAddr = fmt.Sprintf("127.0.0.1:%d", p[0]), fmt.Sprintf("127.0.0.1:%d", p[1])
		return startBinary(t, p, "--kubeconfig="+cfg,
			"--additional-launcher-labels-sync=ops.example.com/*,team.example.com/owner",
			"--additional-launcher-annotations-sync=notes.example.com/*",
			"--health-probe-bind-address="+probe, "--metrics-bind-address="+metricsAddr,
			// Plain HTTP keeps this test about what is synced and counted;
			// tests/controller checks the HTTPS endpoint and its authorization.
			"--metrics-secure=false")
	})
	if err != nil {
		t.Fatal(err)
	}

	patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-b"}, nil)
	poll.Until(t, "the binary synced the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b"})
	})
	checkOutsideAndUID(t, r, r.pod.UID)
	poll.Until(t, "/metrics reports the patches", waitTimeout, func() error {
		body, err := getBody("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		for _, re := range []string{
			syncmetrics.MetricPatches + `\{target="VirtualMachineInstance"\} [1-9]`,
			syncmetrics.MetricPatches + `\{target="Pod"\} [1-9]`,
			syncmetrics.MetricSyncDuration + `_count\{target="Pod"\} [1-9]`,
			`controller_runtime_reconcile_total\{controller="labelsync-vmi-to-pod",result="success"\} [1-9]`,
		} {
			if !regexp.MustCompile(re).MatchString(body) {
				return fmt.Errorf("no line matching %s", re)
			}
		}
		return nil
	})
}

// startBinary runs the syncer with args, which bind its probe to port
// listens[0] of 127.0.0.1 and its other servers to the other ports, until
// the test ends, and waits until it is ready and listens on all of them;
// or it returns why it did not, with its log (see ports.InUse).
func startBinary(t *testing.T, listens []int, args ...string) error {
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, syncerBinary.Path(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return err
	}
	running, exited := poll.WhileRunning(ctx, cmd)
	err := poll.UntilContext(running, waitTimeout, func() error {
		if err := get200(fmt.Sprintf("http://127.0.0.1:%d/readyz", listens[0])); err != nil {
			return err
		}
		return ports.Bound(cmd.Process.Pid, listens...)
	})
	if err != nil {
		cancel()
		<-exited //nolint:errcheck // only waits for the exit; the process did not start
		return ports.InUse(fmt.Errorf("label-syncer not ready: %w\n%s", err, stderr.String()), stderr.String())
	}
	t.Cleanup(func() {
		cancel()
		<-exited //nolint:errcheck // only waits for the exit; the process is stopped on purpose
	})
	return nil
}

// getBody returns the body of a 200 answer to a GET of url.
func getBody(url string) (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

func get200(url string) error {
	_, err := getBody(url)
	return err
}
