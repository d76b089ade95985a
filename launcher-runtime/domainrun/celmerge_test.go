// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun_test

import (
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/celenv"
	"github.com/kubevirt-plugins/framework/api/celenv/celenvtest"
)

// The tests of this file take libvirt's own domain parser as the judge of the
// GuestDefinition merge (api/celenv): every domain a merge produces, from the
// expressions of the merge rules and from generated ones, on every fixture
// domain, must be one libvirt's test driver defines.

// repoRoot is the folder holding go.work above the package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.work) not found above the package")
		}
		dir = parent
	}
}

// fixtureDomains returns the path of every domain fixture: the repository's
// own, and KubeVirt's generated domains in the shared fixtures beside the
// repository (../shared/fixtures, or $KVP_SHARED_FIXTURES), which are left
// out, with a message, when that folder is absent.
func fixtureDomains(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	paths := []string{
		filepath.Join(root, "launcher-runtime", "testdata", "domain.xml"),
		filepath.Join(root, "api", "celenv", "testdata", "domain-small.xml"),
	}
	shared := os.Getenv("KVP_SHARED_FIXTURES")
	if shared == "" {
		shared = filepath.Join(root, "..", "shared", "fixtures")
	}
	sharedXML, err := filepath.Glob(filepath.Join(shared, "*.xml"))
	if err != nil || len(sharedXML) == 0 {
		t.Logf("shared fixtures absent from %s: only the repository's domains are checked (the shared fixtures live beside the repository; KVP_SHARED_FIXTURES names another folder)", shared)
	}
	return append(paths, sharedXML...)
}

// fragments are the fixtures that are not whole domains, with what each
// lacks to be one. KubeVirt's migration_domain.xml holds devices only: it is
// given the name, memory and OS type libvirt needs to define any domain, and
// its merge results are judged with them. No other fixture is completed.
var fragments = map[string]func(d *libvirtxml.Domain){
	"migration_domain.xml": func(d *libvirtxml.Domain) {
		d.Name = "migration_domain"
		d.Memory = &libvirtxml.DomainMemory{Value: 1 << 30, Unit: "b"}
		d.OS = &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Type: "hvm"}}
	},
}

// loadDomain parses a fixture domain, completing it when it is one of the
// fragments.
func loadDomain(t *testing.T, path string) *libvirtxml.Domain {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if complete, ok := fragments[filepath.Base(path)]; ok {
		if d.Name != "" || d.Memory != nil || d.OS != nil {
			t.Fatalf("%s is listed as a fragment but has a name, memory or OS of its own", path)
		}
		complete(d)
	}
	return d
}

func loadVMI(t *testing.T) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "launcher-runtime", "testdata", "vmi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(vmi); err != nil {
		t.Fatal(err)
	}
	return vmi
}

// oracle defines domains on libvirt's test driver.
type oracle struct{ conn *libvirt.Connect }

func newOracle(t *testing.T) oracle {
	t.Helper()
	conn, err := libvirt.NewConnect("test:///default")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	return oracle{conn: conn}
}

// define hands d to libvirt's parser, as a domain of the test driver, and
// undefines it again; it returns libvirt's refusal.
func (o oracle) define(d *libvirtxml.Domain) error {
	text, err := d.Marshal()
	if err != nil {
		return fmt.Errorf("marshal: %w", err)
	}
	// The test driver defines only domains of its own type.
	text = strings.Replace(text, `<domain type="kvm"`, `<domain type="test"`, 1)
	dom, err := o.conn.DomainDefineXML(text)
	if err != nil {
		return err
	}
	defer dom.Free()
	return dom.Undefine()
}

