// SPDX-License-Identifier: Apache-2.0

package keyfilter

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// OwnedDomain is a key domain that a cluster component owns: it sets keys
// in it and acts on them. No entry may cover a key in it, or in one of its
// subdomains, unless the Guard allows it.
type OwnedDomain struct {
	// Domain is the DNS name, e.g. "kubevirt.io".
	Domain string
	// Owner names who sets and reads the keys, for messages.
	Owner string
}

// OwnedDomains returns the domains refused by default, each with its
// subdomains:
//
//   - kubevirt.io: KubeVirt's own keys (kubevirt.io/created-by, by which the
//     syncer itself finds the launcher Pod; vm.kubevirt.io/name;
//     kubevirt.io/nodeName; ...), which virt-controller and virt-handler set
//     and select on;
//   - kubernetes.io and k8s.io: reserved by Kubernetes for its components
//     (node-role.kubernetes.io, topology.kubernetes.io,
//     kubectl.kubernetes.io/last-applied-configuration, ...), except the
//     user domains of UserDomains.
func OwnedDomains() []OwnedDomain {
	return []OwnedDomain{
		{Domain: "kubevirt.io", Owner: "KubeVirt"},
		{Domain: "kubernetes.io", Owner: "Kubernetes"},
		{Domain: "k8s.io", Owner: "Kubernetes"},
	}
}

// UserDomains returns the domains inside an owned domain that belong to
// users, so entries may cover them without any allowance:
// app.kubernetes.io holds Kubernetes' recommended labels
// (app.kubernetes.io/name, /instance, /version, /component, /part-of,
// /managed-by), which users and their tools set and which Service,
// monitoring and policy selectors read. Only the domain itself: its
// subdomains stay owned.
func UserDomains() []string {
	return []string{"app.kubernetes.io"}
}

// OwnDomain is the domain of the syncer's own bookkeeping annotations. No
// entry may cover it, whatever the Guard allows, so the bookkeeping is never
// synced from one object to another.
const OwnDomain = "labelsync.kubevirt-plugins.io"

// DeschedulerAnnotations returns the annotations that tell the descheduler
// whether a Pod may be evicted. virt-controller carries them from the VM
// template to the VMI and on to the launcher Pod without any configuration;
// the syncer does the same unless told not to (see Filter.WithBuiltin).
func DeschedulerAnnotations() []string {
	return []string{
		"descheduler.alpha.kubernetes.io/evict",
		"descheduler.alpha.kubernetes.io/prefer-no-eviction",
	}
}

// Flags of the label syncer that messages name.
const (
	// AllowOwnedDomainsFlag lists the owned domains NewGuard admits.
	AllowOwnedDomainsFlag = "--allow-owned-domains"
	// DeschedulerAnnotationsFlag turns the built-in sync of
	// DeschedulerAnnotations off.
	DeschedulerAnnotationsFlag = "--sync-descheduler-annotations"
)

// Guard decides which domains entries may cover. The zero value refuses
// every owned domain.
type Guard struct {
	allowed []string
}

// NewGuard returns a Guard that also admits entries in the given owned
// domains (each with its subdomains): an administrator's decision that the
// syncer may write keys there. Each must be a DNS subdomain inside an owned
// domain, not a user domain (which needs no allowance) and not OwnDomain.
// Every bad one is reported.
func NewGuard(allowOwned []string) (Guard, error) {
	var g Guard
	var errs []error
	for i, raw := range allowOwned {
		d := strings.TrimSpace(raw)
		if err := checkAllowed(d); err != nil {
			errs = append(errs, fmt.Errorf("entry %d (%q): %w", i+1, d, err))
			continue
		}
		if !slices.Contains(g.allowed, d) {
			g.allowed = append(g.allowed, d)
		}
	}
	if len(errs) > 0 {
		return Guard{}, errors.Join(errs...)
	}
	return g, nil
}

// ParseGuard parses a comma separated list of domains for NewGuard; an
// empty list allows nothing.
func ParseGuard(list string) (Guard, error) {
	if strings.TrimSpace(list) == "" {
		return Guard{}, nil
	}
	return NewGuard(strings.Split(list, ","))
}

// AllowedOwned returns the owned domains the Guard admits.
func (g Guard) AllowedOwned() []string { return slices.Clone(g.allowed) }

func checkAllowed(d string) error {
	if d == "" {
		return errors.New("empty domain")
	}
	if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
		return fmt.Errorf("not a DNS subdomain: %s", strings.Join(msgs, "; "))
	}
	if inDomain(d, OwnDomain) {
		return fmt.Errorf("is the syncer's own bookkeeping domain %s, which is never synced", OwnDomain)
	}
	if slices.Contains(UserDomains(), d) {
		return errors.New("belongs to users: entries in it need no allowance")
	}
	if _, ok := ownedRoot(d); !ok {
		return fmt.Errorf("is not in an owned domain (%s): entries in it need no allowance", strings.Join(ownedNames(), ", "))
	}
	return nil
}

// domainVerdict says why entries may not cover a domain, or that they may.
type domainVerdict struct {
	// refused describes the domain that refuses, e.g. "the domain
	// kubevirt.io, which KubeVirt owns"; "" when admitted.
	refused string
	// hint says how an administrator can admit it anyway; "" when nothing
	// can.
	hint string
	// allowedBy is the allowed owned domain that admits it; "" when it is
	// not owned at all.
	allowedBy string
}

func (g Guard) judge(d string) domainVerdict {
	if inDomain(d, OwnDomain) {
		return domainVerdict{refused: fmt.Sprintf("the syncer's own bookkeeping domain %s, which is never synced", OwnDomain)}
	}
	if slices.Contains(UserDomains(), d) {
		return domainVerdict{}
	}
	root, ok := ownedRoot(d)
	if !ok {
		return domainVerdict{}
	}
	for _, a := range g.allowed {
		if inDomain(d, a) {
			return domainVerdict{allowedBy: a}
		}
	}
	return domainVerdict{
		refused: fmt.Sprintf("the domain %s, which %s owns", root.Domain, root.Owner),
		hint:    fmt.Sprintf("add %s to %s to sync it anyway", domainToAllow(d, root.Domain), AllowOwnedDomainsFlag),
	}
}

// domainToAllow suggests the narrowest domain to allow for d: d itself when
// it is a proper domain name, else the owned root.
func domainToAllow(d, root string) string {
	if len(validation.IsDNS1123Subdomain(d)) == 0 {
		return d
	}
	return root
}

// ownedRoot returns the owned domain d is in (itself or a subdomain).
func ownedRoot(d string) (OwnedDomain, bool) {
	for _, o := range OwnedDomains() {
		if inDomain(d, o.Domain) {
			return o, true
		}
	}
	return OwnedDomain{}, false
}

func ownedNames() []string {
	var names []string
	for _, o := range OwnedDomains() {
		names = append(names, o.Domain)
	}
	return names
}

// inDomain reports whether d is domain or one of its subdomains.
func inDomain(d, domain string) bool {
	return d == domain || strings.HasSuffix(d, "."+domain)
}
