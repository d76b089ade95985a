// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"google.golang.org/grpc"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// fixtureVMI is a real VMI manifest shared by the project's tests, so that
// the benchmarks encode a VMI of realistic size.
const fixtureVMI = "../../../shared/fixtures/vmi-fedora.yaml"

func loadFixtureVMI(b *testing.B) *kubevirtv1.VirtualMachineInstance {
	b.Helper()
	data, err := os.ReadFile(fixtureVMI)
	if errors.Is(err, fs.ErrNotExist) {
		b.Skipf("fixture %s is absent (it lives next to the repository, in shared/fixtures)", fixtureVMI)
	}
	if err != nil {
		b.Fatal(err)
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := yaml.Unmarshal(data, vmi); err != nil {
		b.Fatalf("%s: %v", fixtureVMI, err)
	}
	if vmi.UID == "" {
		vmi.UID = "bench-uid"
	}
	return vmi
}

// benchDispatcher serves a real node hook server on a Unix socket and
// returns a dispatcher with one plugin holding n hooks on it.
func benchDispatcher(b *testing.B, hooks int) *Dispatcher {
	b.Helper()
	root := socketRoot(b)
	sock := serve(b, root, &hookServer{name: "bench", journal: &journal{}})
	var hs []pluginv1alpha1.NodeHook
	for range hooks {
		hs = append(hs, nodeHook(sock, pluginv1alpha1.PreVMStart))
	}
	d, _ := newDispatcher(b, root, nil, plugin("bench", `vmi.Labels["special"] == "vmi-fedora"`, hs...))
	return d
}

func runDispatch(b *testing.B, d *Dispatcher, vmi *kubevirtv1.VirtualMachineInstance) {
	b.Helper()
	ctx := b.Context()
	// One call outside the timing: compiles the condition, dials the socket.
	if err := d.Dispatch(ctx, pluginv1alpha1.PreVMStart, vmi, NodeContext{NodeName: "node01"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Dispatch(ctx, pluginv1alpha1.PreVMStart, vmi, NodeContext{NodeName: "node01"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatch is the latency of one dispatch whose plugin has 1 or 5
// hooks on one server: snapshot, condition (compiled once), VMI encoding,
// socket checks and the calls over pooled connections.
func BenchmarkDispatch(b *testing.B) {
	vmi := loadFixtureVMI(b)
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			runDispatch(b, benchDispatcher(b, n), vmi)
		})
	}
}

// dialPerCall is the baseline the pool is measured against: a new client
// connection for every call, dialed as the pool dials, closed afterwards.
type dialPerCall struct {
	dial func(socket string, opts ...grpc.DialOption) (*grpc.ClientConn, error)
}

func (c dialPerCall) Call(ctx context.Context, path string, fn func(context.Context, grpc.ClientConnInterface) error) error {
	conn, err := c.dial(path)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(ctx, conn)
}

// BenchmarkConnection compares a one-hook dispatch over the pooled
// connection with the same dispatch dialing a new connection per call.
func BenchmarkConnection(b *testing.B) {
	vmi := loadFixtureVMI(b)
	b.Run("reuse", func(b *testing.B) {
		runDispatch(b, benchDispatcher(b, 1), vmi)
	})
	b.Run("dial-per-call", func(b *testing.B) {
		d := benchDispatcher(b, 1)
		d.call = dialPerCall{dial: checkedDial(d.sockets)}
		runDispatch(b, d, vmi)
	})
}