func newEnv(t *testing.T) *celenv.Env {
	t.Helper()
	// Generated expressions copy whole domains field by field; their cost is
	// not what these tests are about.
	e, err := celenv.New(celenv.Options{CostLimit: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func merge(t *testing.T, e *celenv.Env, expr string, vmi *kubevirtv1.VirtualMachineInstance, d *libvirtxml.Domain) *libvirtxml.Domain {
	t.Helper()
	tr, err := e.DomainTransform(expr)
	if err != nil {
		t.Fatalf("compiling %s: %v", expr, err)
	}
	out, err := tr.Merge(t.Context(), vmi, d)
	if err != nil {
		t.Fatalf("merging %s: %v", expr, err)
	}
	return out
}

// accepts checks that libvirt defines out, a merge result from the fixture
// at path. Every fixture is itself a domain libvirt defines
// (TestFixtureDomainsAreDomainsLibvirtDefines), so a refusal is the merge's
// doing.
func (o oracle) accepts(t *testing.T, path string, out *libvirtxml.Domain, what string) {
	t.Helper()
	if err := o.define(out); err != nil {
		text, _ := out.Marshal()
		t.Errorf("%s: libvirt refuses the result of %s: %v\n%s", filepath.Base(path), what, err, text)
	}
}

// TestFixtureDomainsAreDomainsLibvirtDefines: the oracle defines every
// fixture as it is loaded, so a refusal of a merge result is the merge's
// doing.
func TestFixtureDomainsAreDomainsLibvirtDefines(t *testing.T) {
	o := newOracle(t)
	for _, path := range fixtureDomains(t) {
		if err := o.define(loadDomain(t, path)); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
	}
}

// TestMergeRuleOutputsAreDomainsLibvirtDefines runs the merge rule cases of
// api/celenv (testdata/merge, also run by celenv's TestMergeRules): every
// expression of a case gives exactly the case's domain from its input, and
// libvirt defines that domain.
func TestMergeRuleOutputsAreDomainsLibvirtDefines(t *testing.T) {
	cases, err := celenvtest.LoadMergeCases(filepath.Join(repoRoot(t), "api", "celenv", "testdata", "merge"))
	if err != nil {
		t.Fatal(err)
	}
	o, e := newOracle(t), newEnv(t)
	for _, c := range cases {
		t.Run(c.Rule, func(t *testing.T) {
			in := &libvirtxml.Domain{}
			if err := in.Unmarshal(c.Input); err != nil {
				t.Fatal(err)
			}
			if err := o.define(in); err != nil {
				t.Fatalf("libvirt refuses the input: %v", err)
			}
			for _, x := range c.Exprs {
				out := merge(t, e, x.Text, celenvtest.VMI(), in)
				got, err := out.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if got != c.Want {
					t.Errorf("expr %s gives\n%s\nwant\n%s", x.Variant, got, c.Want)
				}
				if err := o.define(out); err != nil {
					t.Errorf("expr %s: libvirt refuses the result: %v\n%s", x.Variant, err, got)
				}
			}
		})
	}
}

// ruleEditsForAnyDomain are the merge rules' kinds of edit written for any
// domain (per-device edits by map() rather than by index): each must give, on
// every fixture domain, a domain libvirt defines.
var ruleEditsForAnyDomain = []string{
	// A read of an absent element written back (no <boot order="0"/>), and of
	// absent attributes.
	`Domain{ID: domainSpec.ID, Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Boot: d.Boot, Alias: d.Alias, ReadOnly: d.ReadOnly,
		Driver: DomainDiskDriver{Name: d.Driver.Name, Type: d.Driver.Type, IOThread: d.Driver.IOThread}})}}`,
	// Present-but-empty elements kept, an empty literal added.
	`Domain{Features: DomainFeatureList{ACPI: domainSpec.Features.ACPI, APIC: domainSpec.Features.APIC, PAE: DomainFeature{}}}`,
	// Literals chosen by ?:, at the top level, nested and in list elements.
	`Domain{CPU: vmi.Name != "" ? DomainCPU{Mode: "host-passthrough"} : domainSpec.CPU}`,
	`vmi.Name != "" ? Domain{Title: ""} : domainSpec`,
	`vmi.Name != "" ? Domain{Name: "renamed", CPU: DomainCPU{Mode: "host-model"}} : domainSpec`,
	`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, vmi.Name != "" ? DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Boot: d.Boot, Alias: d.Alias,
		ReadOnly: d.Device == "cdrom" ? DomainDiskReadOnly{} : d.ReadOnly,
		Driver: DomainDiskDriver{Name: d.Driver.Name, Type: d.Driver.Type, Cache: d.Device == "cdrom" ? d.Driver.Cache : "writeback"}} : d)}}`,
	// Per-device map() edits.
	`Domain{Devices: DomainDeviceList{
		Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Alias: d.Alias, Boot: d.Boot, ReadOnly: d.ReadOnly, Address: d.Address,
			Driver: DomainDiskDriver{Name: d.Driver.Name, Type: d.Driver.Type, IOThread: d.Driver.IOThread, Cache: "writeback"}}),
		Interfaces: domainSpec.Devices.Interfaces.map(i, DomainInterface{MAC: i.MAC, Source: i.Source, Target: i.Target, Model: i.Model, MTU: i.MTU, Alias: i.Alias, Address: i.Address, Boot: i.Boot, ROM: i.ROM,
			Driver: DomainInterfaceDriver{Queues: 4u}})}}`,
	// The benchmark's hook.
	`Domain{CPU: DomainCPU{Mode: "host-passthrough"},
		Devices: DomainDeviceList{Watchdogs: [DomainWatchdog{Model: "i6300esb", Action: "reset"}], Disks: domainSpec.Devices.Disks},
		SysInfo: [DomainSysInfo{SMBIOS: DomainSysInfoSMBIOS{System: DomainSysInfoSystem{Entry: [DomainSysInfoEntry{Name: "manufacturer", Value: "Example"}]}}}]}`,
}

// TestMergeRuleEditsOnEveryFixtureAreDomainsLibvirtDefines: the edits of
// ruleEditsForAnyDomain give, on every fixture domain, domains libvirt
// defines.
func TestMergeRuleEditsOnEveryFixtureAreDomainsLibvirtDefines(t *testing.T) {
	o, e, vmi := newOracle(t), newEnv(t), loadVMI(t)
	for _, path := range fixtureDomains(t) {
		for i, expr := range ruleEditsForAnyDomain {
			out := merge(t, e, expr, vmi, loadDomain(t, path))
			o.accepts(t, path, out, fmt.Sprintf("expression %d:\n%s\n", i, expr))
		}
	}
}

// readBackEverything is Domain{F: domainSpec.F, ...} over every field of
// Domain.
func readBackEverything() string {
	var fields []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[libvirtxml.Domain]()) {
		if !visible(f) {
			continue
		}
		fields = append(fields, f.Name+": domainSpec."+f.Name)
	}
	return "Domain{" + strings.Join(fields, ", ") + "}"
}

// TestReadBackEverythingReproducesTheInput: an expression reading every
// top-level part of the domain back gives exactly the input XML, on every
// fixture, and libvirt defines it.
func TestReadBackEverythingReproducesTheInput(t *testing.T) {
	o, e, vmi := newOracle(t), newEnv(t), loadVMI(t)
	expr := readBackEverything()
	for _, path := range fixtureDomains(t) {
		in := loadDomain(t, path)
		want, err := in.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out := merge(t, e, expr, vmi, in)
		got, err := out.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %s changed the domain:\n%s\nwant:\n%s", filepath.Base(path), expr, got, want)
		}
		o.accepts(t, path, out, expr)
	}
}

// TestGeneratedExpressionsGiveDomainsLibvirtDefines generates, for every
// fixture domain, expressions that rebuild the domain in many ways (struct
// literals copying fields one by one, conditionals choosing literals or
// read-backs, has() guards, map() over lists, reads of absent and present
// elements and attributes), each of which must reproduce the domain exactly.
// Then it replaces some top-level fields of each by edits: always a list
// edit by map() rebuilding every disk with cache="writeback" and every
// interface with queues="4" (their other fields copied by generated
// read-backs), and one or two of a CPU mode, an added <pae/>, a title and a
// crash action. Each edit must have exactly its effect (editApplied), and
// every output must be a domain libvirt defines.
func TestGeneratedExpressionsGiveDomainsLibvirtDefines(t *testing.T) {
	o, e, vmi := newOracle(t), newEnv(t), loadVMI(t)
	const perFixture = 12
	for _, path := range fixtureDomains(t) {
		in := loadDomain(t, path)
		want, err := in.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(perFixture) {
			g := &generator{rnd: rand.New(rand.NewPCG(seed, 11)), vars: 0}
			body := g.fields("domainSpec", reflect.TypeFor[libvirtxml.Domain](), reflect.ValueOf(in).Elem(), 0)
			identity := "Domain{" + strings.Join(body, ", ") + "}"
			out := merge(t, e, identity, vmi, in)
			got, err := out.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s, seed %d: expression\n%s\nchanged the domain:\n%s", filepath.Base(path), seed, identity, diffLines(want, got))
				continue
			}
			o.accepts(t, path, out, fmt.Sprintf("seed %d:\n%s\n", seed, identity))
			edits := g.edits()
			var kept []string
			for _, f := range body {
				if !slices.ContainsFunc(edits, func(e string) bool { return strings.SplitN(e, ":", 2)[0] == strings.SplitN(f, ":", 2)[0] }) {
					kept = append(kept, f)
				}
			}
			edited := "Domain{" + strings.Join(append(kept, edits...), ", ") + "}"
			out = merge(t, e, edited, vmi, in)
			o.accepts(t, path, out, fmt.Sprintf("seed %d:\n%s\n", seed, edited))
			for _, edit := range edits {
				if !editApplied(edit, in, out, vmi) {
					t.Errorf("%s, seed %d: edit %s not applied by\n%s", filepath.Base(path), seed, edit, edited)
				}
			}
		}
	}
}

