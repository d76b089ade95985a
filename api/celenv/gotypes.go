// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"fmt"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	quantityType  = reflect.TypeFor[resource.Quantity]()
	metaTimeType  = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	timeType      = reflect.TypeFor[time.Time]()
	durationType  = reflect.TypeFor[time.Duration]()
	stringType    = reflect.TypeFor[string]()
	byteType      = reflect.TypeFor[byte]()
)

// celTypeName is the name cel-go's native type support gives a Go struct type:
// the last element of the package path, a dot, the type name
// (libvirtxml.DomainCPU, v1.VirtualMachineInstance).
func celTypeName(t reflect.Type) string {
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	return pkg + "." + t.Name()
}

// goTypes is the type provider and adapter of one environment: it describes
// to CEL the Go struct types reachable from the environment's roots (the VMI,
// and the domain for GuestDefinition expressions), and it reads and builds
// them differently from cel-go's native type provider (ext.NativeTypes):
//
//   - reading fields: the native provider panics on a field promoted through a
//     nil embedded pointer (v1.GPU embeds *v1.ClaimRequest), lets one of two Go
//     types sharing a CEL name hide the other (kubevirt's and core/v1's
//     PersistentVolumeClaimVolumeSource are both "v1.PersistentVolumeClaimVolumeSource"),
//     and exposes resource.Quantity and metav1.Time as opaque objects. Here a
//     field behind a nil pointer reads as its zero value, a field is looked up
//     in every Go type of that name, a Quantity reads as its canonical string
//     ("2Gi") and a metav1.Time as a timestamp.
//   - building structs: the native provider cannot assign to pointers to
//     scalars (*uint, *bool, ... : more than a hundred libvirtxml fields) nor
//     to named scalar types. Here every field is converted by its Go type.
//   - describing types: the native provider describes every reachable type
//     (about 700 from the VMI and the domain) when the environment is built,
//     which cost a fresh virt-launcher several milliseconds and megabytes
//     before its first hook ran. Here a type is described when an
//     expression reaches it: a field read learns the type of the field, and
//     a name that no read has met yet (a struct literal's type, most often)
//     is searched for from the types already known, breadth first, in the
//     named type's package first, and the search stops where the name is
//     found (DomainCPU is one step from Domain).
//
// Values that are not Go structs of the graph are left to the environment's
// own provider and adapter (base).
type goTypes struct {
	base        types.Provider
	baseAdapter types.Adapter
	// variables are the environment's variable names: a name that starts
	// with one is a field selection, never a type.
	variables []string

	mu sync.RWMutex
	// byGoName maps a Go type name to the struct types of the graph known
	// to carry it, in the order they were met; the package name tells the
	// CEL names apart (two packages ending in the same element share a CEL
	// name: kubevirt's and core/v1's PersistentVolumeClaimVolumeSource).
	byGoName map[string][]reflect.Type
	// reachable holds the struct types known to be reachable from the roots.
	reachable map[reflect.Type]bool
	// frontier holds, per package name, the reachable types whose fields
	// have not been looked at yet; packages lists the package names in the
	// order they were met, so that a search is the same in every process.
	frontier map[string][]reflect.Type
	packages []string
	// expanded counts the types whose fields were looked at.
	expanded int

	// infos holds a *typeInfo per struct type of the graph, made on first
	// use, and a nil one for other struct types met.
	infos sync.Map
}

// typeInfo is what values of one struct type need.
type typeInfo struct {
	t reflect.Type
	// typ is the CEL type of the struct.
	typ *types.Type
	// absent is the one pointer to a zero value that a read through a nil
	// pointer yields. Being a known address, it tells a value read from an
	// absent element (written back as nil) from an empty element that is
	// present (<acpi/>). Nothing ever writes through it.
	absent reflect.Value

	fieldsOnce sync.Once
	// fields holds the exported fields by name, for struct literals.
	fields map[string]reflect.StructField
}

