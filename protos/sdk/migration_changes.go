// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// MigrationChanges builds a PreMigrationSource response: flag bits to set
// and clear, and per parameter a new value or a removal. Parameters not
// touched keep their current value. The setters chain; the first misuse (an
// unknown name, a value of the wrong type) is kept and returned by Err and
// Response, so a handler can build the changes in one expression.
//
// A later call on the same bit or parameter replaces an earlier one: SetFlags
// after ClearFlags of the same bit sets it, so the response never holds a bit
// in both sets.
type MigrationChanges struct {
	set, clear MigrationFlags
	params     *hooksv1alpha1.MigrationParams
	err        error
}

// NewMigrationChanges returns changes that change nothing.
func NewMigrationChanges() *MigrationChanges {
	return &MigrationChanges{params: &hooksv1alpha1.MigrationParams{}}
}

// SetFlags adds the bits of f.
func (c *MigrationChanges) SetFlags(f MigrationFlags) *MigrationChanges {
	c.set |= f
	c.clear &^= f
	return c
}

// ClearFlags removes the bits of f.
func (c *MigrationChanges) ClearFlags(f MigrationFlags) *MigrationChanges {
	c.clear |= f
	c.set &^= f
	return c
}

// SetString sets a string parameter by libvirt name.
func (c *MigrationChanges) SetString(name, value string) *MigrationChanges {
	return c.setWrapper(name, ParamKindString, &hooksv1alpha1.StringParam{Value: new(value)})
}

// SetUint64 sets an unsigned 64-bit parameter by libvirt name.
func (c *MigrationChanges) SetUint64(name string, value uint64) *MigrationChanges {
	return c.setWrapper(name, ParamKindUint64, &hooksv1alpha1.Uint64Param{Value: new(value)})
}

// SetInt sets a signed (C int) parameter by libvirt name.
func (c *MigrationChanges) SetInt(name string, value int32) *MigrationChanges {
	return c.setWrapper(name, ParamKindInt, &hooksv1alpha1.IntParam{Value: new(value)})
}

// SetList replaces a string list parameter by libvirt name. An empty list
// removes the parameter, as Remove does.
func (c *MigrationChanges) SetList(name string, values ...string) *MigrationChanges {
	return c.setWrapper(name, ParamKindStringList, &hooksv1alpha1.StringListParam{Values: append([]string(nil), values...)})
}

// Remove removes a parameter by libvirt name (an empty wrapper or an empty
// list on the wire).
func (c *MigrationChanges) Remove(name string) *MigrationChanges {
	fd, kind := paramField(name)
	if fd == nil {
		return c.fail(paramKindError(name, kind, ParamKindUnknown))
	}
	m := c.paramsMsg()
	m.ProtoReflect().Set(fd, m.ProtoReflect().NewField(fd))
	return c
}

// Keep drops any change recorded for a parameter, so that it keeps its
// current value.
func (c *MigrationChanges) Keep(name string) *MigrationChanges {
	fd, kind := paramField(name)
	if fd == nil {
		return c.fail(paramKindError(name, kind, ParamKindUnknown))
	}
	c.paramsMsg().ProtoReflect().Clear(fd)
	return c
}

// SetParallelConnections sets parallel.connections; it takes effect with
// MigrateParallel.
func (c *MigrationChanges) SetParallelConnections(n int32) *MigrationChanges {
	return c.SetInt(ParamParallelConnections, n)
}

// SetCompression sets the compression methods (for example "xbzrle",
// "mt"); they take effect with MigrateCompressed.
func (c *MigrationChanges) SetCompression(methods ...string) *MigrationChanges {
	return c.SetList(ParamCompression, methods...)
}

// SetBandwidth sets bandwidth in MiB/s.
func (c *MigrationChanges) SetBandwidth(mibPerSecond uint64) *MigrationChanges {
	return c.SetUint64(ParamBandwidth, mibPerSecond)
}

// SetMigrateURI sets migrate_uri.
func (c *MigrationChanges) SetMigrateURI(uri string) *MigrationChanges {
	return c.SetString(ParamMigrateURI, uri)
}

// Err returns the first misuse of the builder.
func (c *MigrationChanges) Err() error {
	if c == nil {
		return nil
	}
	return c.err
}