// generator writes CEL expressions that evaluate to a given Go value read
// from the domain, choosing at random among equivalent forms.
type generator struct {
	rnd  *rand.Rand
	vars int
}

const maxDepth = 4

// cond is a condition that holds for the test VMI, or one that does not.
func (g *generator) cond() (string, bool) {
	if g.rnd.IntN(2) == 0 {
		return `vmi.Name != ""`, true
	}
	return `vmi.Name == ""`, false
}

// fields returns "F: <expr>" for every visible field of struct type t, each
// expression evaluating to the field of v (read at path).
func (g *generator) fields(path string, t reflect.Type, v reflect.Value, depth int) []string {
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		if !visible(f) {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		if g.rnd.IntN(3) == 0 && fv.IsZero() {
			continue // leaving a zero field out of a literal writes the same zero
		}
		out = append(out, f.Name+": "+g.value(path+"."+f.Name, f.Type, fv, depth))
	}
	return out
}

// value returns an expression for the value v of Go type t read at path.
func (g *generator) value(path string, t reflect.Type, v reflect.Value, depth int) string {
	elem := t
	if t.Kind() == reflect.Pointer {
		elem = t.Elem()
	}
	switch {
	case elem.Kind() == reflect.Struct && literalType(elem) && depth < maxDepth && g.rnd.IntN(3) > 0:
		var sv reflect.Value
		present := t.Kind() != reflect.Pointer || !v.IsNil()
		if present {
			sv = reflect.Indirect(v)
		} else {
			sv = reflect.Zero(elem)
		}
		lit := elem.Name() + "{" + strings.Join(g.fields(path, elem, sv, depth+1), ", ") + "}"
		if t.Kind() == reflect.Pointer {
			// A literal makes its element present: guard it with has(), or
			// choose it only when the element is there.
			if g.rnd.IntN(2) == 0 {
				return "has(" + path + ") ? " + lit + " : " + path
			}
			if !present {
				return path
			}
		}
		return lit
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && literalType(t.Elem()) && depth < maxDepth && g.rnd.IntN(2) == 0 && v.Len() > 0:
		// Every element is rebuilt by a map() body; the body sees one value
		// of the list, so it is generated from the first element's shape and
		// must hold for all: copy every field.
		g.vars++
		x := fmt.Sprintf("x%d", g.vars)
		var fields []string
		for _, f := range reflect.VisibleFields(t.Elem()) {
			if visible(f) {
				fields = append(fields, f.Name+": "+g.uniform(x+"."+f.Name, f.Type, depth+1))
			}
		}
		return path + ".map(" + x + ", " + t.Elem().Name() + "{" + strings.Join(fields, ", ") + "})"
	}
	if c, holds := g.cond(); g.rnd.IntN(4) == 0 {
		if holds {
			return c + " ? " + path + " : " + g.other(path, t)
		}
		return c + " ? " + g.other(path, t) + " : " + path
	}
	return path
}

