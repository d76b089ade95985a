// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/domainpath"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// GuestDefinition runs the GuestDefinition chain from domain and returns the
// domain to hand to libvirt. domain itself is never modified; the result is
// domain itself when no hook changed it, and may share unchanged parts with
// it otherwise.
//
// The legacy hook sidecars (Options.LegacyHooks) run first, then the plugin
// hooks: plugins in alphabetical order, hooks in declaration order. A CEL
// hook merges its Domain{...} into the domain; a sidecar hook receives the
// domain XML, the VMI as JSON and ic, and returns the complete domain XML.
//
// With ic == MigrationTarget every hook runs, so that sidecars can prepare
// the target Pod, and the result is discarded: the input domain is returned.
// The host never calls GuestDefinition on the migration source.
//
// The chain may run several times for one boot; hooks must be idempotent.
//
// A part of the domain changed by hooks of two plugins is logged and
// counted (kubevirt_plugins_launcher_hook_overlaps_total); see
// GuestDefinitionWithReport for which hook changed what.
func (p *Pipeline) GuestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, ic InvocationContext) (*libvirtxml.Domain, error) {
	return p.guestDefinition(ctx, vmi, domain, ic, nil)
}

// guestDefinition is GuestDefinition, filling report when it is not nil.
func (p *Pipeline) guestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, ic InvocationContext, report *Report) (*libvirtxml.Domain, error) {
	switch {
	case domain == nil:
		return nil, errors.New("GuestDefinition: no domain given")
	case vmi == nil:
		return nil, errors.New("GuestDefinition: no VMI given")
	case ic != Boot && ic != MigrationTarget:
		return nil, fmt.Errorf("GuestDefinition: invocation context %q is neither %s nor %s", ic, Boot, MigrationTarget)
	}
	state := &domainState{dom: domain}
	if p.opts.LegacyHooks != nil {
		var err error
		if state, err = p.runLegacyHooks(ctx, vmi, state); err != nil {
			return nil, err
		}
	}
	c := p.newCall(pluginv1alpha1.GuestDefinition, vmi)
	c.report = report
	// Only hooks of two plugins can overlap.
	if report != nil || p.pluginsAt(pluginv1alpha1.GuestDefinition) > 1 {
		c.prov = &provenance{countOverlaps: ic == Boot, trackSidecars: p.trackSidecars()}
	}
	tracked := c.prov != nil
	err := c.run(ctx, func(ctx context.Context, pl *compiledPlugin, h *compiledHook) error {
		if h.hook.CEL != nil || tracked && c.prov.trackSidecars {
			in, err := c.decoded(state)
			if err != nil {
				return &earlierHookFailed{err: err}
			}
			state = in
		}
		if h.hook.CEL != nil {
			next, written, err := h.transform.applyWritten(ctx, vmi, state.dom, tracked)
			if err != nil {
				return err
			}
			state = &domainState{dom: next}
			c.wrote(pl, h, written, true)
			return nil
		}
		in, err := state.encoded()
		if err != nil {
			return fmt.Errorf("encoding the domain: %w", err)
		}
		out, err := c.guestDefinitionSidecar(ctx, pl, h, in, state.identity(), ic)
		if err != nil {
			return err
		}
		if bytes.Equal(out, in) {
			// The sidecar changed nothing: keep what was decoded.
			c.wrote(pl, h, nil, true)
			return nil
		}
		next := &domainState{xml: out, id: state.identity(), from: &sidecarResult{pl: pl, h: h, before: state}}
		if tracked && c.prov.trackSidecars {
			// An answer that does not decode stays undecoded: decoded
			// makes it this hook's failure, as untracked.
			if d, err := parseDomain(out); err == nil {
				c.wrote(pl, h, domainpath.Changed(state.dom, d), true)
				next = &domainState{dom: d, xml: out}
			}
		} else {
			c.wrote(pl, h, nil, false)
		}
		state = next
		return nil
	})
	if report != nil {
		report.Changed = c.prov.changes()
	}
	if err != nil {
		return nil, err
	}
	final, err := c.decoded(state)
	if err != nil {
		return nil, err
	}
	if ic == MigrationTarget {
		return domain, nil
	}
	return final.dom, nil
}

