// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// Options configure Run.
type Options struct {
	// Out receives the transcript. Default: os.Stdout.
	Out io.Writer
	// Log receives the output of the scripts and kubectl, and the
	// components' logs when a step fails. Default: io.Discard.
	Log io.Writer
	// Keep leaves the cluster running at the end (for a look around).
	Keep bool
	// Only narrows the scenario: "kubevirt" runs the cluster's set-up and
	// the phase on KubeVirt itself, without the steps on the stand-ins.
	// Default: every step.
	Only string
	// Pristine runs the phase on KubeVirt itself with KubeVirt v1.9.0
	// built without the framework's patches (the build patches only), and
	// every step after failed checks too: the run that shows which of the
	// phase's checks need the framework inside KubeVirt (docs/kubevirt.md).
	// It implies Only "kubevirt".
	Pristine bool
}

// Run plays the scenario on a fresh kind cluster it creates and, unless
// Keep, deletes at the end.
func Run(ctx context.Context, opts Options) *transcript.Result {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	r := transcript.New(opts.Out)
	r.StepTimeout = 20 * time.Minute
	root, err := repo.Root()
	if err != nil {
		return &transcript.Result{Err: err}
	}
	s := &scenario{Runner: r, env: &env{root: root, log: opts.Log}, keep: opts.Keep, pristine: opts.Pristine}
	steps := s.steps()
	only := opts.Only
	if opts.Pristine {
		r.KeepGoing = true
		// Its operator does not deploy beside deploy/'s Plugin CRD: a
		// shorter wait to see that (pristineOperator).
		s.scriptEnv = []string{"KVP_KUBEVIRT_PRISTINE=1", "KVP_KUBEVIRT_TIMEOUT=420"}
		only = "kubevirt"
	}
	switch only {
	case "":
	case "kubevirt":
		steps = slices.Concat(steps[:3], s.kubevirtSteps())
	default:
		return &transcript.Result{Err: fmt.Errorf("option Only %q: want \"kubevirt\" or nothing", opts.Only)}
	}
	return r.Run(ctx, steps)
}

type scenario struct {
	*transcript.Runner
	*env
	keep bool
	// pristine: KubeVirt without the framework (Options.Pristine).
	pristine bool

	workers []string
	vm      *vmState
	// injection is how the samples' sidecars are injected on this
	// cluster, sidecars what each sample's sidecar.yaml describes.
	injection injection
	sidecars  map[string]*sidecarinjection.Sidecar
	// kv is the phase on KubeVirt itself.
	kv *kubevirtState
}

func (s *scenario) steps() []transcript.Step {
	return append(s.standinSteps(), s.kubevirtSteps()...)
}

// standinSteps set the cluster up and take a VM through its life on the
// stand-ins of virt-handler and virt-launcher (tests/cluster/standin).
func (s *scenario) standinSteps() []transcript.Step {
	return []transcript.Step{
		{Title: "A kind cluster of three nodes from the node image built here", Run: s.startCluster},
		{Title: "kubectl apply -k deploy/ and deploy/sidecar-injector into the restricted namespace kubevirt", Run: s.deploy},
		{Title: "The samples applied with kubectl apply -k for the injection path, and the virt-handler stand-in", Run: s.applySamples},
		{Title: "A VM's launcher Pod: its sidecars are injected as native sidecars, the kubelet runs them, the VM boots", Run: s.bootVM},
		{Title: "A template label change reaches the running launcher Pod in place", Run: s.syncLabel},
		{Title: "The plugin-controller leader Pod is deleted mid-run", Run: s.killLeader},
		{Title: "Live migration to the other worker, tuned by migration-tuner", Run: s.migrate},
		{Title: "A node-hook-recorder Pod restarts; the next node hook reaches the new one", Run: s.restartRecorder},
		{Title: "Stopping the VM: the target launcher Pod completes", Run: s.stopVM},
		{Title: "Node hooks from each node's handler reached that node's recorder, in order", Run: s.nodeHooks},
		{Title: "A sidecar container is killed: the kubelet restarts it, the next boot waits for it", Run: s.killSidecar},
	}
}

var errCheckFailed = transcript.ErrCheckFailed
