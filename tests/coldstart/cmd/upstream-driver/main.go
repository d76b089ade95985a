// SPDX-License-Identifier: Apache-2.0

// Command upstream-driver is the cold-start benchmark's process shaped as
// KubeVirt's own launcher evaluates a CEL domain hook
// (pkg/virt-launcher/virtwrap/plugins/cel in kubevirt/kubevirt, written
// again here from its description, not copied), so that tests/coldstart
// compares the two in processes of the same shape, on the same inputs,
// linked with the same cel-go, libvirtxml and KubeVirt API versions:
//
//   - one environment, built on the first hook: cel-go's native types
//     (ext.NativeTypes) for *libvirtxml.Domain and
//     *v1.VirtualMachineInstance, container libvirtxml, then extended with
//     a type provider whose struct literals are sparse (the fields they
//     name) and the variables vmi and domainSpec;
//   - per plugin condition: compile it, check that it is a bool, plan it
//     with a cost limit of 10,000,000 and evaluate it with a map of the
//     variables;
//   - per hook: compile the expression (parse and check), plan it with a
//     cost limit of 10,000,000, evaluate it with a map of the variables,
//     copy the domain through XML (marshal, unmarshal) and merge the
//     literal's fields into the copy.
//
// Usage, with the inputs of framework-driver:
//
//	upstream-driver hook DOMAIN.xml VMI.yaml PLUGINS.json   decode the plugins, build the environment, run each CEL hook whose plugin's condition holds
//	upstream-driver env DOMAIN.xml VMI.yaml PLUGINS.json    build the environment alone
//	upstream-driver bare DOMAIN.xml VMI.yaml PLUGINS.json   a bare cel-go environment: compile and evaluate x + 1 > 2
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/coldstart/internal/probe"
)

// costLimit is the limit KubeVirt's evaluator plans its programs with.
const costLimit = 10_000_000

func main() {
	name, in := probe.Args("hook|env|bare")
	switch name {
	case "hook":
		probe.Run("hook", func() error { return hooks(in) })
	case "env":
		probe.Run("env", func() error { _, err := newEvaluator(); return err })
	case "bare":
		probe.Run("bare", bare)
	default:
		probe.Unknown(name)
	}
}

// hooks runs the CEL hooks of the handed plugins on the domain, in order.
func hooks(in probe.Inputs) error {
	var list pluginv1alpha1.PluginList
	if err := json.Unmarshal(in.Plugins, &list); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	ev, err := newEvaluator()
	if err != nil {
		return err
	}
	domain := in.Domain
	for _, p := range list.Items {
		if p.Spec.Condition != "" {
			holds, err := ev.holds(p.Spec.Condition, in.VMI, domain)
			if err != nil {
				return fmt.Errorf("plugin %s: %w", p.Name, err)
			}
			if !holds {
				continue
			}
		}
		for _, h := range p.Spec.LauncherHooks {
			if h.CEL == nil {
				continue
			}
			if domain, err = ev.mutate(h.CEL.Expression, in.VMI, domain); err != nil {
				return fmt.Errorf("plugin %s: %w", p.Name, err)
			}
		}
	}
	if domain.CPU == nil || domain.CPU.Mode == "" {
		return errors.New("the hook did not set the CPU mode")
	}
	return nil
}

type evaluator struct{ env *cel.Env }

func newEvaluator() (*evaluator, error) {
	base, err := cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[*libvirtxml.Domain](), reflect.TypeFor[*kubevirtv1.VirtualMachineInstance]()),
		cel.Container("libvirtxml"),
	)
	if err != nil {
		return nil, err
	}
	env, err := base.Extend(
		cel.CustomTypeProvider(&sparseLiterals{Provider: base.CELTypeProvider()}),
		cel.Variable("vmi", cel.ObjectType("v1.VirtualMachineInstance")),
		cel.Variable("domainSpec", cel.ObjectType("libvirtxml.Domain")),
	)
	if err != nil {
		return nil, err
	}
	return &evaluator{env: env}, nil
}

// holds compiles, plans and evaluates the condition expr.
func (e *evaluator) holds(expr string, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (bool, error) {
	checked, iss := e.env.Compile(expr)
	if iss.Err() != nil {
		return false, iss.Err()
	}
	if checked.OutputType() != cel.BoolType {
		return false, fmt.Errorf("condition of type %s, not bool", checked.OutputType())
	}
	prg, err := e.env.Program(checked, cel.CostLimit(costLimit))
	if err != nil {
		return false, err
	}
	out, _, err := prg.Eval(map[string]any{"vmi": vmi, "domainSpec": domain})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("condition gave %v, not a bool", out)
	}
	return b, nil
}

