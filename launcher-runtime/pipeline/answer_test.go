// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// The rules a GuestDefinition sidecar's answer is held to beyond being a
// domain that decodes: bounded nesting and size, exactly one <domain>
// element, and the domain's name and UUID as the sidecar was sent them.

// answerWith is a GuestDefinition answer built by edit from the domain XML
// the sidecar was sent, as text.
func answerWith(edit func(sent string) string) func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	return func(_ context.Context, req *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(edit(string(req.DomainXml)))}, nil
	}
}

// insideDomain puts inner just before the domain's closing tag.
func insideDomain(inner string) func(string) string {
	return func(sent string) string {
		i := strings.LastIndex(sent, "</domain>")
		return sent[:i] + inner + sent[i:]
	}
}

// nested is depth elements <a>, one inside the other.
func nested(depth int) string {
	return strings.Repeat("<a>", depth) + strings.Repeat("</a>", depth)
}

// runAnswer runs a GuestDefinition chain of one plugin "answers": a CEL hook,
// the sidecar giving answer under strategy, another CEL hook.
func runAnswer(t *testing.T, strategy pluginv1alpha1.FailureStrategy, answer func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error)) (*libvirtxml.Domain, error) {
	t.Helper()
	root := socketRoot(t)
	h := withStrategy(sidecarHook(serve(t, root, "answers", "hook.sock", &sidecar{guestDefinition: answer}), gd), strategy)
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("answers", celHook(celAppend("before")), h, celHook(celAppend("after")))})
	return p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
}

// mustBeRefusedAs checks that err is the *HookError of the sidecar hook of
// runAnswer, naming the plugin and the rule.
func mustBeRefusedAs(t *testing.T, err error, rule ...string) {
	t.Helper()
	mustContain(t, err, append([]string{`plugin "answers" launcher hook #1 (sidecar) at GuestDefinition: sidecar response: `}, rule...)...)
	var he *pipeline.HookError
	if !errors.As(err, &he) || he.Plugin != "answers" || he.HookIndex != 1 || he.Kind != pipeline.KindSidecar {
		t.Errorf("want the *HookError of the sidecar hook #1 of answers, got %#v", err)
	}
}

// TestGuestDefinitionAnswerNestedTooDeepIsRefused: an answer nested
// 2,000,000 elements deep (13.4 MiB) is refused before it is decoded, at a
// small cost; one nested to the limit is accepted.
func TestGuestDefinitionAnswerNestedTooDeepIsRefused(t *testing.T) {
	deep := insideDomain("<metadata>" + nested(2_000_000) + "</metadata>")
	// The gRPC exchange of 13.4 MiB costs a few copies of it in this process
	// (the test sidecar encodes it, the launcher receives and decodes the
	// message): allow those and little more.
	const allowed = 96 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(deep))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	mustBeRefusedAs(t, err, "nested deeper than 256 elements")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("2,000,000-deep answer: %v, %d MiB allocated, %d allocations (sidecar and gRPC included)", took.Round(time.Millisecond), alloc>>20, after.Mallocs-before.Mallocs)
	if alloc > allowed {
		t.Errorf("refusing the deep answer allocated %d MiB, want at most %d MiB", alloc>>20, allowed>>20)
	}

	// The domain and its <metadata> are two levels: 254 more fit.
	out, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(insideDomain("<metadata>"+nested(254)+"</metadata>")))
	if err != nil {
		t.Fatalf("an answer nested 256 deep: %v", err)
	}
	if out.Description != "before,after" {
		t.Errorf("description %q", out.Description)
	}
	_, err = runAnswer(t, pluginv1alpha1.Fail, answerWith(insideDomain("<metadata>"+nested(255)+"</metadata>")))
	mustBeRefusedAs(t, err, "nested deeper than 256 elements")
}

// TestGuestDefinitionAnswerWithTooManyElementsIsRefused: the number of
// elements and attributes bounds what decoding an answer may cost.
func TestGuestDefinitionAnswerWithTooManyElementsIsRefused(t *testing.T) {
	disks := insideDomain("<devices>" + strings.Repeat("<disk/>", 40_000) + "</devices>")
	_, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(disks))
	mustBeRefusedAs(t, err, "more than 32768 elements and attributes")

	attrs := insideDomain(`<metadata><a ` + strings.Repeat(`b="" `, 40_000) + `/></metadata>`)
	_, err = runAnswer(t, pluginv1alpha1.Fail, answerWith(attrs))
	mustBeRefusedAs(t, err, "more than 32768 elements and attributes")

	// Many devices still fit.
	many := insideDomain("<metadata>" + strings.Repeat(`<a b="c"/>`, 10_000) + "</metadata>")
	if _, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(many)); err != nil {
		t.Fatal(err)
	}
}

func TestGuestDefinitionAnswerWithTwoDomainRootsIsRefused(t *testing.T) {
	_, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(func(sent string) string {
		return sent + "\n" + strings.Replace(sent, "<vcpu placement=\"static\">4</vcpu>", "<vcpu placement=\"static\">64</vcpu>", 1)
	}))
	mustBeRefusedAs(t, err, "a second root element <domain>", "exactly one <domain> element")
}

func TestGuestDefinitionAnswerWithAnotherRootElementAfterTheDomainIsRefused(t *testing.T) {
	_, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(func(sent string) string {
		return sent + `<network><name>default</name></network><domain type="kvm"><name>x</name></domain>`
	}))
	mustBeRefusedAs(t, err, "a second root element <network>", "exactly one <domain> element")
}