// uniform is like value for a map() body: it cannot look at the element, so
// it uses only forms that reproduce any value: read-backs, read-backs chosen
// by a conditional, and has()-guarded literals.
func (g *generator) uniform(path string, t reflect.Type, depth int) string {
	elem := t
	if t.Kind() == reflect.Pointer {
		elem = t.Elem()
	}
	if t.Kind() == reflect.Pointer && elem.Kind() == reflect.Struct && literalType(elem) && depth < maxDepth && g.rnd.IntN(2) == 0 {
		var fields []string
		for _, f := range reflect.VisibleFields(elem) {
			if visible(f) {
				fields = append(fields, f.Name+": "+g.uniform(path+"."+f.Name, f.Type, depth+1))
			}
		}
		return "has(" + path + ") ? " + elem.Name() + "{" + strings.Join(fields, ", ") + "} : " + path
	}
	if c, holds := g.cond(); g.rnd.IntN(4) == 0 {
		if holds {
			return c + " ? " + path + " : " + g.other(path, t)
		}
		return c + " ? " + g.other(path, t) + " : " + path
	}
	return path
}

// other is an expression of type t that differs from the value at path,
// for the branch of a conditional that is not taken.
func (g *generator) other(path string, t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return `"not taken"`
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct && literalType(t.Elem()) {
			return t.Elem().Name() + "{}"
		}
	}
	return path
}

