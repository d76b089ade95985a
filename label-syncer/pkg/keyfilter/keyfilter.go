package keyfilter

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ReservedDomains returns the key domains no entry may cover. A key is in
// a reserved domain when the part before its "/" is one of these or a
// subdomain of one.
func ReservedDomains() []string {
	return []string{"kubevirt.io", "kubernetes.io", "k8s.io", OwnDomain}
}

// OwnDomain is the domain of the syncer's own bookkeeping annotations. It is
// reserved so the bookkeeping is never synced from one object to another.
const OwnDomain = "labelsync.kubevirt-plugins.io"

// Filter selects keys. The zero value matches nothing.
type Filter struct {
	entries  []string
	exact    map[string]struct{}
	prefixes []string
}

// Parse parses a comma separated list of entries. Spaces around entries are
// ignored; an empty list gives a Filter that matches nothing. Every invalid
// entry is reported; the error names each one.
func Parse(list string) (*Filter, error) {
	if strings.TrimSpace(list) == "" {
		return &Filter{}, nil
	}
	return New(strings.Split(list, ","))
}

// New builds a Filter from entries already split. See Parse.
func New(entries []string) (*Filter, error) {
	f := &Filter{exact: map[string]struct{}{}}
	var errs []error
	for i, raw := range entries {
		e := strings.TrimSpace(raw)
		if err := check(e); err != nil {
			errs = append(errs, fmt.Errorf("entry %d (%q): %w", i+1, e, err))
			continue
		}
		if slices.Contains(f.entries, e) {
			continue
		}
		f.entries = append(f.entries, e)
		if p, ok := strings.CutSuffix(e, "*"); ok {
			f.prefixes = append(f.prefixes, p)
		} else {
			f.exact[e] = struct{}{}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// Match reports whether key is selected by an entry.
func (f *Filter) Match(key string) bool {
	if f == nil {
		return false
	}
	if _, ok := f.exact[key]; ok {
		return true
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Empty reports whether the Filter matches nothing.
func (f *Filter) Empty() bool { return f == nil || len(f.entries) == 0 }

// Entries returns the entries in the order given, without duplicates.
func (f *Filter) Entries() []string {
	if f == nil {
		return nil
	}
	return slices.Clone(f.entries)
}

// String returns the entries as a comma separated list, as Parse takes it.
func (f *Filter) String() string { return strings.Join(f.Entries(), ",") }

// check returns why entry e is not acceptable, or nil.
func check(e string) error {
	switch {
	case e == "":
		return errors.New("empty entry")
	case e == "*":
		return errors.New(`a bare "*" would match every key; use a prefix such as "ops.example.com/*"`)
	}
	prefix, isPrefix := strings.CutSuffix(e, "*")
	if strings.Contains(prefix, "*") {
		return errors.New(`"*" is only allowed as the last character`)
	}
	if isPrefix {
		if msgs := prefixErrors(prefix); msgs != nil {
			return fmt.Errorf("no valid key starts with %q: %s", prefix, strings.Join(msgs, "; "))
		}
		if example, domain, ok := reservedCompletion(prefix); ok {
			hint := ""
			if !strings.Contains(prefix, "/") {
				hint = `; end the domain with "/", as in "ops.example.com/*"`
			}
			return fmt.Errorf("could match keys in the reserved domain %s (for example %q)%s", domain, example, hint)
		}
		return nil
	}
	if msgs := validation.IsQualifiedName(e); len(msgs) > 0 {
		return fmt.Errorf("not a valid key: %s", strings.Join(msgs, "; "))
	}
	if domain, ok := reservedDomainOf(e); ok {
		return fmt.Errorf("is in the reserved domain %s", domain)
	}
	return nil
}

// prefixErrors returns nil when some valid key starts with p, else the
// validation messages of the shortest candidate completion.
func prefixErrors(p string) []string {
	var first []string
	// A completion exists iff one of these does: p ends a valid key, needs
	// one more name character, is a whole domain, or a domain missing its
	// last character. Longer completions add nothing these cannot.
	for _, c := range []string{p, p + "x", p + "/x", p + "x/x"} {
		msgs := validation.IsQualifiedName(c)
		if len(msgs) == 0 {
			return nil
		}
		if first == nil && c != p {
			first = msgs
		}
	}
	return first
}

// reservedCompletion finds a valid key starting with p that lies in a
// reserved domain.
func reservedCompletion(p string) (example, domain string, ok bool) {
	if d, _, hasSlash := strings.Cut(p, "/"); hasSlash {
		if r, ok := reservedDomain(d); ok {
			return d + "/x", r, true
		}
		return "", "", false
	}
	// Without a "/" the domain is still open: p can grow into a reserved
	// domain or into a subdomain of one.
	// Try the reserved domains themselves first: "kube*" is better explained
	// by kubevirt.io than by kube.kubevirt.io.
	grow := []func(r string) string{
		func(r string) string { return r },
		func(r string) string { return p + r },
		func(r string) string { return p + "." + r },
		func(r string) string { return p + "x." + r },
	}
	for _, g := range grow {
		for _, r := range ReservedDomains() {
			d := g(r)
			key := d + "/x"
			_, reserved := reservedDomain(d)
			if reserved && strings.HasPrefix(d, p) && len(validation.IsQualifiedName(key)) == 0 {
				return key, r, true
			}
		}
	}
	return "", "", false
}

// reservedDomainOf returns the reserved domain the key's domain part is in.
func reservedDomainOf(key string) (string, bool) {
	d, _, hasSlash := strings.Cut(key, "/")
	if !hasSlash {
		return "", false
	}
	return reservedDomain(d)
}

func reservedDomain(d string) (string, bool) {
	for _, r := range ReservedDomains() {
		if d == r || strings.HasSuffix(d, "."+r) {
			return r, true
		}
	}
	return "", false
}