// domainState is the domain between two GuestDefinition hooks: decoded
// (dom), encoded (xml), or both. A sidecar's answer is handed to the next
// sidecar as the bytes it sent, and decoded only when a CEL hook or the
// caller needs the struct; an encoding is made at most once per state.
type domainState struct {
	dom *libvirtxml.Domain
	xml []byte
	// id is the domain's name and UUID while it is not decoded: an answer
	// is checked to keep those of the domain its sidecar was sent.
	id domainIdentity
	// from is the sidecar hook whose answer xml is, while it is not
	// decoded yet; nil for the legacy hook sidecars' answer.
	from *sidecarResult
}

// sidecarResult records which hook produced an undecoded domain and what it
// was given, so that a decoding failure is that hook's failure.
type sidecarResult struct {
	pl     *compiledPlugin
	h      *compiledHook
	before *domainState
}

// identity returns the domain's name and UUID.
func (s *domainState) identity() domainIdentity {
	if s.dom != nil {
		return domainIdentity{name: s.dom.Name, uuid: s.dom.UUID}
	}
	return s.id
}

// encoded returns the domain XML, encoding the struct the first time. The
// struct is encoded as it is, with no copy: nothing in the chain modifies a
// domain it was handed.
func (s *domainState) encoded() ([]byte, error) {
	if s.xml == nil {
		text, err := s.dom.Marshal()
		if err != nil {
			return nil, err
		}
		s.xml = []byte(text)
	}
	return s.xml, nil
}

// decoded returns s with the struct decoded. An answer that does not decode
// is a failure of the sidecar hook that sent it: under Fail the call fails
// with that hook's *HookError; under Ignore the hook's answer is dropped
// and the domain it was given is used, as if it had failed when called.
// The hook's call was already counted as a success in the outcome metric;
// the failure found later is counted as well (error or ignored).
func (c *call) decoded(s *domainState) (*domainState, error) {
	for s.dom == nil {
		d, err := parseDomain(s.xml)
		if err == nil {
			return &domainState{dom: d, xml: s.xml}, nil
		}
		r := s.from
		if r == nil {
			// Only the legacy hook sidecars' answer has no plugin hook.
			return nil, legacyHookError(err)
		}
		herr := c.hookError(r.pl, r.h, fmt.Errorf("sidecar response: %w", err))
		if r.h.strategy != pluginv1alpha1.Ignore {
			c.observeLate(r.pl, r.h, hookresult.Error, herr)
			return nil, herr
		}
		c.observeLate(r.pl, r.h, hookresult.Ignored, herr)
		c.hookLog(r.pl, r.h).Error(herr, hookresult.IgnoredMessage, hookresult.KeyOutcome, hookresult.Ignored)
		s = r.before
	}
	return s, nil
}

// earlierHookFailed carries the failure of an earlier hook, found when a
// later one needed its result: run returns it as it is, without blaming the
// later hook or applying its failure strategy.
type earlierHookFailed struct{ err error }

func (e *earlierHookFailed) Error() string { return e.err.Error() }
func (e *earlierHookFailed) Unwrap() error { return e.err }

// runLegacyHooks passes the domain XML through the legacy hook sidecars
// and returns their XML, decoded only when needed like a sidecar's answer.
func (p *Pipeline) runLegacyHooks(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, state *domainState) (*domainState, error) {
	in, err := state.encoded()
	if err != nil {
		return nil, legacyHookError(fmt.Errorf("encoding the domain: %w", err))
	}
	out, err := p.opts.LegacyHooks.RunGuestDefinition(ctx, vmi, in)
	if err != nil {
		return nil, legacyHookError(err)
	}
	if bytes.Equal(out, in) {
		return state, nil
	}
	if err := checkDomainAnswer(out, state.identity()); err != nil {
		return nil, legacyHookError(err)
	}
	return &domainState{xml: out, id: state.identity()}, nil
}

