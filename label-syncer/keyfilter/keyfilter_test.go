// SPDX-License-Identifier: Apache-2.0

package keyfilter

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseAcceptsFullKeysAndPrefixes(t *testing.T) {
	cases := []struct {
		name    string
		list    string
		entries []string
	}{
		{"empty list selects nothing", "", nil},
		{"domain prefix", "ops.example.com/*", []string{"ops.example.com/*"}},
		{"full keys", "ops.example.com/owner,ops.example.com/vm-id", []string{"ops.example.com/owner", "ops.example.com/vm-id"}},
		{"spaces around entries are ignored", " ops.example.com/a , ops.example.com/b ", []string{"ops.example.com/a", "ops.example.com/b"}},
		{"duplicates collapse", "ops.example.com/a,ops.example.com/a", []string{"ops.example.com/a"}},
		{"prefix inside the name part", "ops.example.com/owner-*", []string{"ops.example.com/owner-*"}},
		{"key without a domain", "tier", []string{"tier"}},
		{"prefix that can only be a name (upper case)", "Team*", []string{"Team*"}},
		{"reserved name only as an inner label", "kubevirt.io.example.com/*", []string{"kubevirt.io.example.com/*"}},
		{"reserved name without the dot is another domain", "notkubevirt.io/x", []string{"notkubevirt.io/x"}},
		{"recommended labels prefix", "app.kubernetes.io/*", []string{"app.kubernetes.io/*"}},
		{"recommended label name", "app.kubernetes.io/name", []string{"app.kubernetes.io/name"}},
		{"recommended labels by name prefix", "app.kubernetes.io/part-*", []string{"app.kubernetes.io/part-*"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.list)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.list, err)
			}
			if got := f.Entries(); strings.Join(got, "|") != strings.Join(tc.entries, "|") {
				t.Fatalf("entries = %q, want %q", got, tc.entries)
			}
			if f.Empty() != (len(tc.entries) == 0) {
				t.Fatalf("Empty() = %v with entries %q", f.Empty(), tc.entries)
			}
		})
	}
}

