// SPDX-License-Identifier: Apache-2.0

package recorder

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

var fixedTime = time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)

func newRecorder(t *testing.T, opts Options) (*Recorder, hooksv1alpha1.NodeHookServiceClient) {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "events", "events.jsonl")
	}
	opts.Now = func() time.Time { return fixedTime }
	rec, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	conn, err := sdktest.Dial(sdktest.StartNode(t, rec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return rec, hooksv1alpha1.NewNodeHookServiceClient(conn)
}

func execute(ctx context.Context, cl hooksv1alpha1.NodeHookServiceClient, hp sdk.NodeHookPoint, name string) error {
	_, err := cl.ExecuteNodeHook(ctx, &hooksv1alpha1.ExecuteNodeHookRequest{
		HookPoint:   string(hp),
		Vmi:         sdktest.VMIJSON("ns1", name, nil, nil),
		NodeContext: &hooksv1alpha1.NodeContext{NodeName: "node01"},
	})
	return err
}

func TestRecorderRecordsEveryEventInOrder(t *testing.T) {
	rec, cl := newRecorder(t, Options{})
	points := []sdk.NodeHookPoint{sdk.NodeHookPreVMStart, sdk.NodeHookPostVMStart, sdk.NodeHookPostVMStart, sdk.NodeHookOnVMStop}
	for _, hp := range points {
		if err := execute(t.Context(), cl, hp, "vm1"); err != nil {
			t.Fatalf("%s: %v", hp, err)
		}
	}
	got, err := ReadEvents(rec.opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(points) {
		t.Fatalf("recorded %d events, want %d: %+v", len(got), len(points), got)
	}
	for i, e := range got {
		want := Event{Seq: uint64(i + 1), HookPoint: string(points[i]), Namespace: "ns1", Name: "vm1",
			UID: "5d1b9b4e-8a3c-4f5e-9a43-3f2a8a7c1e01", Node: "node01", Time: fixedTime}
		if e != want {
			t.Errorf("event %d = %+v, want %+v", i, e, want)
		}
	}
}

func TestRecorderFailsOnDemand(t *testing.T) {
	rec, cl := newRecorder(t, Options{FailHookPoints: []sdk.NodeHookPoint{sdk.NodeHookPreVMStart}})
	if err := execute(t.Context(), cl, sdk.NodeHookPreVMStart, "vm1"); status.Code(err) != codes.Unknown {
		t.Fatalf("PreVMStart answered %v, want an Unknown error", err)
	}
	if err := execute(t.Context(), cl, sdk.NodeHookPostVMStop, "vm1"); err != nil {
		t.Fatalf("PostVMStop: %v", err)
	}
	got, err := ReadEvents(rec.opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Failed || got[1].Failed {
		t.Fatalf("events = %+v, want the failing PreVMStart marked failed and PostVMStop not", got)
	}
}

func TestRecorderDelayEndsWithCallerContext(t *testing.T) {
	rec, cl := newRecorder(t, Options{Delay: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := execute(ctx, cl, sdk.NodeHookPreMigrationTarget, "vm1"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("slow call answered %v, want DeadlineExceeded", err)
	}
	got, err := ReadEvents(rec.opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].HookPoint != string(sdk.NodeHookPreMigrationTarget) {
		t.Fatalf("events = %+v, want the slow call recorded on arrival", got)
	}
}

func TestRecorderContinuesSequenceAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	first, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	req := &sdk.NodeHookRequest{HookPoint: sdk.NodeHookPreVMStart, VMI: sdkVMI(t), NodeName: "n"}
	for range 2 {
		if err := first.ExecuteNodeHook(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.ExecuteNodeHook(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Seq != 3 {
		t.Fatalf("events = %+v, want the third event numbered 3", got)
	}
}

func TestParseHookPointsRejectsUnknown(t *testing.T) {
	if _, err := ParseHookPoints([]string{"PreVMStart", "PreBoot"}); err == nil {
		t.Fatal("PreBoot (a launcher hook point) was accepted as a node hook point")
	}
	got, err := ParseHookPoints([]string{"", "OnVMStop"})
	if err != nil || len(got) != 1 || got[0] != sdk.NodeHookOnVMStop {
		t.Fatalf("ParseHookPoints = %v, %v", got, err)
	}
}

func TestRecorderPassesNodeContract(t *testing.T) {
	rec, err := New(Options{Path: filepath.Join(t.TempDir(), "events.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	sdktest.RunNodeContract(t, sdktest.StartNode(t, rec), sdktest.NodeContract{})
}