// goTypesOf puts a goTypes for the struct types reachable from roots in front
// of the environment's type provider and adapter, and stores it in *out.
// variables are the names of the environment's variables.
func goTypesOf(out **goTypes, variables []string, roots ...reflect.Type) cel.EnvOption {
	return func(env *cel.Env) (*cel.Env, error) {
		g := &goTypes{
			base:        env.CELTypeProvider(),
			baseAdapter: env.CELTypeAdapter(),
			variables:   variables,
			byGoName:    map[string][]reflect.Type{},
			reachable:   map[reflect.Type]bool{},
			frontier:    map[string][]reflect.Type{},
		}
		for _, r := range roots {
			g.learnLocked(r)
		}
		env, err := cel.CustomTypeAdapter(g)(env)
		if err != nil {
			return nil, err
		}
		*out = g
		return cel.CustomTypeProvider(g)(env)
	}
}

// pkgName is the package part of the CEL name of the types of package path
// pkg: its last element.
func pkgName(pkg string) string {
	return pkg[strings.LastIndexByte(pkg, '/')+1:]
}

// learn records the struct type that t is or holds (through pointers,
// slices, arrays and maps) as reachable. Only the types of fields of
// reachable types are learnt, so they are reachable.
func (g *goTypes) learn(t reflect.Type) {
	if t = structOf(t); t == nil {
		return
	}
	g.mu.RLock()
	known := g.reachable[t]
	g.mu.RUnlock()
	if !known {
		g.mu.Lock()
		g.learnLocked(t)
		g.mu.Unlock()
	}
}

func (g *goTypes) learnLocked(t reflect.Type) {
	if t = structOf(t); t == nil || g.reachable[t] {
		return
	}
	g.reachable[t] = true
	g.byGoName[t.Name()] = append(g.byGoName[t.Name()], t)
	pkg := pkgName(t.PkgPath())
	if _, ok := g.frontier[pkg]; !ok {
		g.packages = append(g.packages, pkg)
	}
	g.frontier[pkg] = append(g.frontier[pkg], t)
}

// structOf is the struct type t is or holds, or nil.
func structOf(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return t
		default:
			return nil
		}
	}
}

// searchLocked learns the types reachable from the known ones, breadth
// first, until found reports true or every reachable type is known. The
// frontier of package pkg goes first: a type is most often reached through
// types of its own package.
func (g *goTypes) searchLocked(pkg string, found func() bool) {
	for !found() {
		var t reflect.Type
		if q := g.frontier[pkg]; len(q) > 0 {
			t, g.frontier[pkg] = q[0], q[1:]
		} else {
			for _, p := range g.packages {
				if q := g.frontier[p]; len(q) > 0 {
					t, g.frontier[p] = q[0], q[1:]
					break
				}
			}
		}
		if t == nil {
			return
		}
		g.expanded++
		for f := range t.Fields() {
			g.learnLocked(f.Type)
		}
	}
}

// known returns the Go types known so far to carry the CEL type name pkg.name.
func (g *goTypes) known(name string) []reflect.Type {
	pkg, typeName, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.knownLocked(pkg, typeName)
}

func (g *goTypes) knownLocked(pkg, typeName string) []reflect.Type {
	ts := g.byGoName[typeName]
	for i, t := range ts {
		if pkgName(t.PkgPath()) != pkg {
			// Types of another package carry the Go name: copy the others.
			out := slices.Clone(ts[:i])
			for _, t := range ts[i+1:] {
				if pkgName(t.PkgPath()) == pkg {
					out = append(out, t)
				}
			}
			return out
		}
	}
	// Most often every type of that Go name is of the package asked for:
	// the slice is returned as it is, and only ever appended to.
	return ts
}

