// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// benchExpressions are GuestDefinition expressions of the kind plugins
// write; hook i uses expression i%len with its own tag, so every hook is a
// distinct program.
var benchExpressions = []string{
	`Domain{CPU: DomainCPU{Mode: "host-passthrough"}, Description: "%s"}`,
	`Domain{Title: "owner " + vmi.Annotations["example.com/owner"], Description: "%s"}`,
	`Domain{OnCrash: vmi.Labels["app"] == "web" ? "coredump-restart" : "destroy", Description: "%s"}`,
	`Domain{Memory: DomainMemory{Value: 4096u, Unit: "MiB"}, Description: "%s"}`,
	`Domain{Clock: DomainClock{Offset: "utc", Timer: [DomainTimer{Name: "hpet", Present: "no"}]}, Description: "%s"}`,
}

func benchExprs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(benchExpressions[i%len(benchExpressions)], fmt.Sprintf("hook-%d", i))
	}
	return out
}

// BenchmarkGuestDefinitionCEL compares the pipeline, which compiles every
// expression once in New and merges each hook's result copy-on-write
// (without copying the domain), with a baseline that compiles every
// expression on every call and copies the domain through XML before each
// hook.
func BenchmarkGuestDefinitionCEL(b *testing.B) {
	vmi, domain := testVMI(b), testDomain(b)
	for _, n := range []int{1, 5, 20} {
		exprs := benchExprs(n)
		b.Run(fmt.Sprintf("hooks=%d/pipeline", n), func(b *testing.B) {
			var hooks []pluginv1alpha1.LauncherHook
			for _, e := range exprs {
				hooks = append(hooks, celHook(e))
			}
			p, err := pipeline.New([]pluginv1alpha1.Plugin{plugin("bench", hooks...)}, pipeline.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.GuestDefinition(b.Context(), vmi, domain, pipeline.Boot)
				if err != nil {
					b.Fatal(err)
				}
				if out.Description != fmt.Sprintf("hook-%d", n-1) {
					b.Fatalf("description %q", out.Description)
				}
			}
		})
		b.Run(fmt.Sprintf("hooks=%d/baseline-compile-and-xml-copy", n), func(b *testing.B) {
			// A one-entry cache and a fresh comment per call make every
			// DomainTransform a full compilation.
			env, err := celenv.New(celenv.Options{CacheSize: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			call := 0
			for b.Loop() {
				call++
				out, err := baselineGuestDefinition(b.Context(), env, exprs, call, vmi, domain)
				if err != nil {
					b.Fatal(err)
				}
				if out.Description != fmt.Sprintf("hook-%d", n-1) {
					b.Fatalf("description %q", out.Description)
				}
			}
		})
	}
}

// BenchmarkGuestDefinitionOverlapBookkeeping measures what telling who
// changed what costs: the same five CEL hooks, each changing its own part of
// the domain, in one plugin (nothing can overlap, no bookkeeping) and in
// five plugins (every written path compared with the others'; none
// overlaps).
func BenchmarkGuestDefinitionOverlapBookkeeping(b *testing.B) {
	vmi, domain := testVMI(b), testDomain(b)
	exprs := []string{
		`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`,
		`Domain{Title: "owner " + vmi.Annotations["example.com/owner"]}`,
		`Domain{OnCrash: vmi.Labels["app"] == "web" ? "coredump-restart" : "destroy"}`,
		`Domain{Memory: DomainMemory{Value: 4096u, Unit: "MiB"}}`,
		`Domain{Clock: DomainClock{Offset: "utc", Timer: [DomainTimer{Name: "hpet", Present: "no"}]}}`,
	}
	var hooks []pluginv1alpha1.LauncherHook
	var separate []pluginv1alpha1.Plugin
	for i, e := range exprs {
		hooks = append(hooks, celHook(e))
		separate = append(separate, plugin(fmt.Sprintf("p%d", i), celHook(e)))
	}
	for _, tc := range []struct {
		name    string
		plugins []pluginv1alpha1.Plugin
	}{
		{"one-plugin", []pluginv1alpha1.Plugin{plugin("bench", hooks...)}},
		{"five-plugins", separate},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, err := pipeline.New(tc.plugins, pipeline.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.GuestDefinition(b.Context(), vmi, domain, pipeline.Boot); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func baselineGuestDefinition(ctx context.Context, env *celenv.Env, exprs []string, call int, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	current := domain
	for i, e := range exprs {
		t, err := env.DomainTransform(fmt.Sprintf("%s // call %d hook %d", e, call, i))
		if err != nil {
			return nil, err
		}
		text, err := current.Marshal()
		if err != nil {
			return nil, err
		}
		next := &libvirtxml.Domain{}
		if err := next.Unmarshal(text); err != nil {
			return nil, err
		}
		if err := t.Apply(ctx, vmi, next); err != nil {
			return nil, err
		}
		current = next
	}
	return current, nil
}

// bigDomain grows the test domain with more disks until its XML is at
// least size bytes.
func bigDomain(b *testing.B, size int) (*libvirtxml.Domain, int) {
	d := testDomain(b)
	template := d.Devices.Disks[0]
	for i := 0; ; i++ {
		text, err := d.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		if len(text) >= size {
			return d, len(text)
		}
		disk := template
		disk.Target = &libvirtxml.DomainDiskTarget{Dev: fmt.Sprintf("vdx%d", i), Bus: "virtio"}
		disk.Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("ua-extra-%d", i)}
		disk.Boot = nil
		d.Devices.Disks = append(d.Devices.Disks, disk)
	}
}

// tagSidecar is a GuestDefinition sidecar written with the SDK that appends
// its tag to the domain description, so that a chain shows its order.
type tagSidecar string

func (t tagSidecar) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	if req.Domain.Description == "" {
		req.Domain.Description = string(t)
	} else {
		req.Domain.Description += "," + string(t)
	}
	return req.Domain, nil
}

// serveSDK runs n tagSidecars, plugins s0..s(n-1), on sockets below root
// until the benchmark ends, and returns their socket files.
func serveSDK(b *testing.B, root string, n int) []string {
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var files []string
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		srv, err := sdk.NewLauncherServer(name, tagSidecar(name), sdk.WithSocketRoot(root))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			_ = srv.Serve(ctx)
		})
		files = append(files, filepath.Join(root, name, sdk.DefaultSocketName))
	}
	// NewLauncherServer listens before it returns: no iteration measures a
	// start.
	return files
}