// edits are top-level fields that change the domain in ways libvirt
// accepts: always a list edit by map() on the devices (a cache mode on every
// disk, queues on every interface, every other field of each device copied
// by generated read-backs), and one or two of a CPU mode, an added <pae/>, a
// title and a crash action.
func (g *generator) edits() []string {
	devices := "Devices: DomainDeviceList{" +
		"Disks: " + g.listEdit("domainSpec.Devices.Disks", reflect.TypeFor[libvirtxml.DomainDisk](), "Driver", "Cache", `"writeback"`) + ", " +
		"Interfaces: " + g.listEdit("domainSpec.Devices.Interfaces", reflect.TypeFor[libvirtxml.DomainInterface](), "Driver", "Queues", "4u") + "}"
	others := []string{
		`CPU: DomainCPU{Mode: "host-passthrough"}`,
		`Features: DomainFeatureList{ACPI: domainSpec.Features.ACPI, PAE: DomainFeature{}}`,
		`Title: vmi.Name`,
		`OnCrash: "destroy"`,
	}
	g.rnd.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	return append([]string{devices}, others[:1+g.rnd.IntN(2)]...)
}

// listEdit is path.map(x, T{...}) rebuilding every element of the list of
// struct type t: each field is copied by a generated read-back (g.uniform),
// but for the struct field sub, rebuilt by a literal whose fields are copied
// the same way, but for set, written as value.
func (g *generator) listEdit(path string, t reflect.Type, sub, set, value string) string {
	g.vars++
	x := fmt.Sprintf("x%d", g.vars)
	var fields []string
	for _, f := range reflect.VisibleFields(t) {
		if !visible(f) {
			continue
		}
		if f.Name != sub {
			fields = append(fields, f.Name+": "+g.uniform(x+"."+f.Name, f.Type, 1))
			continue
		}
		st := f.Type.Elem()
		var subFields []string
		for _, sf := range reflect.VisibleFields(st) {
			if visible(sf) && sf.Name != set {
				subFields = append(subFields, sf.Name+": "+g.uniform(x+"."+sub+"."+sf.Name, sf.Type, 2))
			}
		}
		subFields = append(subFields, set+": "+value)
		fields = append(fields, sub+": "+st.Name()+"{"+strings.Join(subFields, ", ")+"}")
	}
	return path + ".map(" + x + ", " + t.Name() + "{" + strings.Join(fields, ", ") + "})"
}

