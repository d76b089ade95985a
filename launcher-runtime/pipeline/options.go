// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// DefaultMaxMessageSize is the gRPC message limit, in both directions, for
// sidecar calls: large enough for domains with hundreds of devices.
const DefaultMaxMessageSize = 16 << 20

// Options configure a Pipeline. The zero value is usable; every field
// documents its default.
type Options struct {
	// Logger receives one structured line per hook run and per ignored
	// failure. Default: logr.Discard().
	Logger logr.Logger

	// Registerer receives the hook duration histogram and outcome counter.
	// Default: nil, no metrics are recorded.
	Registerer prometheus.Registerer

	// OnOutcome, when set, is called with every count the Pipeline adds
	// to its outcome metric, and says whether it adds one to the CEL
	// cost-limit metric too, whether or not Registerer is set: a host
	// whose metrics are not scraped hands the counts on
	// (launcher-runtime/kubevirthost does, to virt-handler). It is called
	// during the hook point call, by the goroutine running it, and must
	// return quickly; concurrent calls of the Pipeline call it
	// concurrently. Default: nil.
	OnOutcome func(CountedOutcome)

	// OnOverlap, when set, is called with every count the Pipeline adds
	// to its overlap metric, whether or not Registerer is set, by the
	// goroutine running the hook point call, as OnOutcome is. Default:
	// nil.
	OnOverlap func(CountedOverlap)

	// LegacyHooks runs the legacy annotation-based hook sidecars before
	// the plugin GuestDefinition hooks. Default: nil, none.
	LegacyHooks LegacyHooks

	// Clock measures hook durations and drives the socket wait. Per-hook
	// timeouts are context deadlines and follow the real clock.
	// Default: the real clock.
	Clock clock.Clock

	// SocketRoot stands in for pluginv1alpha1.SocketsRoot, where the
	// sidecar sockets live; a socketPath of
	// /var/run/kubevirt-plugin/<plugin>/x.sock is looked up as
	// <SocketRoot>/<plugin>/x.sock. It is resolved once with
	// filepath.EvalSymlinks (on many images /var/run links to /run);
	// symlinks below it are refused. Default: pluginv1alpha1.SocketsRoot.
	SocketRoot string

	// SocketWaitBudget is the total time one hook point call waits for the
	// sockets of all the sidecars it calls to become ready: to exist and
	// accept a connection (a socket file nothing listens on is waited for,
	// as a sidecar restarting). It is separate from the per-hook timeout.
	// Default: pluginv1alpha1.SocketWaitBudget (30s).
	SocketWaitBudget time.Duration

	// CEL is the environment that compiles and caches conditions and
	// GuestDefinition expressions; hosts pass theirs to share its cache.
	// Default: a new environment built from CELOptions.
	CEL *celenv.Env

	// CELOptions configure the environment built when CEL is nil. Default:
	// the zero value, celenv's defaults (cost limit, cache size).
	CELOptions celenv.Options

	// TrackSidecarWrites makes GuestDefinition compare the domain before
	// and after every sidecar hook, to tell which parts each changed and
	// which overlap with what another plugin changed (Report, the overlaps
	// metric). It decodes every sidecar's answer, which the chain otherwise
	// avoids. CEL hooks are always tracked: their merge knows what they
	// wrote. Default: false; sidecars are tracked too when Logger is
	// enabled at V(1).
	TrackSidecarWrites bool

	// MaxMessageSize bounds gRPC messages sent to and received from
	// sidecars, in bytes. Default: DefaultMaxMessageSize (16 MiB).
	MaxMessageSize int
}

func (o Options) withDefaults() Options {
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.SocketRoot == "" {
		o.SocketRoot = pluginv1alpha1.SocketsRoot
	}
	if o.SocketWaitBudget <= 0 {
		o.SocketWaitBudget = pluginv1alpha1.SocketWaitBudget
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	return o
}