// mutate compiles, plans and evaluates expr, and merges its result into an
// XML copy of domain.
func (e *evaluator) mutate(expr string, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	checked, iss := e.env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	prg, err := e.env.Program(checked, cel.CostLimit(costLimit))
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(map[string]any{"vmi": vmi, "domainSpec": domain})
	if err != nil {
		return nil, err
	}
	lit, ok := out.(*sparse)
	if !ok {
		return nil, fmt.Errorf("the expression returned %s, not a Domain literal", out.Type().TypeName())
	}
	text, err := domain.Marshal()
	if err != nil {
		return nil, err
	}
	copied := &libvirtxml.Domain{}
	if err := copied.Unmarshal(text); err != nil {
		return nil, err
	}
	if err := lit.mergeInto(reflect.ValueOf(copied).Elem()); err != nil {
		return nil, err
	}
	return copied, nil
}

// sparseLiterals builds struct literals as the fields they name; everything
// else is the native types' provider.
type sparseLiterals struct{ types.Provider }

func (p *sparseLiterals) NewValue(typeName string, fields map[string]ref.Val) ref.Val {
	return &sparse{typ: types.NewObjectType(typeName), fields: fields}
}

func (p *sparseLiterals) FindStructFieldType(typeName, fieldName string) (*types.FieldType, bool) {
	ft, ok := p.Provider.FindStructFieldType(typeName, fieldName)
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: ft.Type,
		IsSet: func(target any) bool {
			if s, ok := target.(*sparse); ok {
				_, set := s.fields[fieldName]
				return set
			}
			return ft.IsSet(target)
		},
		GetFrom: func(target any) (any, error) {
			if s, ok := target.(*sparse); ok {
				v, set := s.fields[fieldName]
				if !set {
					return nil, fmt.Errorf("field %s is not set", fieldName)
				}
				return v, nil
			}
			return ft.GetFrom(target)
		},
	}, true
}

// sparse is a struct literal: its type and the fields it names.
type sparse struct {
	typ    *types.Type
	fields map[string]ref.Val
}

func (s *sparse) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("a %s literal has no Go value of its own", s.typ)
}

func (s *sparse) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t == types.TypeType:
		return s.typ
	case t.TypeName() == s.typ.TypeName():
		return s
	}
	return types.NewErr("no conversion from %s to %s", s.typ, t.TypeName())
}

func (s *sparse) Equal(ref.Val) ref.Val { return types.NewErr("%s literals are not compared", s.typ) }
func (s *sparse) Type() ref.Type        { return s.typ }
func (s *sparse) Value() any            { return s }

// mergeInto writes the literal's fields into dst, a struct of its type:
// nested literals merge into the element there (a new one when it is nil),
// lists replace the field, other values are converted to the field's type.
func (s *sparse) mergeInto(dst reflect.Value) error {
	for name, v := range s.fields {
		f := dst.FieldByName(name)
		if !f.IsValid() || !f.CanSet() {
			return fmt.Errorf("%s has no field %s", s.typ, name)
		}
		if err := assign(f, v); err != nil {
			return fmt.Errorf("%s.%s: %w", s.typ, name, err)
		}
	}
	return nil
}

func assign(f reflect.Value, v ref.Val) error {
	t := f.Type()
	if lit, ok := v.(*sparse); ok {
		if t.Kind() == reflect.Pointer {
			if f.IsNil() {
				f.Set(reflect.New(t.Elem()))
			}
			f = f.Elem()
		}
		return lit.mergeInto(f)
	}
	elemType := t
	if t.Kind() == reflect.Pointer {
		elemType = t.Elem()
	}
	var native reflect.Value
	if elemType.Kind() == reflect.Slice {
		list, ok := v.(traits.Lister)
		if !ok {
			return fmt.Errorf("want a list, got %s", v.Type().TypeName())
		}
		n := int(list.Size().(types.Int))
		native = reflect.MakeSlice(elemType, n, n)
		for i := range n {
			if err := assign(native.Index(i), list.Get(types.Int(i))); err != nil {
				return err
			}
		}
	} else {
		x, err := v.ConvertToNative(elemType)
		if err != nil {
			return err
		}
		native = reflect.ValueOf(x)
	}
	if t.Kind() == reflect.Pointer {
		p := reflect.New(elemType)
		p.Elem().Set(native)
		native = p
	}
	f.Set(native)
	return nil
}

// bare compiles and evaluates x + 1 > 2 in a cel-go environment with one
// variable: what any use of cel-go costs a process.
func bare() error {
	env, err := cel.NewEnv(cel.Variable("x", cel.IntType))
	if err != nil {
		return err
	}
	checked, iss := env.Compile("x + 1 > 2")
	if iss.Err() != nil {
		return iss.Err()
	}
	prg, err := env.Program(checked)
	if err != nil {
		return err
	}
	out, _, err := prg.Eval(map[string]any{"x": 2})
	if err != nil {
		return err
	}
	if out != types.True {
		return fmt.Errorf("x + 1 > 2 with x = 2 gave %v", out)
	}
	return nil
}
