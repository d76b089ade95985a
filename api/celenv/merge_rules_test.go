// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"flag"
	"os"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/celenv/celenvtest"
)

var updateMergeCases = flag.Bool("update-merge-cases", false,
	"write each merge case's want section from the merge result (review the diff before committing)")

// TestMergeRules runs the merge rule cases of testdata/merge, each file
// named after the rule it shows: every expression of a case, evaluated on
// the case's input, must give exactly the case's domain. The same cases are
// defined on libvirt's test driver by launcher-runtime/domainrun's
// TestMergeRuleOutputsAreDomainsLibvirtDefines.
func TestMergeRules(t *testing.T) {
	cases, err := celenvtest.LoadMergeCases("testdata/merge")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{})
	for _, c := range cases {
		t.Run(c.Rule, func(t *testing.T) {
			var got string
			for _, x := range c.Exprs {
				tr, err := e.DomainTransform(x.Text)
				if err != nil {
					t.Fatalf("%s: %v", x.Variant, err)
				}
				in := &libvirtxml.Domain{}
				if err := in.Unmarshal(c.Input); err != nil {
					t.Fatal(err)
				}
				out, err := tr.Merge(t.Context(), celenvtest.VMI(), in)
				if err != nil {
					t.Fatalf("%s: %v", x.Variant, err)
				}
				got = marshalDomain(t, out)
				if *updateMergeCases && c.Want != got {
					writeWant(t, c.Path, got)
					c.Want = got
				}
				if got != c.Want {
					t.Errorf("expr %s\n%s\ngives\n%s\nwant\n%s", x.Variant, x.Text, got, c.Want)
				}
			}
		})
	}
}

// writeWant replaces the want section of the case file at path.
func writeWant(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if i := strings.Index(text, "-- want --\n"); i >= 0 {
		text = text[:i]
	}
	if err := os.WriteFile(path, []byte(text+"-- want --\n"+want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHasAndReadsThroughAbsentElements: has() is true for a present element
// (also an empty one) and a non-zero scalar; a read through an absent element
// gives the zero value and has() on it is false.
func TestHasAndReadsThroughAbsentElements(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{`has(domainSpec.Features.ACPI)`, true},
		{`has(domainSpec.Features.PAE)`, false},
		{`has(domainSpec.NUMATune)`, false},
		{`has(domainSpec.NUMATune.Memory)`, false},
		{`domainSpec.NUMATune.Memory.Mode == ""`, true},
		{`has(domainSpec.Devices.Disks[1].Boot)`, false},
		{`domainSpec.Devices.Disks[1].Boot.Order == 0u`, true},
		{`has(domainSpec.Devices.Disks[0].Driver.IOThread)`, true},
		{`has(domainSpec.Devices.Disks[1].Driver.IOThread)`, false},
		{`domainSpec.Devices.Disks[1].Driver.IOThread == 0u`, true},
		{`has(domainSpec.Title)`, false},
		{`size(domainSpec.Devices.Disks) == 2`, true},
		{`size(domainSpec.Devices.Hostdevs) == 0`, true},
	} {
		t.Run(tc.cond, func(t *testing.T) {
			tr, err := e.DomainTransform(`Domain{Title: (` + tc.cond + `) ? "yes" : "no"}`)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tr.Merge(t.Context(), vmiWithLabels(nil), loadDomain(t, "testdata/domain-small.xml"))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Title == "yes"; got != tc.want {
				t.Fatalf("%s = %v, want %v", tc.cond, got, tc.want)
			}
		})
	}
}

// TestMergeMapVariableIsAComputedValue: a read that reaches a field through
// a map() variable is a plain value, as the package documentation says:
// [d.Driver.IOThread].map(x, x)[0] writes iothread="0" on the disk without
// one (which libvirt refuses, so this is no case of testdata/merge), while
// [d.Driver.IOThread][0] leaves it absent.
func TestMergeMapVariableIsAComputedValue(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		init string
		want *uint
	}{
		{`[d.Driver.IOThread].map(x, x)[0]`, new(uint)},
		{`[d.Driver.IOThread][0]`, nil},
	} {
		tr, err := e.DomainTransform(`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d,
			DomainDisk{Target: d.Target, Driver: DomainDiskDriver{IOThread: ` + tc.init + `}})}}`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tr.Merge(t.Context(), vmiWithLabels(nil), loadDomain(t, "testdata/domain-small.xml"))
		if err != nil {
			t.Fatal(err)
		}
		got := out.Devices.Disks[1].Driver.IOThread
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("IOThread: %s on a disk without iothread: got %v, want %v", tc.init, got, tc.want)
		}
	}
}