// Response returns the changes as a PreMigrationSourceResponse. Nil changes
// give an empty response, which changes nothing.
func (c *MigrationChanges) Response() (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	if c == nil {
		return &hooksv1alpha1.PreMigrationSourceResponse{}, nil
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.set&c.clear != 0 {
		// Unreachable through the setters; kept as the contract's rule.
		return nil, errors.New("a flag bit is both set and cleared")
	}
	resp := &hooksv1alpha1.PreMigrationSourceResponse{SetFlags: uint64(c.set), ClearFlags: uint64(c.clear)}
	if c.params != nil && hasAnyField(c.params) {
		resp.Params = proto.Clone(c.params).(*hooksv1alpha1.MigrationParams)
	}
	return resp, nil
}

// Apply returns the flags and parameters that result from applying the
// changes to a request's flags and parameters, with the semantics the
// launcher uses: absent keeps, a value overrides, an empty wrapper or an
// empty list removes. It lets a plugin test its changes without a launcher.
func (c *MigrationChanges) Apply(flags MigrationFlags, params MigrationParams) (MigrationFlags, map[string]any, error) {
	resp, err := c.Response()
	if err != nil {
		return 0, nil, err
	}
	return ApplyResponse(flags, params, resp)
}

// ApplyResponse applies a PreMigrationSourceResponse to flags and
// parameters; see MigrationChanges.Apply and ApplyResponseProto.
func ApplyResponse(flags MigrationFlags, params MigrationParams, resp *hooksv1alpha1.PreMigrationSourceResponse) (MigrationFlags, map[string]any, error) {
	flags, out, err := ApplyResponseProto(flags, params.Proto(), resp)
	if err != nil {
		return 0, nil, err
	}
	return flags, hooksv1alpha1.ParamsToMap(out), nil
}

// ApplyResponseProto is the change rule of PreMigrationSource, the one the
// launcher applies after every hook: it returns the flags and parameters
// after resp's changes, leaving params and resp untouched.
//   - set_flags bits are added and clear_flags bits removed; a bit in both
//     is an error;
//   - per parameter, an absent wrapper keeps the current value, a scalar
//     wrapper with a value or a non-empty list overrides it, and a scalar
//     wrapper without a value or an empty list removes it.
//
// A nil or empty response changes nothing. The result is a copy as
// CopyParams makes it and shares no wrapper with params or resp.
func ApplyResponseProto(flags MigrationFlags, params *hooksv1alpha1.MigrationParams, resp *hooksv1alpha1.PreMigrationSourceResponse) (MigrationFlags, *hooksv1alpha1.MigrationParams, error) {
	out := CopyParams(params)
	if resp == nil {
		return flags, out, nil
	}
	if both := resp.GetSetFlags() & resp.GetClearFlags(); both != 0 {
		return 0, nil, fmt.Errorf("flag bits %s (%#x) are in both set_flags and clear_flags", MigrationFlags(both), both)
	}
	flags = flags.With(MigrationFlags(resp.GetSetFlags())).Without(MigrationFlags(resp.GetClearFlags()))
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

// CopyParams copies params without the wrappers that hold no value, so that
// a present wrapper always means a set parameter; nil gives an empty set.
func CopyParams(params *hooksv1alpha1.MigrationParams) *hooksv1alpha1.MigrationParams {
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

// removes reports whether a present wrapper asks to remove its parameter:
// a scalar without a value or an empty list.
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

func (c *MigrationChanges) setWrapper(name string, want ParamKind, w proto.Message) *MigrationChanges {
	fd, kind := paramField(name)
	if kind != want {
		return c.fail(paramKindError(name, kind, want))
	}
	c.paramsMsg().ProtoReflect().Set(fd, protoreflect.ValueOfMessage(w.ProtoReflect()))
	return c
}

func (c *MigrationChanges) fail(err error) *MigrationChanges {
	if c.err == nil {
		c.err = err
	}
	return c
}

func (c *MigrationChanges) paramsMsg() *hooksv1alpha1.MigrationParams {
	if c.params == nil {
		c.params = &hooksv1alpha1.MigrationParams{}
	}
	return c.params
}

func hasAnyField(m proto.Message) bool {
	found := false
	m.ProtoReflect().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		found = true
		return false
	})
	return found
}
