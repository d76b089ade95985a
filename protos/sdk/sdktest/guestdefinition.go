// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

func guestDefinition(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract, domainXML []byte, ic sdk.InvocationContext) ([]byte, error) {
	callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	resp, err := callGuestDefinition(callCtx, conn, c, domainXML, ic)
	if err != nil {
		return nil, fmt.Errorf("GuestDefinition (%s): %w", ic, err)
	}
	return resp.GetDomainXml(), nil
}

// callGuestDefinition makes every GuestDefinition call of the checks, so
// that the sidecar's first answer to the contract's domain at boot is kept,
// whichever check made it: a sidecar that changes the domain only on its
// first call is seen by comparing later answers with that one.
func callGuestDefinition(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract, domainXML []byte, ic sdk.InvocationContext) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	resp, err := hooksv1alpha1.NewLauncherHookServiceClient(conn).GuestDefinition(ctx, guestDefinitionRequest(c, domainXML, ic))
	if err == nil && c.first != nil && ic == sdk.InvocationBoot && bytes.Equal(domainXML, c.DomainXML) {
		c.first.record(resp.GetDomainXml())
	}
	return resp, err
}

// firstAnswer is the first domain a sidecar returned for the contract's
// domain at boot.
type firstAnswer struct {
	mu     sync.Mutex
	domain []byte
}

func (f *firstAnswer) record(domain []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.domain == nil {
		f.domain = append([]byte{}, domain...)
	}
}

func (f *firstAnswer) get() []byte {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.domain
}

func checkGuestDefinitionBothContexts(c LauncherContract) Check {
	return Check{
		Name: "GuestDefinition/BothInvocationContexts",
		Rule: "GuestDefinition is invoked at boot and on the migration target (MigrationTarget) and must answer both",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			var errs []error
			for _, ic := range []sdk.InvocationContext{sdk.InvocationBoot, sdk.InvocationMigrationTarget} {
				if _, err := guestDefinition(ctx, conn, c, c.DomainXML, ic); err != nil {
					errs = append(errs, err)
				}
			}
			if len(errs) > 0 {
				return failed(errors.Join(errs...))
			}
			return passed("Boot and MigrationTarget answered")
		},
	}
}

func checkGuestDefinitionParses(c LauncherContract) Check {
	return Check{
		Name: "GuestDefinition/ReturnsDomain",
		Rule: "GuestDefinition returns a complete libvirt domain",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			out, err := guestDefinition(ctx, conn, c, c.DomainXML, sdk.InvocationBoot)
			if err != nil {
				return failed(err)
			}
			dom := &libvirtxml.Domain{}
			if err := dom.Unmarshal(string(out)); err != nil {
				return failed(fmt.Errorf("the response does not parse as a domain: %w (response starts %q)", err, head(out)))
			}
			if dom.Name == "" || dom.Type == "" {
				return failed(fmt.Errorf("the response lacks the domain name or type (response starts %q)", head(out)))
			}
			return passed("domain %q of type %s", dom.Name, dom.Type)
		},
	}
}

func checkGuestDefinitionKeepsDomain(c LauncherContract) Check {
	return Check{
		Name: "GuestDefinition/KeepsDomain",
		Rule: "GuestDefinition returns the domain it was given with its own changes only: the identity stays, no part of the domain is lost, no device the VMI declares disappears",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			out, err := guestDefinition(ctx, conn, c, c.DomainXML, sdk.InvocationBoot)
			if err != nil {
				return failed(err)
			}
			in, err := parseTree(c.DomainXML)
			if err != nil {
				return failed(fmt.Errorf("the domain sent: %w", err))
			}
			// Compared as the launcher hands it on: through libvirtxml, which
			// keeps <metadata> children as raw XML. A namespace declared
			// anywhere but on the element itself is lost there.
			canon, err := canonicalDomain(out)
			if err != nil {
				return failed(fmt.Errorf("the response does not parse as a domain: %w", err))
			}
			got, err := parseTree([]byte(canon))
			if err != nil {
				return failed(fmt.Errorf("the response, re-encoded, does not parse as XML: %w", err))
			}
			if problems := lostParts(in, got); len(problems) > 0 {
				return failed(errors.New(strings.Join(problems, "; ")))
			}
			return passed("type, name, uuid, every kind of element of <domain> and <devices>, every device with an alias and the namespaced <metadata> kept")
		},
	}
}

