// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// serverMetrics are the grpc_server_* series of go-grpc-middleware's
// Prometheus provider (providers/prometheus, NewServerMetrics with
// WithServerHandlingTimeHistogram): the same names, labels, buckets and
// pre-initialised series, counted by the same reporting interceptor
// (TestServerMetricsMatchProvider compares the two), with help texts of
// their own. The provider is not
// imported because its InitializeMetrics takes a grpc/reflection type,
// which links grpc/reflection and protobuf's descriptor packages, and
// initialises them, in every binary built on the SDK, with or without
// WithRegisterer.
type serverMetrics struct {
	started         *prometheus.CounterVec
	handled         *prometheus.CounterVec
	msgReceived     *prometheus.CounterVec
	msgSent         *prometheus.CounterVec
	handlingSeconds *prometheus.HistogramVec
}

var _ prometheus.Collector = (*serverMetrics)(nil)

func newServerMetrics() *serverMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	withCode := []string{"grpc_type", "grpc_service", "grpc_method", "grpc_code"}
	return &serverMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_started_total",
			Help: "gRPC calls the sidecar began handling, per method.",
		}, labels),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_handled_total",
			Help: "gRPC calls the sidecar finished handling, per method and status code, failed ones included.",
		}, withCode),
		msgReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_msg_received_total",
			Help: "Request messages the sidecar read, per method.",
		}, labels),
		msgSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_msg_sent_total",
			Help: "Response messages the sidecar wrote, per method.",
		}, labels),
		handlingSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grpc_server_handling_seconds",
			Help:    "Time the sidecar took to handle a gRPC call, in seconds, per method.",
			Buckets: prometheus.DefBuckets,
		}, labels),
	}
}

// Describe implements prometheus.Collector.
func (m *serverMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.started.Describe(ch)
	m.handled.Describe(ch)
	m.msgReceived.Describe(ch)
	m.msgSent.Describe(ch)
	m.handlingSeconds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *serverMetrics) Collect(ch chan<- prometheus.Metric) {
	m.started.Collect(ch)
	m.handled.Collect(ch)
	m.msgReceived.Collect(ch)
	m.msgSent.Collect(ch)
	m.handlingSeconds.Collect(ch)
}

// initialize creates, at zero, the series of every method registered on g
// (grpc_server_handled_total for every code), so that they are exported
// before the first call.
func (m *serverMetrics) initialize(g *grpc.Server) {
	for service, info := range g.GetServiceInfo() {
		for _, method := range info.Methods {
			lvs := []string{string(methodType(method)), service, method.Name}
			m.started.WithLabelValues(lvs...)
			m.msgReceived.WithLabelValues(lvs...)
			m.msgSent.WithLabelValues(lvs...)
			m.handlingSeconds.WithLabelValues(lvs...)
			for _, code := range interceptors.AllCodes {
				m.handled.WithLabelValues(append(lvs, code.String())...)
			}
		}
	}
}

func methodType(m grpc.MethodInfo) interceptors.GRPCType {
	switch {
	case m.IsClientStream && m.IsServerStream:
		return interceptors.BidiStream
	case m.IsClientStream:
		return interceptors.ClientStream
	case m.IsServerStream:
		return interceptors.ServerStream
	default:
		return interceptors.Unary
	}
}

// unaryServerInterceptor counts calls with go-grpc-middleware's reporting
// interceptor, as the provider does.
func (m *serverMetrics) unaryServerInterceptor() grpc.UnaryServerInterceptor {
	return interceptors.UnaryServerInterceptor(interceptors.CommonReportableFunc(
		func(ctx context.Context, c interceptors.CallMeta) (interceptors.Reporter, context.Context) {
			r := &callReporter{m: m, lvs: []string{string(c.Typ), c.Service, c.Method}}
			m.started.WithLabelValues(r.lvs...).Inc()
			return r, ctx
		}))
}

// callReporter reports one call.
type callReporter struct {
	m   *serverMetrics
	lvs []string // grpc_type, grpc_service, grpc_method
}

func (r *callReporter) PostCall(err error, d time.Duration) {
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err)
	}
	r.m.handled.WithLabelValues(append(r.lvs[:3:3], st.Code().String())...).Inc()
	r.m.handlingSeconds.WithLabelValues(r.lvs...).Observe(d.Seconds())
}

func (r *callReporter) PostMsgSend(any, error, time.Duration) {
	r.m.msgSent.WithLabelValues(r.lvs...).Inc()
}

func (r *callReporter) PostMsgReceive(any, error, time.Duration) {
	r.m.msgReceived.WithLabelValues(r.lvs...).Inc()
}
