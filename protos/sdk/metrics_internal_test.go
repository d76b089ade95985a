// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// exposition renders what reg exports, one line per family and per series,
// with counter values and histogram sample counts and bounds (not the
// observed durations, which differ between two calls).
func exposition(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range families {
		// The help texts are the SDK's own; names, types, labels and
		// values are the provider's.
		lines = append(lines, fmt.Sprintf("# %s %s", f.GetName(), f.GetType()))
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			line := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			if c := m.GetCounter(); c != nil {
				line += fmt.Sprintf(" %v exemplar=%v", c.GetValue(), c.GetExemplar() != nil)
			}
			if h := m.GetHistogram(); h != nil {
				line += fmt.Sprintf(" count=%d", h.GetSampleCount())
				for _, b := range h.GetBucket() {
					line += fmt.Sprintf(" le=%v", b.GetUpperBound())
				}
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestServerMetricsMatchProvider checks that the SDK's grpc_server_* series
// are those of go-grpc-middleware's Prometheus provider as the SDK used to
// configure it: the same series after initialisation on the SDK's
// services, and the same counts after calls ending with every kind of
// error a handler or the SDK returns.
func TestServerMetricsMatchProvider(t *testing.T) {
	provider := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	ours := newServerMetrics()
	providerReg, ourReg := prometheus.NewRegistry(), prometheus.NewRegistry()
	providerReg.MustRegister(provider)
	ourReg.MustRegister(ours)

	g := grpc.NewServer()
	hooksv1alpha1.RegisterLauncherHookServiceServer(g, &launcherService{})
	hooksv1alpha1.RegisterNodeHookServiceServer(g, &nodeService{})
	provider.InitializeMetrics(g)
	ours.initialize(g)
	want, got := exposition(t, providerReg), exposition(t, ourReg)
	if got != want {
		t.Fatalf("series after initialisation differ\nprovider:\n%s\nSDK:\n%s", want, got)
	}

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	results := []error{
		nil,
		status.Error(codes.InvalidArgument, "invalid"),
		status.Error(codes.Internal, "handler panicked"),
		status.FromContextError(cancelled.Err()).Err(),
		errors.New("not a status"),
		context.Canceled,
		fmt.Errorf("wrapped: %w", context.DeadlineExceeded),
	}
	methods := []string{
		"/" + hooksv1alpha1.LauncherHookService_ServiceDesc.ServiceName + "/PreBoot",
		"/" + hooksv1alpha1.NodeHookService_ServiceDesc.ServiceName + "/ExecuteNodeHook",
		"/NoService",
	}
	for _, interceptor := range []grpc.UnaryServerInterceptor{provider.UnaryServerInterceptor(), ours.unaryServerInterceptor()} {
		for _, method := range methods {
			for _, result := range results {
				_, _ = interceptor(t.Context(), &hooksv1alpha1.PreBootRequest{}, &grpc.UnaryServerInfo{FullMethod: method},
					func(context.Context, any) (any, error) { return &hooksv1alpha1.PreBootResponse{}, result })
			}
		}
	}
	want, got = exposition(t, providerReg), exposition(t, ourReg)
	if got != want {
		t.Fatalf("series after calls differ\nprovider:\n%s\nSDK:\n%s", want, got)
	}

	// The names are the provider's too: a registry holding one refuses the
	// other, so the same series are never exported twice.
	if err := ourReg.Register(grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())); err == nil ||
		!strings.Contains(err.Error(), "grpc_server_") {
		t.Fatalf("registering the provider's collector next to the SDK's: %v, want a refusal naming a grpc_server_ series", err)
	}
}
