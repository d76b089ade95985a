// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

const (
	// DefaultSocketRoot is where sidecar sockets live; each plugin owns
	// DefaultSocketRoot/<plugin name>/ (the kubevirt-plugin-sockets volume,
	// mounted by the sidecar with subPath <plugin name>).
	DefaultSocketRoot = pluginv1alpha1.SocketsRoot
	// DefaultSocketName is the socket file name inside the plugin directory.
	DefaultSocketName = "hook.sock"
	// MaxMessageSize bounds gRPC messages both ways. Domains with many
	// devices and VMIs with large annotations reach several MiB.
	MaxMessageSize = 16 << 20
	// DefaultGracePeriod is how long in-flight calls may finish after the
	// serving context is cancelled before they are cut off.
	DefaultGracePeriod = 10 * time.Second
	// MaxSocketPathLength is the size of sun_path in struct sockaddr_un.
	MaxSocketPathLength = pluginv1alpha1.MaxSocketPathLength

	pluginDirPerm  = 0o750
	socketFilePerm = 0o660
)

// Option configures a server.
type Option func(*options)

type options struct {
	logger      logr.Logger
	registerer  prometheus.Registerer
	socketRoot  string
	socketName  string
	gracePeriod time.Duration
}

func newOptions(opts []Option) options {
	o := options{
		logger:      logr.Discard(),
		socketRoot:  DefaultSocketRoot,
		socketName:  DefaultSocketName,
		gracePeriod: DefaultGracePeriod,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithLogger sets the logger for call logs and server events. Default:
// logr.Discard().
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer registers the gRPC server metrics (grpc_server_handled_total,
// grpc_server_handling_seconds and the other grpc_server_* series) with r.
// Two servers on one registerer share the collectors (README.md, "Metrics");
// to tell them apart, give each its own, for example
// prometheus.WrapRegistererWith(prometheus.Labels{"server": "..."}, reg).
// Default: no metrics.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}

// WithSocketRoot sets the directory that holds the plugin directories of
// sidecar sockets. Default: DefaultSocketRoot. Ignored by node servers.
func WithSocketRoot(dir string) Option { return func(o *options) { o.socketRoot = dir } }

// WithSocketName sets the socket file name inside the plugin directory; it
// must end with ".sock". Default: DefaultSocketName. Ignored by node servers.
func WithSocketName(name string) Option { return func(o *options) { o.socketName = name } }

// WithGracePeriod sets how long in-flight calls may finish once the
// serving context is cancelled. Default: DefaultGracePeriod.
func WithGracePeriod(d time.Duration) Option { return func(o *options) { o.gracePeriod = d } }