// guestDefinitionSidecar calls the hook's sidecar with the domain XML and
// returns the XML it answered, after checkDomainAnswer's checks, which
// catch empty, truncated, non-XML, oversized and renaming answers at the
// hook that sent them; the full decoding waits until it is needed. sent is
// the name and UUID of the domain sent.
func (c *call) guestDefinitionSidecar(ctx context.Context, pl *compiledPlugin, h *compiledHook, domainXML []byte, sent domainIdentity, ic InvocationContext) ([]byte, error) {
	var resp *hooksv1alpha1.GuestDefinitionResponse
	err := c.callSidecar(ctx, pl, h, func(ctx context.Context, client hooksv1alpha1.LauncherHookServiceClient, vmiJSON []byte) error {
		var err error
		resp, err = client.GuestDefinition(ctx, &hooksv1alpha1.GuestDefinitionRequest{
			DomainXml:      domainXML,
			Vmi:            vmiJSON,
			SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(ic)},
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := resp.GetDomainXml()
	if bytes.Equal(out, domainXML) {
		// What it was sent, checked already.
		return out, nil
	}
	if err := checkDomainAnswer(out, sent); err != nil {
		return nil, fmt.Errorf("sidecar response: %w", err)
	}
	return out, nil
}

// checkDomainAnswer checks a GuestDefinition answer without decoding it:
// its outline (checkDomainOutline), then checkAnswer's rules.
func checkDomainAnswer(data []byte, sent domainIdentity) error {
	if err := checkDomainOutline(data); err != nil {
		return err
	}
	return checkAnswer(data, sent)
}

// checkDomainOutline checks, without decoding it, that data is one <domain>
// element, optionally after an XML declaration, comments or a doctype.
func checkDomainOutline(data []byte) error {
	rest := bytes.TrimSpace(data)
	if len(rest) == 0 {
		return errors.New("empty domain XML")
	}
	for {
		var end []byte
		switch {
		case bytes.HasPrefix(rest, []byte("<?")):
			end = []byte("?>")
		case bytes.HasPrefix(rest, []byte("<!--")):
			end = []byte("-->")
		case bytes.HasPrefix(rest, []byte("<!")):
			end = []byte(">")
		}
		if end == nil {
			break
		}
		i := bytes.Index(rest, end)
		if i < 0 {
			return errors.New("invalid domain XML: unterminated prolog")
		}
		rest = bytes.TrimSpace(rest[i+len(end):])
	}
	const open, closing = "<domain", "</domain>"
	if !bytes.HasPrefix(rest, []byte(open)) || len(rest) == len(open) || !strings.ContainsRune(" \t\r\n>/", rune(rest[len(open)])) {
		return errors.New("invalid domain XML: the document is not a <domain> element")
	}
	if !bytes.HasSuffix(rest, []byte(closing)) {
		return errors.New("invalid domain XML: the document does not end with </domain>")
	}
	return nil
}

// parseDomain decodes a complete domain XML document.
func parseDomain(data []byte) (*libvirtxml.Domain, error) {
	if len(data) == 0 {
		return nil, errors.New("empty domain XML")
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		return nil, fmt.Errorf("invalid domain XML: %w", err)
	}
	return d, nil
}

// legacyHookError is the *HookError of a failure of the legacy hook
// sidecars, which run at GuestDefinition only.
func legacyHookError(err error) error {
	return &HookError{Scope: hookresult.ScopeLegacyHooks, HookIndex: LegacyHooksIndex, Kind: KindLegacy, HookPoint: pluginv1alpha1.GuestDefinition, Err: err}
}
