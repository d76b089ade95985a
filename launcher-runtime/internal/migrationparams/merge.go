package migrationparams

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Apply returns the flags and parameters after one hook's changes, leaving
// params and resp untouched:
//   - set_flags bits are added and clear_flags bits removed; a bit in both
//     is an error;
//   - per parameter, an absent wrapper keeps the current value, a scalar
//     wrapper with a value or a non-empty list overrides it, and a scalar
//     wrapper without a value or an empty list removes it.
//
// A nil or empty response changes nothing.
func Apply(flags uint64, params *hooksv1alpha1.MigrationParams, resp *hooksv1alpha1.PreMigrationSourceResponse) (uint64, *hooksv1alpha1.MigrationParams, error) {
	out := Clone(params)
	if resp == nil {
		return flags, out, nil
	}
	if both := resp.GetSetFlags() & resp.GetClearFlags(); both != 0 {
		return 0, nil, fmt.Errorf("flag bits %#x are in both set_flags and clear_flags", both)
	}
	flags = (flags | resp.GetSetFlags()) &^ resp.GetClearFlags()
	if resp.GetParams() == nil {
		return flags, out, nil
	}
	dst := out.ProtoReflect()
	resp.GetParams().ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if removes(v.Message()) {
			dst.Clear(fd)
		} else {
			dst.Set(fd, protoreflect.ValueOfMessage(proto.Clone(v.Message().Interface()).ProtoReflect()))
		}
		return true
	})
	return flags, out, nil
}

// Clone copies params without the wrappers that hold no value, so that a
// present wrapper always means a set parameter; nil gives an empty set.
func Clone(params *hooksv1alpha1.MigrationParams) *hooksv1alpha1.MigrationParams {
	if params == nil {
		return &hooksv1alpha1.MigrationParams{}
	}
	out := proto.Clone(params).(*hooksv1alpha1.MigrationParams)
	m := out.ProtoReflect()
	var empty []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if removes(v.Message()) {
			empty = append(empty, fd)
		}
		return true
	})
	for _, fd := range empty {
		m.Clear(fd)
	}
	return out
}

// removes reports whether a present wrapper asks to remove its parameter.
func removes(m protoreflect.Message) bool {
	switch w := m.Interface().(type) {
	case *hooksv1alpha1.StringParam:
		return w.Value == nil
	case *hooksv1alpha1.Uint64Param:
		return w.Value == nil
	case *hooksv1alpha1.IntParam:
		return w.Value == nil
	case *hooksv1alpha1.StringListParam:
		return len(w.Values) == 0
	}
	return false
}