func TestGuestDefinitionAnswerWithContentAfterTheDomainIsRefused(t *testing.T) {
	_, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(func(sent string) string {
		return sent + "\nleft over\n</domain>"
	}))
	mustBeRefusedAs(t, err, "content after the <domain> element", "exactly one <domain> element")

	// White space after it is no content.
	if _, err := runAnswer(t, pluginv1alpha1.Fail, answerWith(func(sent string) string { return sent + "\n\t\n" })); err != nil {
		t.Fatal(err)
	}
}

func TestGuestDefinitionAnswerThatRenamesTheDomainIsRefused(t *testing.T) {
	_, err := runAnswer(t, pluginv1alpha1.Fail, editDomain(func(d *libvirtxml.Domain) { d.Name = "kube-system_victim" }))
	mustBeRefusedAs(t, err, `the domain's <name> changed from "default_web-01" to "kube-system_victim"`, "must keep")

	// A second <name>, which the decoder would take, is a change too.
	_, err = runAnswer(t, pluginv1alpha1.Fail, answerWith(insideDomain("<name>kube-system_victim</name>")))
	mustBeRefusedAs(t, err, `the domain's <name> changed from "default_web-01" to "kube-system_victim"`)
}

func TestGuestDefinitionAnswerThatChangesTheUUIDIsRefused(t *testing.T) {
	for name, edit := range map[string]func(*libvirtxml.Domain){
		"Changed": func(d *libvirtxml.Domain) { d.UUID = "00000000-0000-4000-8000-000000000001" },
		"Removed": func(d *libvirtxml.Domain) { d.UUID = "" },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runAnswer(t, pluginv1alpha1.Fail, editDomain(edit))
			mustBeRefusedAs(t, err, `the domain's <uuid> changed from "5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10"`, "must keep")
		})
	}
}

// TestGuestDefinitionAnswerKeepsTheIdentityItWasSent: the name and UUID an
// answer must keep are the ones its sidecar was sent, after the hooks
// before it; written the same, they may be laid out otherwise.
func TestGuestDefinitionAnswerKeepsTheIdentityItWasSent(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{guestDefinition: answerWith(func(sent string) string {
		return strings.Replace(sent, "<name>default_web-01</name>", "<name><!-- kept -->default_web&#45;01</name>", 1)
	})}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("keeps",
		celHook(`Domain{UUID: ""}`),
		sidecarHook(serve(t, root, "keeps", "hook.sock", s), gd),
	)})
	out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "default_web-01" || out.UUID != "" {
		t.Errorf("got name %q uuid %q", out.Name, out.UUID)
	}
}

// TestGuestDefinitionAnswerRefusalsFollowTheFailureStrategy: under Ignore a
// refused answer is dropped like any failed hook, and logged as its
// *HookError.
func TestGuestDefinitionAnswerRefusalsFollowTheFailureStrategy(t *testing.T) {
	for name, answer := range map[string]func(string) string{
		"Deep":     insideDomain("<metadata>" + nested(300) + "</metadata>"),
		"TwoRoots": func(sent string) string { return sent + sent },
		"Renamed":  func(sent string) string { return strings.Replace(sent, "default_web-01", "kube-system_victim", 1) },
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runAnswer(t, pluginv1alpha1.Ignore, answerWith(answer))
			if err != nil {
				t.Fatal(err)
			}
			if out.Description != "before,after" || out.Name != "default_web-01" {
				t.Errorf("the ignored answer left a trace: description %q name %q", out.Description, out.Name)
			}
		})
	}
}

// TestLegacyHookAnswerIsHeldToTheSameRules: the legacy hook sidecars'
// answer is refused on the same grounds, as their failure.
func TestLegacyHookAnswerIsHeldToTheSameRules(t *testing.T) {
	base, err := testDomain(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ answer, rule string }{
		"Deep":     {insideDomain(nested(2_000))(base), "nested deeper than 256 elements"},
		"TwoRoots": {base + base, "a second root element <domain>"},
		"Renamed":  {strings.Replace(base, "default_web-01", "kube-system_victim", 1), "the domain's <name> changed"},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPipeline(t, socketRoot(t), nil, func(o *pipeline.Options) {
				o.LegacyHooks = &legacyHooks{answer: []byte(tc.answer)}
			})
			_, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
			mustContain(t, err, "legacy hook sidecars at GuestDefinition", tc.rule)
		})
	}
}

// BenchmarkRefuseDeepAnswer is the whole GuestDefinition call with a sidecar
// answering 13.4 MiB nested 2,000,000 deep.
func BenchmarkRefuseDeepAnswer(b *testing.B) {
	root := socketRoot(b)
	deep := []byte(insideDomain("<metadata>" + nested(2_000_000) + "</metadata>")(mustMarshal(b, testDomain(b))))
	s := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: deep}, nil
	}}
	p := newPipeline(b, root, []pluginv1alpha1.Plugin{plugin("deep", sidecarHook(serve(b, root, "deep", "hook.sock", s), gd))})
	vmi, domain := testVMI(b), testDomain(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(deep)))
	for b.Loop() {
		if _, err := p.GuestDefinition(b.Context(), vmi, domain, pipeline.Boot); err == nil {
			b.Fatal("the deep answer was accepted")
		}
	}
}

func mustMarshal(t testing.TB, d *libvirtxml.Domain) string {
	t.Helper()
	s, err := d.Marshal()
	if err != nil {
		t.Fatal(fmt.Errorf("marshal: %w", err))
	}
	return s
}