// named returns the Go types of the graph known to carry the CEL type name,
// searching for one when none is known yet.
//
// The checker tries many names that are no types: every prefix of a field
// selection (vmi.Spec.Domain, vmi.Spec) and each of them in the container
// (libvirtxml.vmi.Spec). Those are told without a search: a type name is a
// package name, one dot and an exported Go identifier, and does not start
// with a variable. (Types of packages whose name holds a dot, such as
// gopkg.in/inf.v0, cannot be named: they are no types an expression
// builds.)
func (g *goTypes) named(name string) []reflect.Type {
	pkg, typeName, ok := strings.Cut(name, ".")
	if !ok || strings.Contains(typeName, ".") || !token.IsExported(typeName) || slices.Contains(g.variables, pkg) {
		return nil
	}
	if ts := g.known(name); len(ts) > 0 {
		return ts
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.searchLocked(pkg, func() bool { return len(g.knownLocked(pkg, typeName)) > 0 })
	return g.knownLocked(pkg, typeName)
}

// goType returns the Go type a struct literal of the CEL type name builds:
// the first one met where two share the name (the nearer the roots).
func (g *goTypes) goType(name string) (reflect.Type, bool) {
	ts := g.named(name)
	if len(ts) == 0 {
		return nil, false
	}
	return ts[0], true
}

// info returns what values of struct type t need, when t is a struct type of
// the graph that CEL sees as an object.
func (g *goTypes) info(t reflect.Type) (*typeInfo, bool) {
	if v, ok := g.infos.Load(t); ok {
		ti := v.(*typeInfo)
		return ti, ti != nil
	}
	var ti *typeInfo
	if t.Kind() == reflect.Struct && !isScalarStruct(t) && g.isReachable(t) {
		ti = &typeInfo{t: t, typ: types.NewObjectType(celTypeName(t)), absent: newSentinel(t)}
	}
	// Whoever stores first wins, so every reader sees the same sentinel.
	v, _ := g.infos.LoadOrStore(t, ti)
	ti = v.(*typeInfo)
	return ti, ti != nil
}

// isReachable reports whether the struct type t is reachable from the roots.
func (g *goTypes) isReachable(t reflect.Type) bool {
	g.mu.RLock()
	ok := g.reachable[t]
	g.mu.RUnlock()
	if ok {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.searchLocked(pkgName(t.PkgPath()), func() bool { return g.reachable[t] })
	return g.reachable[t]
}

// fieldsByName returns the exported fields of the type by name, promoted
// ones included.
func (ti *typeInfo) fieldsByName() map[string]reflect.StructField {
	ti.fieldsOnce.Do(func() {
		byName := map[string]reflect.StructField{}
		for _, f := range reflect.VisibleFields(ti.t) {
			if f.IsExported() {
				if sf, ok := ti.t.FieldByName(f.Name); ok {
					byName[f.Name] = sf
				}
			}
		}
		ti.fields = byName
	})
	return ti.fields
}

// newSentinel allocates a pointer to a zero t with an address no other
// allocation has: Go gives every zero-size allocation the same address
// (<readonly/> is a struct{}), so a zero-size t is placed after a byte of a
// struct of its own.
func newSentinel(t reflect.Type) reflect.Value {
	if t.Size() != 0 {
		return reflect.New(t)
	}
	holder := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "Pad", Type: byteType},
		{Name: "V", Type: t},
	}))
	return holder.Elem().Field(1).Addr()
}

// EnumValue implements types.Provider.
func (g *goTypes) EnumValue(name string) ref.Val { return g.base.EnumValue(name) }

// FindIdent implements types.Provider: a struct type name of the graph is a
// type value.
func (g *goTypes) FindIdent(name string) (ref.Val, bool) {
	if len(g.named(name)) > 0 {
		return types.NewObjectType(name), true
	}
	return g.base.FindIdent(name)
}

