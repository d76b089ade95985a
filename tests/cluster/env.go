// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	fpoll "github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// env is the cluster as hack/kind/cluster.sh describes it.
type env struct {
	root       string
	kubeconfig string
	kubectlBin string
	kind       string
	name       string
	version    string
	cfg        *rest.Config
	c          client.Client
	// cs is for what the client above does not do (watches, the Pod
	// proxy).
	cs  kubernetes.Interface
	log io.Writer
	// scriptEnv is added to the environment of the scripts.
	scriptEnv []string
}

// newEnv is the environment of a run in the repository at root, its
// scripts' output and kubectl's going to log, which may be written from
// more than one goroutine (a script in the background).
func newEnv(root string, log io.Writer) *env {
	return &env{root: root, log: transcript.LockedWriter(log)}
}

// script runs a repository script, its output to the log, and returns its
// standard output.
func (e *env) script(ctx context.Context, name string, args ...string) (string, error) {
	return e.scriptWith(ctx, nil, name, args...)
}

// scriptWith is script with more variables in its environment.
func (e *env) scriptWith(ctx context.Context, vars []string, name string, args ...string) (string, error) {
	return e.run(exec.CommandContext(ctx, filepath.Join(e.root, name), args...), vars, name, args)
}

// scriptGroup is script for a script run in the background: it runs in a
// process group of its own, which ctx's end kills whole (a test binary a
// script started included), instead of the script alone, which would
// leave its children running and holding its output open.
func (e *env) scriptGroup(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.root, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 30 * time.Second
	return e.run(cmd, nil, name, args)
}

func (e *env) run(cmd *exec.Cmd, vars []string, name string, args []string) (string, error) {
	cmd.Dir = e.root
	cmd.Env = slices.Concat(os.Environ(), e.scriptEnv, vars)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, e.log)
	cmd.Stderr = e.log
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w (its output is in the log)", name, strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// readEnv reads the cluster's coordinates from `cluster.sh env`.
func (e *env) readEnv(ctx context.Context) error {
	out, err := e.script(ctx, "hack/kind/cluster.sh", "env")
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "KUBECONFIG":
			e.kubeconfig = v
		case "KVP_KUBECTL":
			e.kubectlBin = v
		case "KVP_KIND":
			e.kind = v
		case "KVP_KIND_CLUSTER":
			e.name = v
		case "KVP_KIND_K8S_VERSION":
			e.version = v
		}
	}
	return nil
}

func (e *env) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	e.cfg = cfg
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kubevirtv1.AddToScheme, pluginv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if e.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	e.cs, err = kubernetes.NewForConfig(cfg)
	return err
}

// webhookRetry is how long kubectl is tried again while the API server
// cannot reach an admission webhook: a component that just became Ready
// (virt-api after the KubeVirt CR is Deployed, the plugin-controller after
// a restart) may not be behind its Service yet.
const webhookRetry = 90 * time.Second

// kubectl runs kubectl on the cluster and returns its standard output; a
// failure carries its standard error. A request the API server could not
// take to a webhook is made again, for up to webhookRetry; a webhook's
// answer, a denial included, is returned as it is.
func (e *env) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	deadline := time.Now().Add(webhookRetry)
	for {
		out, errText, err := e.kubectlOnce(ctx, stdin, args...)
		if err == nil {
			return out, nil
		}
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errText)
		if !webhookUnreachable(errText) || time.Now().After(deadline) {
			return out, err
		}
		fmt.Fprintf(e.log, "webhook unreachable, trying again in 2s: %v\n", err)
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(2 * time.Second):
		}
	}
}

func (e *env) kubectlOnce(ctx context.Context, stdin string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, e.kubectlBin, append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	cmd.Dir = e.root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	fmt.Fprintf(e.log, "$ kubectl %s\n", strings.Join(args, " "))
	err := cmd.Run()
	return out.String(), strings.TrimSpace(errb.String()), err
}

// webhookUnreachable tells a failure to reach an admission webhook from
// its answer.
func webhookUnreachable(stderr string) bool {
	if !strings.Contains(stderr, "failed calling webhook") {
		return false
	}
	for _, cause := range []string{"connection refused", "no endpoints available", "context deadline exceeded", "i/o timeout", "connection reset", "service unavailable"} {
		if strings.Contains(stderr, cause) {
			return true
		}
	}
	return false
}

// onNode runs a command in a node's container (the node's own root).
func (e *env) onNode(ctx context.Context, node string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"exec", node}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("on node %s: %s: %w: %s", node, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// poll waits with tests/framework/poll until cond reports done; an error
// cond returns ends the wait at once (a Pod that failed will not run). The
// reason cond gives while not done is in the error when time runs out.
func poll(ctx context.Context, what string, timeout time.Duration, cond func() (bool, string, error)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err := fpoll.Every(ctx, 500*time.Millisecond, timeout, func() error {
		done, why, err := cond()
		switch {
		case err != nil:
			cancel(err)
			return err
		case !done:
			return errors.New(why)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// containerState says how each container of a Pod is, init containers
// first.
func containerStates(p *corev1.Pod) string {
	var b strings.Builder
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			state := "waiting"
			switch {
			case s.State.Running != nil:
				state = "running"
			case s.State.Terminated != nil:
				state = fmt.Sprintf("terminated(%d)", s.State.Terminated.ExitCode)
			case s.State.Waiting != nil:
				state = "waiting(" + s.State.Waiting.Reason + ")"
			}
			fmt.Fprintf(&b, "%s=%s ", s.Name, state)
		}
	}
	return strings.TrimSpace(b.String())
}