func TestParseRejectsEntriesNamingThem(t *testing.T) {
	cases := []struct {
		name string
		list string
		// want are substrings the error must contain.
		want []string
	}{
		{"bare star", "*", []string{`entry 1 ("*")`, `bare "*"`}},
		{"bare star after a good entry", "ops.example.com/*,*", []string{`entry 2 ("*")`, `bare "*"`}},
		{"star not at the end", "ops.*/x", []string{`entry 1 ("ops.*/x")`, "only allowed as the last character"}},
		{"leading star on a subdomain pattern", "*.k8s.io/x", []string{`("*.k8s.io/x")`, "only allowed as the last character"}},
		{"two stars", "ops.example.com/**", []string{"only allowed as the last character"}},
		{"empty entry", "ops.example.com/a,,ops.example.com/b", []string{`entry 2 ("")`, "empty entry"}},
		{"two slashes", "ops.example.com/a/b", []string{`("ops.example.com/a/b")`, "not a valid key"}},
		{"name too long", "ops.example.com/" + strings.Repeat("a", 64), []string{"not a valid key", "63"}},
		{"upper case domain", "Ops.Example.com/*", []string{`("Ops.Example.com/*")`, `no valid key starts with "Ops.Example.com/"`}},
		{"prefix name cannot start with a dash", "ops.example.com/-a*", []string{`no valid key starts with "ops.example.com/-a"`}},
		{"space inside", "ops.example.com/a b", []string{"not a valid key"}},
		{"kubevirt.io prefix", "kubevirt.io/*", []string{`("kubevirt.io/*")`, "domain kubevirt.io, which KubeVirt owns"}},
		{"kubevirt.io subdomain key", "vm.kubevirt.io/name", []string{`("vm.kubevirt.io/name")`, "domain kubevirt.io, which KubeVirt owns"}},
		{"created-by key", "kubevirt.io/created-by", []string{"domain kubevirt.io, which KubeVirt owns"}},
		{"kubernetes.io subdomain prefix", "node-role.kubernetes.io/*", []string{"domain kubernetes.io, which Kubernetes owns"}},
		{"k8s.io key", "k8s.io/x", []string{"domain k8s.io, which Kubernetes owns"}},
		{"k8s.io subdomain prefix", "x.k8s.io/*", []string{"domain k8s.io, which Kubernetes owns"}},
		{"prefix of kubevirt.io", "kube*", []string{`("kube*")`, "domain kubevirt.io", `end the domain with "/"`}},
		{"truncated kubevirt.io", "kubevirt.i*", []string{"domain kubevirt.io, which KubeVirt owns", `"kubevirt.io/x"`}},
		{"whole reserved domain without slash", "k8s.io*", []string{"domain k8s.io, which Kubernetes owns"}},
		{"open domain grows into a subdomain", "ops*", []string{"domain kubevirt.io, which KubeVirt owns", `"ops.kubevirt.io/x"`}},
		{"open domain ending in a dot", "ops.*", []string{`"ops.kubevirt.io/x"`}},
		{"syncer bookkeeping annotation", "labelsync.kubevirt-plugins.io/synced-labels", []string{"own bookkeeping domain labelsync.kubevirt-plugins.io"}},
		{"syncer bookkeeping prefix", "labelsync.kubevirt-plugins.io/*", []string{"own bookkeeping domain labelsync.kubevirt-plugins.io"}},
		{"subdomain of the recommended labels domain", "x.app.kubernetes.io/name", []string{"domain kubernetes.io, which Kubernetes owns", "add x.app.kubernetes.io to --allow-owned-domains"}},
		{"recommended labels domain without slash", "app.kubernetes.io*", []string{`end the domain with "/"`}},
		{"node roles", "node-role.kubernetes.io/worker", []string{"domain kubernetes.io, which Kubernetes owns", "add node-role.kubernetes.io to --allow-owned-domains"}},
		{"descheduler annotation needs no entry", "descheduler.alpha.kubernetes.io/evict", []string{"domain kubernetes.io", "follows the template without an entry unless --sync-descheduler-annotations=false"}},
		{"every bad entry is named", "kubevirt.io/*,ops.example.com/a,*", []string{`entry 1 ("kubevirt.io/*")`, `entry 3 ("*")`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.list)
			if err == nil {
				t.Fatalf("Parse(%q) accepted %q", tc.list, f.Entries())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestMatchSelectsExactKeysAndPrefixesOnly(t *testing.T) {
	f, err := Parse("ops.example.com/*,team.example.com/owner,tier")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key  string
		want bool
	}{
		{"ops.example.com/vm-id", true},
		{"ops.example.com/owner-a", true},
		{"ops.example.com/", true},
		{"ops.example.community/x", false},
		{"sub.ops.example.com/x", false},
		{"team.example.com/owner", true},
		{"team.example.com/owner-b", false},
		{"team.example.com/own", false},
		{"tier", true},
		{"tiers", false},
		{"kubevirt.io/created-by", false},
		{"app", false},
	}
	for _, tc := range cases {
		if got := f.Match(tc.key); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestZeroFilterMatchesNothing(t *testing.T) {
	var f *Filter
	if f.Match("ops.example.com/x") || !f.Empty() {
		t.Fatal("nil Filter matched a key or is not empty")
	}
	empty, err := Parse("  ")
	if err != nil {
		t.Fatal(err)
	}
	if empty.Match("") || empty.Match("ops.example.com/x") {
		t.Fatal("empty Filter matched a key")
	}
}

func TestAllowedOwnedDomainAdmitsItsKeysOnly(t *testing.T) {
	g, err := NewGuard([]string{"kubevirt.io", " node-role.kubernetes.io "})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.AllowedOwned(), ","); got != "kubevirt.io,node-role.kubernetes.io" {
		t.Fatalf("AllowedOwned() = %q", got)
	}
	admitted := []struct{ entry, by string }{
		{"kubevirt.io/*", "kubevirt.io"},
		{"vm.kubevirt.io/name", "kubevirt.io"},
		{"node-role.kubernetes.io/worker", "node-role.kubernetes.io"},
		{"x.node-role.kubernetes.io/*", "node-role.kubernetes.io"},
		{"app.kubernetes.io/name", ""},
		{"ops.example.com/*", ""},
	}
	for _, a := range admitted {
		f, err := g.Parse(a.entry)
		if err != nil {
			t.Errorf("Parse(%q) with %v allowed: %v", a.entry, g.AllowedOwned(), err)
			continue
		}
		if e := f.Admitted()[0]; e.AllowedOwned != a.by {
			t.Errorf("%q admitted by %q, want %q", a.entry, e.AllowedOwned, a.by)
		}
	}
	refused := []struct{ entry, want string }{
		{"kubernetes.io/hostname", "domain kubernetes.io"},
		{"topology.kubernetes.io/*", "domain kubernetes.io"},
		{"k8s.io/x", "domain k8s.io"},
		// Allowing kubevirt.io and node roles does not open the prefixes
		// that could still grow into kubernetes.io.
		{"kube*", "kubernetes.io/x"},
		{"labelsync.kubevirt-plugins.io/synced-labels", "never synced"},
	}
	for _, r := range refused {
		_, err := g.Parse(r.entry)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("Parse(%q) with %v allowed: error %v, want one containing %q", r.entry, g.AllowedOwned(), err, r.want)
		}
	}
}

func TestNewGuardRejectsDomainsNamingThem(t *testing.T) {
	cases := []struct {
		name   string
		domain string
		want   string
	}{
		{"not owned", "ops.example.com", "is not in an owned domain (kubevirt.io, kubernetes.io, k8s.io)"},
		{"user domain", "app.kubernetes.io", "belongs to users"},
		{"the syncer's own", "labelsync.kubevirt-plugins.io", "is the syncer's own bookkeeping domain"},
		{"not a domain", "Kubevirt.io/x", "not a DNS subdomain"},
		{"empty", "", "empty domain"},
		{"a lookalike", "notkubevirt.io", "is not in an owned domain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGuard("kubevirt.io," + tc.domain)
			if err == nil {
				t.Fatalf("ParseGuard accepted %q", tc.domain)
			}
			if want := `entry 2 (` + strconv.Quote(tc.domain) + `): ` + tc.want; !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
		})
	}
}

func TestBuiltinKeysMatchAndAreListedLast(t *testing.T) {
	f, err := Parse("notes.example.com/*")
	if err != nil {
		t.Fatal(err)
	}
	b := f.WithBuiltin(DeschedulerAnnotations()...)
	for _, k := range DeschedulerAnnotations() {
		if !b.Match(k) || f.Match(k) {
			t.Fatalf("%s: builtin filter match %v, original %v", k, b.Match(k), f.Match(k))
		}
	}
	if !b.Match("notes.example.com/ticket") || b.Match("descheduler.alpha.kubernetes.io/other") {
		t.Fatal("builtin filter lost the entries or matches more than the keys")
	}
	got := b.Admitted()
	if len(got) != 3 || got[0].Builtin || !got[1].Builtin || got[1].Text != "descheduler.alpha.kubernetes.io/evict" || !got[2].Builtin {
		t.Fatalf("Admitted() = %+v", got)
	}
	var nilFilter *Filter
	if !nilFilter.WithBuiltin("a.example.com/b").Match("a.example.com/b") {
		t.Fatal("builtin key on a nil filter does not match")
	}
}