// lostParts compares the domain sent with the domain returned: the identity
// (type attribute, name, uuid) must be equal, every kind of element found
// under <domain> and under <devices> must still be there, and so must every
// device KubeVirt named with an alias (see lostDevices). A sidecar may
// change any element and add new ones; a kind that disappears entirely is
// what a lossy parser or a template that rebuilds the domain leaves.
func lostParts(in, out *node) []string {
	var problems []string
	if out.name != "domain" {
		return []string{fmt.Sprintf("the response's root element is <%s>, want <domain>", out.name)}
	}
	if a, b := in.attr("type"), out.attr("type"); a != b {
		problems = append(problems, fmt.Sprintf("domain type changed from %q to %q", a, b))
	}
	for _, id := range []string{"name", "uuid"} {
		if a, b := in.childText(id), out.childText(id); a != b {
			problems = append(problems, fmt.Sprintf("<%s> changed from %q to %q", id, a, b))
		}
	}
	missing := func(where string, a, b *node) {
		if a == nil {
			return
		}
		have := map[string]bool{}
		if b != nil {
			for _, ch := range b.children {
				have[ch.name] = true
			}
		}
		var lost []string
		for _, ch := range a.children {
			if !have[ch.name] {
				lost = append(lost, "<"+ch.name+">")
				have[ch.name] = true
			}
		}
		if len(lost) > 0 {
			sort.Strings(lost)
			problems = append(problems, fmt.Sprintf("%s lost every %s it had", where, strings.Join(lost, ", ")))
		}
	}
	missing("<domain>", in, out)
	missing("<devices>", in.child("devices"), out.child("devices"))
	problems = append(problems, lostDevices(in.child("devices"), out.child("devices"))...)
	if a, b := in.child("metadata"), out.child("metadata"); a != nil && b != nil {
		for _, ch := range a.children {
			if !b.hasChild(ch.space, ch.name) {
				problems = append(problems, fmt.Sprintf("<metadata> lost <%s xmlns=%q> (the response has %s)", ch.name, ch.space, b.childNames()))
			}
		}
	}
	return problems
}

// lostDevices lists the devices of in that carry an <alias> and that out
// no longer has as the same element with the same alias. KubeVirt names
// each device the VMI declares (disks, interfaces, inputs, ...) with an
// alias "ua-<name>": the VMI still declares it, and the rest of KubeVirt
// (hotplug, disk and interface status, migration) looks it up by that
// alias, so a sidecar may change such a device but not drop or rename it.
// Devices without an alias, such as the memory balloon or a second serial
// port, may be removed one by one.
func lostDevices(in, out *node) []string {
	if in == nil {
		return nil
	}
	have := map[string]bool{}
	if out != nil {
		for _, d := range out.children {
			if a := d.child("alias"); a != nil {
				have[d.name+"\x00"+a.attr("name")] = true
			}
		}
	}
	var lost []string
	for _, d := range in.children {
		a := d.child("alias")
		if a == nil || a.attr("name") == "" {
			continue
		}
		if !have[d.name+"\x00"+a.attr("name")] {
			lost = append(lost, fmt.Sprintf("<%s> with alias %q", d.name, a.attr("name")))
		}
	}
	if len(lost) == 0 {
		return nil
	}
	if len(lost) > 5 {
		lost = append(lost[:5], fmt.Sprintf("and %d more", len(lost)-5))
	}
	return []string{fmt.Sprintf("<devices> lost %s: a device the VMI declares may be changed but must stay, under the alias KubeVirt knows it by", strings.Join(lost, ", "))}
}

