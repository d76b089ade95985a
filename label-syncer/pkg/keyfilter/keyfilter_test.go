package keyfilter

import (
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
		{"kubevirt.io prefix", "kubevirt.io/*", []string{`("kubevirt.io/*")`, "reserved domain kubevirt.io"}},
		{"kubevirt.io subdomain key", "vm.kubevirt.io/name", []string{`("vm.kubevirt.io/name")`, "reserved domain kubevirt.io"}},
		{"created-by key", "kubevirt.io/created-by", []string{"reserved domain kubevirt.io"}},
		{"kubernetes.io subdomain prefix", "node-role.kubernetes.io/*", []string{"reserved domain kubernetes.io"}},
		{"k8s.io key", "k8s.io/x", []string{"reserved domain k8s.io"}},
		{"k8s.io subdomain prefix", "x.k8s.io/*", []string{"reserved domain k8s.io"}},
		{"prefix of kubevirt.io", "kube*", []string{`("kube*")`, "reserved domain", `end the domain with "/"`}},
		{"truncated kubevirt.io", "kubevirt.i*", []string{"reserved domain kubevirt.io", `"kubevirt.io/x"`}},
		{"whole reserved domain without slash", "k8s.io*", []string{"reserved domain k8s.io"}},
		{"open domain grows into a subdomain", "ops*", []string{"reserved domain kubevirt.io", `"ops.kubevirt.io/x"`}},
		{"open domain ending in a dot", "ops.*", []string{`"ops.kubevirt.io/x"`}},
		{"syncer bookkeeping annotation", "labelsync.kubevirt-plugins.io/synced-labels", []string{"reserved domain labelsync.kubevirt-plugins.io"}},
		{"syncer bookkeeping prefix", "labelsync.kubevirt-plugins.io/*", []string{"reserved domain labelsync.kubevirt-plugins.io"}},
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
