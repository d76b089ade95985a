// SPDX-License-Identifier: Apache-2.0

package hooksv1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// libvirt's names of the migration parameters MigrationParams carries (the
// strings behind VIR_MIGRATE_PARAM_*). With libvirtParamNames below they are
// the project's one table of these parameters: the SDK's names, the
// launcher's conversion to the libvirt binding and its tests derive from it.
const (
	ParamMigrateURI               = "migrate_uri"
	ParamDestinationName          = "destination_name"
	ParamDestinationXML           = "destination_xml"
	ParamPersistentXML            = "persistent_xml"
	ParamGraphicsURI              = "graphics_uri"
	ParamListenAddress            = "listen_address"
	ParamDisksURI                 = "disks_uri"
	ParamTLSDestination           = "tls.destination"
	ParamBandwidth                = "bandwidth"
	ParamBandwidthPostcopy        = "bandwidth.postcopy"
	ParamBandwidthAvailSwitchover = "bandwidth.avail.switchover"
	ParamCompressionXBZRLECache   = "compression.xbzrle.cache"
	ParamDisksPort                = "disks_port"
	ParamCompressionMTLevel       = "compression.mt.level"
	ParamCompressionMTThreads     = "compression.mt.threads"
	ParamCompressionMTDThreads    = "compression.mt.dthreads"
	ParamCompressionZlibLevel     = "compression.zlib.level"
	ParamCompressionZstdLevel     = "compression.zstd.level"
	ParamAutoConvergeInitial      = "auto_converge.initial"
	ParamAutoConvergeIncrement    = "auto_converge.increment"
	ParamParallelConnections      = "parallel.connections"
	ParamMigrateDisks             = "migrate_disks"
	ParamMigrateDisksDetectZeroes = "migrate_disks_detect_zeroes"
	ParamMigrateDisksTargetZero   = "migrate_disks_target_zero"
	ParamCompression              = "compression"
)

// libvirtParamNames maps each MigrationParams field to the name libvirt
// gives the parameter.
var libvirtParamNames = map[protoreflect.Name]string{
	"migrate_uri":                 ParamMigrateURI,
	"destination_name":            ParamDestinationName,
	"destination_xml":             ParamDestinationXML,
	"persistent_xml":              ParamPersistentXML,
	"graphics_uri":                ParamGraphicsURI,
	"listen_address":              ParamListenAddress,
	"disks_uri":                   ParamDisksURI,
	"tls_destination":             ParamTLSDestination,
	"bandwidth":                   ParamBandwidth,
	"bandwidth_postcopy":          ParamBandwidthPostcopy,
	"bandwidth_avail_switchover":  ParamBandwidthAvailSwitchover,
	"compression_xbzrle_cache":    ParamCompressionXBZRLECache,
	"disks_port":                  ParamDisksPort,
	"compression_mt_level":        ParamCompressionMTLevel,
	"compression_mt_threads":      ParamCompressionMTThreads,
	"compression_mt_dthreads":     ParamCompressionMTDThreads,
	"compression_zlib_level":      ParamCompressionZlibLevel,
	"compression_zstd_level":      ParamCompressionZstdLevel,
	"auto_converge_initial":       ParamAutoConvergeInitial,
	"auto_converge_increment":     ParamAutoConvergeIncrement,
	"parallel_connections":        ParamParallelConnections,
	"migrate_disks":               ParamMigrateDisks,
	"migrate_disks_detect_zeroes": ParamMigrateDisksDetectZeroes,
	"migrate_disks_target_zero":   ParamMigrateDisksTargetZero,
	"compression":                 ParamCompression,
}

// LibvirtParamNames returns libvirt's name of every migration parameter the
// contract carries, one per MigrationParams field, sorted.
func LibvirtParamNames() []string {
	return slices.Sorted(maps.Values(libvirtParamNames))
}

// LibvirtParamName returns libvirt's name for a MigrationParams field, for
// example "parallel.connections" for parallel_connections.
func LibvirtParamName(fd protoreflect.FieldDescriptor) string {
	return libvirtParamNames[fd.Name()]
}

