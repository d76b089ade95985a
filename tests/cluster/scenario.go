// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
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
	// Pristine runs the scenario on KubeVirt v1.9.0 built without the
	// framework's patches (the build patches only), deployed at once, and
	// every step after failed checks too: the run that shows which of the
	// checks need the framework inside KubeVirt (docs/kubevirt.md).
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
	s := &scenario{Runner: r, env: newEnv(root, opts.Log), keep: opts.Keep, pristine: opts.Pristine}
	if opts.Pristine {
		r.KeepGoing = true
		s.scriptEnv = []string{"KVP_KUBEVIRT_PRISTINE=1"}
	}
	return r.Run(ctx, s.steps())
}

type scenario struct {
	*transcript.Runner
	*env
	keep bool
	// pristine: KubeVirt without the framework (Options.Pristine).
	pristine bool

	workers []string
	// injection is how the samples' sidecars are injected on this
	// cluster, sidecars what each sample's sidecar.yaml describes.
	injection injection
	sidecars  map[string]*sidecarinjection.Sidecar
	// kv is what the steps on KubeVirt carry from one to the next.
	kv *kubevirtState
	// imagesBuilt is closed when the build of the project's images, which
	// startCluster starts in the background, ends, imagesErr then set;
	// loadImages and the e2e's cluster wait for it.
	imagesBuilt  chan struct{}
	imagesErr    error
	imagesLoaded bool
	// e2e is KubeVirt's Plugins e2e on a cluster of its own, run in the
	// background from the first step on KubeVirt (startE2E).
	e2e *e2eRun
}

// steps: a cluster, KubeVirt v1.9.0 as released with a VM on it, moved to
// the patched build as an admin upgrades KubeVirt, the framework's deploy/
// and the samples on top, then the VM's life and the faults through
// KubeVirt. Pristine deploys the unpatched build at once and runs the same
// checks on it.
func (s *scenario) steps() []transcript.Step {
	setup := []transcript.Step{
		{Title: "A kind cluster of three nodes from the node image built here", Run: s.startCluster},
		{Title: "KubeVirt v1.9.0 built as released and with kubevirt/patches, its images made from Debian packages", Run: s.buildKubeVirt},
	}
	framework := []transcript.Step{
		{Title: "kubectl apply -k deploy/ and deploy/sidecar-injector into KubeVirt's namespace", Run: s.deploy},
		{Title: "The samples applied with kubectl apply -k for the injection path", Run: s.applySamples},
	}
	var install []transcript.Step
	if s.pristine {
		setup[1].Title = "KubeVirt v1.9.0 built without the framework's patches, its images made from Debian packages"
		install = slices.Concat([]transcript.Step{
			{Title: "KubeVirt deployed by its own virt-operator", Run: s.deployKubeVirt},
		}, framework)
	} else {
		install = slices.Concat([]transcript.Step{
			{Title: "KubeVirt v1.9.0 as released, deployed by its own virt-operator, runs a VM", Run: s.kvRelease},
			{Title: "KubeVirt moved to the patched build as an admin upgrades it: the build's operator manifest, the CR's imageTag; the VM live-migrates onto a patched launcher, never restarted", Run: s.kvUpgrade},
		}, framework, []transcript.Step{
			{Title: "The migrated VM under the framework: the patched virt-handler delivers its node hooks, to a recorder Pod that restarted; its Plugins apply at its next start", Run: s.kvUpgradedVM},
			{Title: "The plugin-controller leader Pod is deleted mid-run", Run: s.killLeader},
		})
	}
	return slices.Concat(setup, install, s.kubevirtSteps())
}

var errCheckFailed = transcript.ErrCheckFailed
