// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

type countingPreBoot struct {
	calls  int
	cancel context.CancelFunc
}

func (h *countingPreBoot) PreBoot(ctx context.Context, _ *PreBootRequest) error {
	h.calls++
	if h.cancel != nil {
		h.cancel() // the caller gives up while the handler runs
	}
	return nil
}

var vmiJSON = []byte(`{"metadata":{"namespace":"ns1","name":"vm1"}}`)

func TestCancelledRequestDoesNotReachHandler(t *testing.T) {
	h := &countingPreBoot{}
	svc := &launcherService{plugin: "demo", handler: h}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := svc.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{Vmi: vmiJSON})
	if status.Code(err) != codes.Canceled || h.calls != 0 {
		t.Fatalf("err = %v, handler calls = %d; want Canceled without calling the handler", err, h.calls)
	}
}

func TestResultAfterCallerGaveUpIsContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h := &countingPreBoot{cancel: cancel}
	svc := &launcherService{plugin: "demo", handler: h}
	_, err := svc.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{Vmi: vmiJSON})
	if status.Code(err) != codes.Canceled || h.calls != 1 {
		t.Fatalf("err = %v, handler calls = %d; want Canceled after one call", err, h.calls)
	}
}
