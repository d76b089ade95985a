// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

const gd = pluginv1alpha1.GuestDefinition

func TestHooksRunInDeclarationOrderWithinPlugin(t *testing.T) {
	root := socketRoot(t)
	s1 := &sidecar{guestDefinition: editDomain(appendDescription("sidecar-1"))}
	s3 := &sidecar{guestDefinition: editDomain(appendDescription("sidecar-3"))}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("ordered",
		sidecarHook(serve(t, root, "ordered", "one.sock", s1), gd),
		celHook(celAppend("cel-2")),
		sidecarHook(serve(t, root, "ordered", "three.sock", s3), gd),
		celHook(celAppend("cel-4")),
	)})
	out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if want := "sidecar-1,cel-2,sidecar-3,cel-4"; out.Description != want {
		t.Errorf("hooks ran as %q, want %q", out.Description, want)
	}
}

func TestPluginsRunAlphabetically(t *testing.T) {
	root := socketRoot(t)
	sb := &sidecar{guestDefinition: editDomain(appendDescription("bravo"))}
	// Handed over in an order that is neither sorted nor reverse sorted.
	plugins := []pluginv1alpha1.Plugin{
		plugin("charlie", celHook(celAppend("charlie"))),
		plugin("alpha", celHook(celAppend("alpha"))),
		plugin("delta", celHook(celAppend("delta"))),
		plugin("bravo", sidecarHook(serve(t, root, "bravo", "hook.sock", sb), gd)),
	}
	p := newPipeline(t, root, plugins)
	out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if want := "alpha,bravo,charlie,delta"; out.Description != want {
		t.Errorf("plugins ran as %q, want %q", out.Description, want)
	}
	if plugins[0].Name != "charlie" {
		t.Errorf("New reordered the caller's slice")
	}
}

// legacyHooks stands in for the host's legacy hook sidecar runner.
type legacyHooks struct {
	seen   string
	tag    string
	err    error
	answer []byte // when set, the XML answered whatever the input
}

func (l *legacyHooks) RunGuestDefinition(_ context.Context, _ *kubevirtv1.VirtualMachineInstance, domainXML []byte) ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	if l.answer != nil {
		return l.answer, nil
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(domainXML)); err != nil {
		return nil, err
	}
	l.seen = d.Description
	d.Description = joinTag(d.Description, l.tag)
	out, err := d.Marshal()
	return []byte(out), err
}

func TestLegacyHooksRunBeforePluginHooks(t *testing.T) {
	root := socketRoot(t)
	legacy := &legacyHooks{tag: "legacy"}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("plugin", celHook(celAppend("plugin")))},
		func(o *pipeline.Options) { o.LegacyHooks = legacy })
	out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if legacy.seen != "" {
		t.Errorf("legacy hooks saw %q: a plugin hook ran before them", legacy.seen)
	}
	if want := "legacy,plugin"; out.Description != want {
		t.Errorf("got %q, want %q", out.Description, want)
	}
}

func TestLegacyHookErrorFailsGuestDefinition(t *testing.T) {
	p := newPipeline(t, socketRoot(t), nil, func(o *pipeline.Options) {
		o.LegacyHooks = &legacyHooks{err: errors.New("hook sidecar crashed")}
	})
	_, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	mustContain(t, err, "legacy hook sidecars at GuestDefinition", "hook sidecar crashed")
}

// TestLegacyHookAnswerIsHandedOnAsBytes: the first plugin sidecar receives
// the legacy hook sidecars' XML as they answered it, and an answer that
// does not decode fails GuestDefinition naming the legacy hooks.
func TestLegacyHookAnswerIsHandedOnAsBytes(t *testing.T) {
	base, err := testDomain(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	answer := []byte("<!-- legacy -->\n" + base)
	root := socketRoot(t)
	s := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("after-legacy", sidecarHook(serve(t, root, "after-legacy", "hook.sock", s), gd))},
		func(o *pipeline.Options) { o.LegacyHooks = &legacyHooks{answer: answer} })
	if _, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot); err != nil {
		t.Fatal(err)
	}
	if len(s.gdReqs) != 1 || !bytes.Equal(s.gdReqs[0].DomainXml, answer) {
		t.Fatalf("the sidecar did not receive the legacy hooks' bytes")
	}

	bad := newPipeline(t, root, nil, func(o *pipeline.Options) {
		o.LegacyHooks = &legacyHooks{answer: []byte(`<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><vcpu>many</vcpu></domain>`)}
	})
	_, err = bad.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	mustContain(t, err, "legacy hook sidecars at GuestDefinition", "invalid domain XML")
}