// editApplied checks the effect of one of the edits on out, merged from in.
func editApplied(edit string, in, out *libvirtxml.Domain, vmi *kubevirtv1.VirtualMachineInstance) bool {
	switch strings.SplitN(edit, ":", 2)[0] {
	case "Devices":
		// Each device is the input's with the one attribute set, nothing
		// else changed (compared as XML: a list read back may come out
		// empty where the input's was nil).
		want := *in.Devices
		want.Disks = slices.Clone(in.Devices.Disks)
		for i := range want.Disks {
			drv := libvirtxml.DomainDiskDriver{}
			if want.Disks[i].Driver != nil {
				drv = *want.Disks[i].Driver
			}
			drv.Cache = "writeback"
			want.Disks[i].Driver = &drv
		}
		want.Interfaces = slices.Clone(in.Devices.Interfaces)
		for i := range want.Interfaces {
			drv := libvirtxml.DomainInterfaceDriver{}
			if want.Interfaces[i].Driver != nil {
				drv = *want.Interfaces[i].Driver
			}
			drv.Queues = 4
			want.Interfaces[i].Driver = &drv
		}
		w, werr := xml.Marshal(&want)
		o, oerr := xml.Marshal(out.Devices)
		return werr == nil && oerr == nil && string(w) == string(o)
	case "CPU":
		return out.CPU != nil && out.CPU.Mode == "host-passthrough"
	case "Features":
		hadACPI := in.Features != nil && in.Features.ACPI != nil
		return out.Features != nil && out.Features.PAE != nil && (out.Features.ACPI != nil) == hadACPI
	case "Title":
		return out.Title == vmi.Name
	case "OnCrash":
		return out.OnCrash == "destroy"
	}
	return false
}

// visible reports whether CEL sees field f: exported, not embedded, not the
// XML name, of a type CEL can read.
func visible(f reflect.StructField) bool {
	if !f.IsExported() || f.Anonymous || len(f.Index) > 1 || f.Type == reflect.TypeFor[xml.Name]() {
		return false
	}
	return celReadable(f.Type, 0)
}

func celReadable(t reflect.Type, depth int) bool {
	if depth > 3 {
		return true
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Func, reflect.Chan:
		return false
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return celReadable(t.Elem(), depth+1)
	case reflect.Map:
		return celReadable(t.Key(), depth+1) && celReadable(t.Elem(), depth+1)
	}
	return true
}

// literalType reports whether a struct type can be rebuilt field by field
// from CEL: every field visible or the XML name.
func literalType(t reflect.Type) bool {
	if t.PkgPath() != reflect.TypeFor[libvirtxml.Domain]().PkgPath() {
		return false
	}
	for f := range t.Fields() {
		if f.Type == reflect.TypeFor[xml.Name]() {
			continue
		}
		if !visible(f) {
			return false
		}
	}
	return true
}

// diffLines shows the first lines where got differs from want.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  want: %s\n  got:  %s\n", i+1, wl, gl)
			if b.Len() > 2000 {
				break
			}
		}
	}
	return b.String()
}