// FindStructType implements types.Provider.
func (g *goTypes) FindStructType(name string) (*types.Type, bool) {
	if len(g.named(name)) > 0 {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return g.base.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (g *goTypes) FindStructFieldNames(name string) ([]string, bool) {
	ts := g.named(name)
	if len(ts) == 0 {
		return g.base.FindStructFieldNames(name)
	}
	var names []string
	for _, t := range ts {
		for _, f := range reflect.VisibleFields(t) {
			if _, visible := celTypeOf(f.Type); f.IsExported() && visible && !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
	}
	return names, true
}

// FindStructFieldType implements types.Provider: see goTypes for what it
// changes compared with the native provider. The struct type the field
// holds, if any, is learnt.
//
// A field name ending in absentReadSuffix is a carried read (see
// markCarriedReads) of the field named before the suffix: a nil pointer to a
// scalar reads as an absentScalar.
func (g *goTypes) FindStructFieldType(typeName, fieldName string) (*types.FieldType, bool) {
	fieldName, carried := strings.CutSuffix(fieldName, absentReadSuffix)
	candidates := g.known(typeName)
	if len(candidates) == 0 {
		if candidates = g.named(typeName); len(candidates) == 0 {
			return g.base.FindStructFieldType(typeName, fieldName)
		}
	}
	for _, t := range candidates {
		sf, ok := t.FieldByName(fieldName)
		if !ok || !sf.IsExported() {
			continue
		}
		celType, ok := celTypeOf(sf.Type)
		if !ok {
			continue
		}
		g.learn(sf.Type)
		known, index := t, sf.Index
		lookup := func(obj any) (reflect.Value, bool) {
			v := reflect.Indirect(reflect.ValueOf(obj))
			if !v.IsValid() || v.Kind() != reflect.Struct {
				return reflect.Value{}, false
			}
			idx := index
			if v.Type() != known {
				f, ok := v.Type().FieldByName(fieldName)
				if !ok {
					return reflect.Value{}, false
				}
				idx = f.Index
			}
			return readField(v, idx), true
		}
		return &types.FieldType{
			Type: celType,
			IsSet: func(obj any) bool {
				v, ok := lookup(obj)
				return ok && !v.IsZero()
			},
			GetFrom: func(obj any) (any, error) {
				v, ok := lookup(obj)
				if !ok {
					return nil, fmt.Errorf("no such field %q on %T", fieldName, obj)
				}
				if carried && v.Kind() == reflect.Pointer && v.IsNil() {
					return &absentScalar{Val: g.NativeToValue(g.toCEL(v))}, nil
				}
				return g.toCEL(v), nil
			},
		}, true
	}
	return nil, false
}

// NewValue implements types.Provider: it builds the Go struct itself so that
// every field is converted by its Go type, and returns it as a *literal that
// remembers which fields the literal initialised, for the merge.
// GuestDefinition programs build their literals with structConstructor
// instead, which comes to the same without the map of fields.
func (g *goTypes) NewValue(typeName string, fields map[string]ref.Val) ref.Val {
	t, ok := g.goType(typeName)
	if !ok {
		return g.base.NewValue(typeName, fields)
	}
	ti, _ := g.info(t)
	lit := g.newLiteral(t, ti.typ, len(fields))
	byName := ti.fieldsByName()
	for name, val := range fields {
		sf, ok := byName[name]
		if !ok {
			return types.NewErr("no such field %q in %s", name, typeName)
		}
		if err := lit.set(g, sf, val); err != nil {
			return types.NewErr("field %s.%s: %v", typeName, name, err)
		}
	}
	return lit
}

// newLiteral starts a literal of struct type t with room for n fields.
func (g *goTypes) newLiteral(t reflect.Type, typ *types.Type, n int) *literal {
	ptr := reflect.New(t)
	lit := &literal{object: object{g: g, val: ptr.Interface(), rv: ptr, typ: typ}}
	if n <= len(lit.buf) {
		lit.fields = lit.buf[:0]
	} else {
		lit.fields = make([]literalField, 0, n)
	}
	return lit
}

// set converts val to the Go type of field sf, writes it into the literal's
// struct and records the field as initialised.
func (l *literal) set(g *goTypes, sf reflect.StructField, val ref.Val) error {
	native, err := g.toNative(val, sf.Type)
	if err != nil {
		return err
	}
	writeField(l.rv.Elem(), sf.Index).Set(native)
	l.fields = append(l.fields, literalField{index: sf.Index, val: val})
	return nil
}

// celTypeOf is the CEL type of a Go type, following the native provider's
// mapping except for the types goTypes reads differently.
func celTypeOf(t reflect.Type) (*types.Type, bool) {
	switch t {
	case quantityType:
		return types.StringType, true
	case metaTimeType, microTimeType, timeType:
		return types.TimestampType, true
	case durationType:
		return types.DurationType, true
	}
	switch t.Kind() {
	case reflect.Bool:
		return types.BoolType, true
	case reflect.Float32, reflect.Float64:
		return types.DoubleType, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return types.IntType, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return types.UintType, true
	case reflect.String:
		return types.StringType, true
	case reflect.Slice, reflect.Array:
		if t.Elem() == byteType {
			return types.BytesType, true
		}
		elem, ok := celTypeOf(t.Elem())
		if !ok {
			return nil, false
		}
		return types.NewListType(elem), true
	case reflect.Map:
		key, ok := celTypeOf(t.Key())
		if !ok {
			return nil, false
		}
		elem, ok := celTypeOf(t.Elem())
		if !ok {
			return nil, false
		}
		return types.NewMapType(key, elem), true
	case reflect.Struct:
		return types.NewObjectType(celTypeName(t)), true
	case reflect.Pointer:
		return celTypeOf(t.Elem())
	}
	// Interfaces, channels, functions: not visible from CEL.
	return nil, false
}