// inTreeGuestDefinition does, per sidecar, what KubeVirt's in-tree hook
// client does: encode the domain and the VMI, dial the socket, call, close
// the connection, decode the answer.
func inTreeGuestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, sockets []string) (*libvirtxml.Domain, error) {
	current := domain
	for _, socket := range sockets {
		domainXML, err := current.Marshal()
		if err != nil {
			return nil, err
		}
		vmiJSON, err := json.Marshal(vmi)
		if err != nil {
			return nil, err
		}
		conn, err := grpc.NewClient("unix://"+socket,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(pipeline.DefaultMaxMessageSize), grpc.MaxCallSendMsgSize(pipeline.DefaultMaxMessageSize)))
		if err != nil {
			return nil, err
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := hooksv1alpha1.NewLauncherHookServiceClient(conn).GuestDefinition(callCtx, &hooksv1alpha1.GuestDefinitionRequest{
			DomainXml:      []byte(domainXML),
			Vmi:            vmiJSON,
			SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(pipeline.Boot)},
		})
		cancel()
		_ = conn.Close()
		if err != nil {
			return nil, err
		}
		next := &libvirtxml.Domain{}
		if err := next.Unmarshal(string(resp.GetDomainXml())); err != nil {
			return nil, err
		}
		current = next
	}
	return current, nil
}

// BenchmarkGuestDefinitionSidecars measures GuestDefinition through chains
// of one and three SDK sidecars on a 20 KB domain: the pipeline (VMI
// encoded once per call, domain XML handed from sidecar to sidecar as bytes
// and decoded once, one kept connection per socket) against a baseline that
// does per sidecar what KubeVirt's in-tree client does.
func BenchmarkGuestDefinitionSidecars(b *testing.B) {
	vmi := testVMI(b)
	domain, size := bigDomain(b, 20<<10)
	for _, n := range []int{1, 3} {
		var tags []string
		for i := range n {
			tags = append(tags, fmt.Sprintf("s%d", i))
		}
		want := strings.Join(tags, ",")
		b.Run(fmt.Sprintf("sidecars=%d/pipeline", n), func(b *testing.B) {
			root := socketRoot(b)
			serveSDK(b, root, n)
			var plugins []pluginv1alpha1.Plugin
			for _, name := range tags {
				plugins = append(plugins, plugin(name, sidecarHook(declared(name, sdk.DefaultSocketName), pluginv1alpha1.GuestDefinition)))
			}
			p := newPipeline(b, root, plugins)
			b.Cleanup(func() { _ = p.Close() })
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				out, err := p.GuestDefinition(b.Context(), vmi, domain, pipeline.Boot)
				if err != nil {
					b.Fatal(err)
				}
				if out.Description != want {
					b.Fatalf("description %q, want %q", out.Description, want)
				}
			}
			cpu.report(b)
			b.ReportMetric(float64(size), "domain-bytes")
		})
		b.Run(fmt.Sprintf("sidecars=%d/baseline-in-tree", n), func(b *testing.B) {
			sockets := serveSDK(b, socketRoot(b), n)
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				out, err := inTreeGuestDefinition(b.Context(), vmi, domain, sockets)
				if err != nil {
					b.Fatal(err)
				}
				if out.Description != want {
					b.Fatalf("description %q, want %q", out.Description, want)
				}
			}
			cpu.report(b)
			b.ReportMetric(float64(size), "domain-bytes")
		})
	}
}

// cpuClock reads the CPU time (user and system) of the whole process, the
// in-process sidecars and the garbage collector included: on a machine
// shared with other work it moves much less than wall-clock time.
type cpuClock struct{ start time.Duration }

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) cpuClock { return cpuClock{start: processCPU(b)} }

// report adds the CPU time per iteration as the cpu-ns/op metric.
func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU(b)-c.start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDomainXMLCodec is the XML codec's share of a sidecar hook: one
// encoding and one decoding of the 20 KB domain, which the contract's XML
// makes the floor of every chain (the SDK sidecar does the same again on
// its side).
func BenchmarkDomainXMLCodec(b *testing.B) {
	domain, size := bigDomain(b, 20<<10)
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		text, err := domain.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		d := &libvirtxml.Domain{}
		if err := d.Unmarshal(text); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
	b.ReportMetric(float64(size), "domain-bytes")
}
