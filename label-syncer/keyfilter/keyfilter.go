// SPDX-License-Identifier: Apache-2.0

package keyfilter

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Entry is one admitted entry of a Filter.
type Entry struct {
	// Text is the entry as given, e.g. "ops.example.com/*".
	Text string
	// Prefix is true for an entry ending in "*": it matches every key
	// starting with Text without the "*".
	Prefix bool
	// AllowedOwned is the owned domain, allowed by the Guard, the entry
	// covers; "" when it covers no owned domain.
	AllowedOwned string
	// Builtin is true for keys added with WithBuiltin rather than given.
	Builtin bool
}

// Filter selects keys. The zero value matches nothing.
type Filter struct {
	entries  []Entry
	exact    map[string]struct{}
	prefixes []string
}

// Parse parses a comma separated list of entries with the zero Guard: no
// owned domain allowed. See Guard.Parse.
func Parse(list string) (*Filter, error) { return Guard{}.Parse(list) }

// New builds a Filter from entries already split, with the zero Guard. See
// Guard.New.
func New(entries []string) (*Filter, error) { return Guard{}.New(entries) }

// Parse parses a comma separated list of entries. Spaces around entries are
// ignored; an empty list gives a Filter that matches nothing. Every invalid
// entry is reported; the error names each one and says why.
func (g Guard) Parse(list string) (*Filter, error) {
	if strings.TrimSpace(list) == "" {
		return &Filter{}, nil
	}
	return g.New(strings.Split(list, ","))
}

// New builds a Filter from entries already split. See Parse.
func (g Guard) New(entries []string) (*Filter, error) {
	f := &Filter{}
	var errs []error
	for i, raw := range entries {
		e := strings.TrimSpace(raw)
		allowedBy, err := g.check(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d (%q): %w", i+1, e, err))
			continue
		}
		f.add(Entry{Text: e, Prefix: strings.HasSuffix(e, "*"), AllowedOwned: allowedBy})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

func (f *Filter) add(e Entry) {
	if slices.ContainsFunc(f.entries, func(x Entry) bool { return x.Text == e.Text }) {
		return
	}
	f.entries = append(f.entries, e)
	if e.Prefix {
		f.prefixes = append(f.prefixes, strings.TrimSuffix(e.Text, "*"))
		return
	}
	if f.exact == nil {
		f.exact = map[string]struct{}{}
	}
	f.exact[e.Text] = struct{}{}
}

// WithBuiltin returns a copy of f that also matches the given full keys,
// which are taken as they are (no Guard applies: the caller vouches for
// them), marked Builtin. A key f already lists stays as given. f itself is
// not changed; a nil f is taken as empty.
func (f *Filter) WithBuiltin(keys ...string) *Filter {
	out := &Filter{}
	for _, e := range f.Admitted() {
		out.add(e)
	}
	for _, k := range keys {
		out.add(Entry{Text: k, Builtin: true})
	}
	return out
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

// Entries returns the entries' texts in the order given, without
// duplicates, built-in keys last.
func (f *Filter) Entries() []string {
	var out []string
	for _, e := range f.Admitted() {
		out = append(out, e.Text)
	}
	return out
}

// Admitted returns the entries in the order given, without duplicates,
// built-in keys last.
func (f *Filter) Admitted() []Entry {
	if f == nil {
		return nil
	}
	return slices.Clone(f.entries)
}

// String returns the entries as a comma separated list, as Parse takes it.
func (f *Filter) String() string { return strings.Join(f.Entries(), ",") }

// check returns why entry e is not acceptable, or the allowed owned domain
// it covers ("" for none).
func (g Guard) check(e string) (allowedBy string, err error) {
	switch e {
	case "":
		return "", errors.New("empty entry")
	case "*":
		return "", errors.New(`a bare "*" would match every key; use a prefix such as "ops.example.com/*"`)
	}
	prefix, isPrefix := strings.CutSuffix(e, "*")
	if strings.Contains(prefix, "*") {
		return "", errors.New(`"*" is only allowed as the last character`)
	}
	if isPrefix {
		if msgs := prefixErrors(prefix); msgs != nil {
			return "", fmt.Errorf("no valid key starts with %q: %s", prefix, strings.Join(msgs, "; "))
		}
		if d, _, hasSlash := strings.Cut(prefix, "/"); hasSlash {
			v := g.judge(d)
			if v.refused != "" {
				return "", refusal(fmt.Sprintf("could match keys in %s (for example %q)", v.refused, d+"/x"), v.hint)
			}
			return v.allowedBy, nil
		}
		// Without a "/" the domain is still open: the prefix can grow
		// into an owned domain or a subdomain of one.
		if example, v, ok := g.refusedCompletion(prefix); ok {
			return "", fmt.Errorf(`could match keys in %s (for example %q); end the domain with "/", as in "ops.example.com/*"`, v.refused, example)
		}
		return "", nil
	}
	if msgs := validation.IsQualifiedName(e); len(msgs) > 0 {
		return "", fmt.Errorf("not a valid key: %s", strings.Join(msgs, "; "))
	}
	d, _, hasSlash := strings.Cut(e, "/")
	if !hasSlash {
		return "", nil
	}
	v := g.judge(d)
	if v.refused == "" {
		return v.allowedBy, nil
	}
	hint := v.hint
	if slices.Contains(DeschedulerAnnotations(), e) {
		hint += fmt.Sprintf("; the annotation %s follows the template without an entry unless %s=false", e, DeschedulerAnnotationsFlag)
	}
	return "", refusal("is in "+v.refused, hint)
}

func refusal(what, hint string) error {
	if hint == "" {
		return errors.New(what)
	}
	return errors.New(what + "; " + hint)
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

// refusedCompletion finds a valid key starting with p (which has no "/")
// whose domain the Guard refuses.
func (g Guard) refusedCompletion(p string) (example string, v domainVerdict, ok bool) {
	roots := append(ownedNames(), OwnDomain)
	// Try the domains themselves first: "kube*" is better explained by
	// kubevirt.io than by kube.kubevirt.io.
	grow := []func(r string) string{
		func(r string) string { return r },
		func(r string) string { return p + r },
		func(r string) string { return p + "." + r },
		func(r string) string { return p + "x." + r },
	}
	for _, grown := range grow {
		for _, r := range roots {
			d := grown(r)
			key := d + "/x"
			if !strings.HasPrefix(d, p) || len(validation.IsQualifiedName(key)) > 0 {
				continue
			}
			if v := g.judge(d); v.refused != "" {
				return key, v, true
			}
		}
	}
	return "", domainVerdict{}, false
}