func TestMigrationTargetResultDiscarded(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{guestDefinition: editDomain(appendDescription("sidecar"))}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("target",
		celHook(celAppend("cel")),
		sidecarHook(serve(t, root, "target", "hook.sock", s), gd),
	)})
	in := testDomain(t)
	out, err := p.GuestDefinition(t.Context(), testVMI(t), in, pipeline.MigrationTarget)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, testDomain(t)) {
		t.Errorf("on MigrationTarget the returned domain differs from the input: description %q", out.Description)
	}
	if len(s.gdReqs) != 1 {
		t.Fatalf("sidecar called %d times, want 1: hooks must still run on the target", len(s.gdReqs))
	}
	req := s.gdReqs[0]
	if got := req.GetSidecarContext().GetInvocationContext(); got != "MigrationTarget" {
		t.Errorf("sidecar saw invocation context %q, want MigrationTarget", got)
	}
	if !strings.Contains(string(req.DomainXml), "<description>cel</description>") {
		t.Errorf("sidecar on the target did not see the domain as the earlier CEL hook left it")
	}
}

func TestBootResultUsedAndInputUntouched(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{guestDefinition: editDomain(func(d *libvirtxml.Domain) {
		d.Devices.Interfaces = d.Devices.Interfaces[:1]
	})}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("boot",
		celHook(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`),
		sidecarHook(serve(t, root, "boot", "hook.sock", s), gd),
	)})
	in := testDomain(t)
	out, err := p.GuestDefinition(t.Context(), testVMI(t), in, pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if out.CPU.Mode != "host-passthrough" || out.CPU.Topology == nil || out.CPU.Topology.Cores != 2 {
		t.Errorf("CEL merge: got CPU %+v, want mode host-passthrough with the topology kept", out.CPU)
	}
	if len(out.Devices.Interfaces) != 1 {
		t.Errorf("sidecar result not used: %d interfaces", len(out.Devices.Interfaces))
	}
	if got := s.gdReqs[0].GetSidecarContext().GetInvocationContext(); got != "Boot" {
		t.Errorf("invocation context %q, want Boot", got)
	}
	if !reflect.DeepEqual(in, testDomain(t)) {
		t.Errorf("GuestDefinition modified the caller's domain")
	}
}

func TestSidecarReceivesVMIAsJSON(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("vmi", sidecarHook(serve(t, root, "vmi", "hook.sock", s), gd))})
	if _, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s.gdReqs[0].Vmi), `"example.com/tuning":"cpu"`) {
		t.Errorf("VMI JSON lacks the labels: %s", s.gdReqs[0].Vmi)
	}
}

func TestMalformedXMLFromSidecar(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy pluginv1alpha1.FailureStrategy
		response string
		wantErr  string
	}{
		{"FailNotXML", pluginv1alpha1.Fail, "<domain><name>x</nam", "invalid domain XML"},
		{"FailEmpty", pluginv1alpha1.Fail, "", "empty domain XML"},
		{"FailNotADomain", pluginv1alpha1.Fail, "<network><name>x</name></network>", "not a <domain> element"},
		// Its outline is right; libvirtxml cannot decode it. Decoding is
		// deferred to the CEL hook after it, and still blamed on it.
		{"FailDoesNotDecode", pluginv1alpha1.Fail, `<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><vcpu>many</vcpu></domain>`, "invalid domain XML"},
		{"IgnoreKeepsDomain", pluginv1alpha1.Ignore, "not xml at all", ""},
		{"IgnoreDoesNotDecodeKeepsDomain", pluginv1alpha1.Ignore, `<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><vcpu>many</vcpu></domain>`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			s := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
				return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(tc.response)}, nil
			}}
			h := sidecarHook(serve(t, root, "bad-xml", "hook.sock", s), gd)
			h.FailureStrategy = tc.strategy
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("bad-xml", celHook(celAppend("before")), h, celHook(celAppend("after")))})
			out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
			if tc.wantErr != "" {
				mustContain(t, err, `plugin "bad-xml" launcher hook #1 (sidecar) at GuestDefinition`, tc.wantErr)
				var he *pipeline.HookError
				if !errors.As(err, &he) || he.HookIndex != 1 || he.Kind != pipeline.KindSidecar {
					t.Errorf("want the *HookError of the sidecar hook #1, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Description != "before,after" {
				t.Errorf("got %q, want the ignored hook to leave no trace: before,after", out.Description)
			}
		})
	}
}

func TestLargeDomainFitsMessageLimit(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{guestDefinition: editDomain(appendDescription("seen"))}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("big", sidecarHook(serve(t, root, "big", "hook.sock", s), gd))})
	d := testDomain(t)
	// gRPC's default limit is 4 MiB; a domain with many devices and a big
	// metadata blob must still pass.
	d.Metadata.XML = "<blob>" + strings.Repeat("x", 6<<20) + "</blob>"
	out, err := p.GuestDefinition(t.Context(), testVMI(t), d, pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if out.Description != "seen" || len(out.Metadata.XML) < 6<<20 {
		t.Errorf("large domain did not round trip")
	}
}