func checkGuestDefinitionRepeatable(c LauncherContract) Check {
	return Check{
		Name: "GuestDefinition/Repeatable",
		Rule: "GuestDefinition may be called more than once during one boot: called again on the same generated domain it returns the same domain",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			var outs []string
			if first := c.first.get(); first != nil {
				// The sidecar's first answer in this run, made by an earlier check.
				canon, err := canonicalDomain(first)
				if err != nil {
					return failed(fmt.Errorf("first answer: %w", err))
				}
				outs = append(outs, canon)
			}
			for len(outs) < 3 {
				out, err := guestDefinition(ctx, conn, c, c.DomainXML, sdk.InvocationBoot)
				if err != nil {
					return failed(fmt.Errorf("call %d: %w", len(outs)+1, err))
				}
				canon, err := canonicalDomain(out)
				if err != nil {
					return failed(fmt.Errorf("call %d: %w", len(outs)+1, err))
				}
				outs = append(outs, canon)
				if canon != outs[0] {
					return failed(fmt.Errorf("call %d on the same domain returned a different domain than call 1:\n%s", len(outs), lineDiff(outs[0], canon)))
				}
			}
			return passed("three calls on the same domain returned the same domain")
		},
	}
}

func checkGuestDefinitionIdempotent(c LauncherContract) Check {
	return Check{
		Name: "GuestDefinition/Idempotent",
		Rule: "GuestDefinition is idempotent: called on its own output it changes nothing more",
		run: func(ctx context.Context, conn grpc.ClientConnInterface) outcome {
			first, err := guestDefinition(ctx, conn, c, c.DomainXML, sdk.InvocationBoot)
			if err != nil {
				return failed(err)
			}
			second, err := guestDefinition(ctx, conn, c, first, sdk.InvocationBoot)
			if err != nil {
				return failed(fmt.Errorf("on its own output: %w", err))
			}
			a, err := canonicalDomain(first)
			if err != nil {
				return failed(fmt.Errorf("first response: %w", err))
			}
			b, err := canonicalDomain(second)
			if err != nil {
				return failed(fmt.Errorf("second response: %w", err))
			}
			if a != b {
				return failed(fmt.Errorf("called on its own output it changed the domain again:\n%s", lineDiff(a, b)))
			}
			return passed("its own output came back unchanged")
		},
	}
}

// canonicalDomain re-encodes domain XML so that attribute quoting,
// whitespace and element order of equal domains compare equal.
func canonicalDomain(b []byte) (string, error) {
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(string(b)); err != nil {
		return "", fmt.Errorf("parse domain: %w", err)
	}
	return dom.Marshal()
}

// lineDiff lists the lines of a that b lacks ("- ") and the lines of b
// that a lacks ("+ "), at most 20.
func lineDiff(a, b string) string {
	only := func(x, y, sign string) []string {
		remaining := map[string]int{}
		for l := range strings.SplitSeq(y, "\n") {
			remaining[strings.TrimSpace(l)]++
		}
		var out []string
		for l := range strings.SplitSeq(x, "\n") {
			t := strings.TrimSpace(l)
			if remaining[t] > 0 {
				remaining[t]--
				continue
			}
			out = append(out, sign+t)
		}
		return out
	}
	out := append(only(a, b, "- "), only(b, a, "+ ")...)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("... %d more lines", len(out)-20))
	}
	return strings.Join(out, "\n")
}

func head(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// node is an XML element with its attributes, text and children, enough to
// compare two domains without a schema.
type node struct {
	space    string
	name     string
	attrs    []xml.Attr
	text     string
	children []*node
}

func (n *node) attr(name string) string {
	for _, a := range n.attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (n *node) hasChild(space, name string) bool {
	for _, c := range n.children {
		if c.space == space && c.name == name {
			return true
		}
	}
	return false
}

// childNames lists the children as <name xmlns="space">.
func (n *node) childNames() string {
	var out []string
	for _, c := range n.children {
		out = append(out, fmt.Sprintf("<%s xmlns=%q>", c.name, c.space))
	}
	return strings.Join(out, ", ")
}

func (n *node) childText(name string) string {
	if c := n.child(name); c != nil {
		return strings.TrimSpace(c.text)
	}
	return ""
}

func parseTree(b []byte) (*node, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{space: t.Name.Space, name: t.Name.Local, attrs: t.Attr}
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}