// ParamsToMap renders the parameters that are set as a map keyed by
// libvirt's parameter names: strings, uint64, int32 or []string values.
// Wrappers without a value (removals, in a response) are left out.
func ParamsToMap(p *MigrationParams) map[string]any {
	out := map[string]any{}
	if p == nil {
		return out
	}
	p.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if val, ok := wrapperValue(v.Message()); ok {
			out[LibvirtParamName(fd)] = val
		}
		return true
	})
	return out
}

// ParamsFromMap builds MigrationParams from a map keyed by libvirt's
// parameter names, as decoded from JSON: numbers may be json.Number (exact)
// or float64 (exact up to 2^53), or Go integers. It fails
// on an unknown name or a value of the wrong type, naming the parameter.
func ParamsFromMap(m map[string]any) (*MigrationParams, error) {
	p := &MigrationParams{}
	fields := p.ProtoReflect().Descriptor().Fields()
	byName := make(map[string]protoreflect.FieldDescriptor, fields.Len())
	for i := 0; i < fields.Len(); i++ {
		byName[LibvirtParamName(fields.Get(i))] = fields.Get(i)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fd, ok := byName[k]
		if !ok {
			return nil, fmt.Errorf("unknown migration parameter %q", k)
		}
		w, err := newWrapper(p, fd, m[k])
		if err != nil {
			return nil, fmt.Errorf("migration parameter %q: %w", k, err)
		}
		p.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(w))
	}
	return p, nil
}

// wrapperValue returns the Go value a wrapper message holds, and false for
// a scalar wrapper without a value.
func wrapperValue(m protoreflect.Message) (any, bool) {
	switch w := m.Interface().(type) {
	case *StringParam:
		return w.GetValue(), w.Value != nil
	case *Uint64Param:
		return w.GetValue(), w.Value != nil
	case *IntParam:
		return w.GetValue(), w.Value != nil
	case *StringListParam:
		return append([]string(nil), w.GetValues()...), true
	}
	return nil, false
}

func newWrapper(p *MigrationParams, fd protoreflect.FieldDescriptor, v any) (protoreflect.Message, error) {
	m := p.ProtoReflect().NewField(fd).Message()
	switch w := m.Interface().(type) {
	case *StringParam:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		w.Value = &s
	case *Uint64Param:
		n, err := toInteger(v, 0, math.MaxUint64)
		if err != nil {
			return nil, err
		}
		u := n.Uint64()
		w.Value = &u
	case *IntParam:
		n, err := toInteger(v, math.MinInt32, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		i := int32(n.Int64())
		w.Value = &i
	case *StringListParam:
		list, ok := v.([]any)
		if s, isStrings := v.([]string); isStrings {
			w.Values = append([]string(nil), s...)
			return m, nil
		}
		if !ok {
			return nil, fmt.Errorf("want a list of strings, got %T", v)
		}
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d: want a string, got %T", i, e)
			}
			w.Values = append(w.Values, s)
		}
	}
	return m, nil
}

// toInteger reads an integer exactly: from Go integers, from json.Number,
// or from a float64 that holds an integer JSON decoding could represent
// exactly (up to 2^53); larger floats may already have lost digits.
func toInteger(v any, min int64, max uint64) (*big.Int, error) {
	n := new(big.Int)
	switch x := v.(type) {
	case int:
		n.SetInt64(int64(x))
	case int32:
		n.SetInt64(int64(x))
	case int64:
		n.SetInt64(x)
	case uint32:
		n.SetUint64(uint64(x))
	case uint64:
		n.SetUint64(x)
	case json.Number:
		if _, ok := n.SetString(x.String(), 10); !ok {
			return nil, fmt.Errorf("want an integer, got %s", x)
		}
	case float64:
		if x != math.Trunc(x) {
			return nil, fmt.Errorf("want an integer, got %v", x)
		}
		if math.Abs(x) > 1<<53 {
			return nil, fmt.Errorf("%v is too large to have been read exactly; decode the number as json.Number", x)
		}
		n.SetInt64(int64(x))
	default:
		return nil, fmt.Errorf("want a number, got %T", v)
	}
	if n.Cmp(big.NewInt(min)) < 0 || n.Cmp(new(big.Int).SetUint64(max)) > 0 {
		return nil, fmt.Errorf("%s is out of range [%d, %d]", n, min, max)
	}
	return n, nil
}
