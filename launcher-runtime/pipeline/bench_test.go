package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
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
// expression once in New and copies the domain once per call, with a
// baseline that compiles every expression on every call and copies the
// domain through XML before each hook.
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
				out, err := p.GuestDefinition(context.Background(), vmi, domain, pipeline.Boot)
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
				out, err := baselineGuestDefinition(env, exprs, call, vmi, domain)
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

func baselineGuestDefinition(env *celenv.Env, exprs []string, call int, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*libvirtxml.Domain, error) {
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
		if err := t.Apply(context.Background(), vmi, next); err != nil {
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

// descriptionSidecar is a GuestDefinition sidecar written with the SDK that
// sets the domain description.
type descriptionSidecar struct{}

func (descriptionSidecar) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	req.Domain.Description = "sidecar"
	return req.Domain, nil
}

// BenchmarkGuestDefinitionSidecarRoundTrip measures one sidecar hook on a
// 20 KB domain: socket check, connection, XML encoding both ways on both
// sides, and the gRPC call over a Unix socket to an SDK server.
func BenchmarkGuestDefinitionSidecarRoundTrip(b *testing.B) {
	root := socketRoot(b)
	srv, err := sdk.NewLauncherServer("bench", descriptionSidecar{}, sdk.WithSocketRoot(root))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	p := newPipeline(b, root, []pluginv1alpha1.Plugin{plugin("bench", sidecarHook(declared("bench", sdk.DefaultSocketName), pluginv1alpha1.GuestDefinition))})
	vmi := testVMI(b)
	domain, size := bigDomain(b, 20<<10)
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.GuestDefinition(context.Background(), vmi, domain, pipeline.Boot)
		if err != nil {
			b.Fatal(err)
		}
		if out.Description != "sidecar" {
			b.Fatalf("description %q", out.Description)
		}
	}
	b.ReportMetric(float64(size), "domain-bytes")
}