func TestInvocationContextMustBeKnown(t *testing.T) {
	p := newPipeline(t, socketRoot(t), nil)
	_, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), "Source")
	mustContain(t, err, `invocation context "Source"`)
}

func TestCELHookEvaluationFailureFollowsStrategy(t *testing.T) {
	// Valid at compile time, fails at run time: the annotation is absent.
	failing := celHook(`Domain{Title: vmi.Annotations["absent"], Description: "partial"}`)
	for _, tc := range []struct {
		name     string
		strategy pluginv1alpha1.FailureStrategy
	}{
		{"Fail", pluginv1alpha1.Fail},
		{"Ignore", pluginv1alpha1.Ignore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := failing
			h.FailureStrategy = tc.strategy
			p := newPipeline(t, socketRoot(t), []pluginv1alpha1.Plugin{plugin("cel-fail", h, celHook(celAppend("after")))})
			out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
			if tc.strategy == pluginv1alpha1.Fail {
				mustContain(t, err, `plugin "cel-fail" launcher hook #0 (cel) at GuestDefinition`, "absent")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Description != "after" || out.Title != "" {
				t.Errorf("the ignored CEL hook left a trace: description %q title %q", out.Description, out.Title)
			}
		})
	}
}

// TestUndecodableAnswerOfTheLastSidecarIsItsFailure: the caller's decoding
// of the chain's result blames the sidecar that sent it, under that hook's
// failure strategy.
func TestUndecodableAnswerOfTheLastSidecarIsItsFailure(t *testing.T) {
	for _, strategy := range []pluginv1alpha1.FailureStrategy{pluginv1alpha1.Fail, pluginv1alpha1.Ignore} {
		t.Run(string(strategy), func(t *testing.T) {
			root := socketRoot(t)
			s := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
				return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(`<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><memory unit="KiB">lots</memory></domain>`)}, nil
			}}
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{
				plugin("a-first", celHook(celAppend("first"))),
				plugin("b-last", withStrategy(sidecarHook(serve(t, root, "b-last", "hook.sock", s), gd), strategy)),
			})
			out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
			if strategy == pluginv1alpha1.Fail {
				mustContain(t, err, `plugin "b-last" launcher hook #0 (sidecar) at GuestDefinition: sidecar response: invalid domain XML`)
				return
			}
			if err != nil || out.Description != "first" {
				t.Fatalf("Ignore: want the domain as the CEL hook left it, got %v, %+v", err, out)
			}
		})
	}
}

// TestSidecarChainPassesTheDomainXMLAsSent: a sidecar receives the exact
// bytes the previous sidecar answered (here with a comment and layout that
// a decode and re-encode would not keep): the launcher does not decode and
// re-encode the domain between two sidecars.
func TestSidecarChainPassesTheDomainXMLAsSent(t *testing.T) {
	root := socketRoot(t)
	base, err := testDomain(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	answer := []byte("<!-- written by a -->\n" + strings.Replace(base, "<name>", "<!-- kept -->\n  <name>", 1) + "\n")
	a := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: answer}, nil
	}}
	b := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("a", sidecarHook(serve(t, root, "a", "hook.sock", a), gd)),
		plugin("b", sidecarHook(serve(t, root, "b", "hook.sock", b), gd)),
	})
	out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.gdReqs) != 1 || !bytes.Equal(b.gdReqs[0].DomainXml, answer) {
		t.Fatalf("sidecar b did not receive the bytes sidecar a answered")
	}
	if out.Name != testDomain(t).Name {
		t.Errorf("result name %q", out.Name)
	}
}

// TestSidecarThatChangesNothingLeavesTheDomainUndecoded: a sidecar that
// answers the bytes it was given changed nothing; the chain keeps the
// domain it had, and with no other hook returns the caller's domain itself.
func TestSidecarThatChangesNothingLeavesTheDomainUndecoded(t *testing.T) {
	root := socketRoot(t)
	echo := &sidecar{} // answers the request's domain XML as it came
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("echo", sidecarHook(serve(t, root, "echo", "hook.sock", echo), gd))})
	domain := testDomain(t)
	out, err := p.GuestDefinition(t.Context(), testVMI(t), domain, pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if echo.calls() != 1 {
		t.Fatalf("the sidecar got %d calls", echo.calls())
	}
	if out != domain {
		t.Errorf("an unchanged answer was decoded into a new domain")
	}
}
