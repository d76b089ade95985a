// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// libvirt's migration parameter names (the strings behind
// VIR_MIGRATE_PARAM_*), one per MigrationParams field.
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

// ParamKind is the type of a migration parameter.
type ParamKind int

const (
	ParamKindUnknown ParamKind = iota
	ParamKindString
	ParamKindUint64
	ParamKindInt
	ParamKindStringList
)

func (k ParamKind) String() string {
	switch k {
	case ParamKindString:
		return "string"
	case ParamKindUint64:
		return "uint64"
	case ParamKindInt:
		return "int"
	case ParamKindStringList:
		return "string list"
	}
	return "unknown"
}

// paramField finds the MigrationParams field for a libvirt name.
func paramField(name string) (protoreflect.FieldDescriptor, ParamKind) {
	fields := (&hooksv1alpha1.MigrationParams{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if hooksv1alpha1.LibvirtParamName(fd) != name {
			continue
		}
		switch fd.Message().FullName() {
		case (&hooksv1alpha1.StringParam{}).ProtoReflect().Descriptor().FullName():
			return fd, ParamKindString
		case (&hooksv1alpha1.Uint64Param{}).ProtoReflect().Descriptor().FullName():
			return fd, ParamKindUint64
		case (&hooksv1alpha1.IntParam{}).ProtoReflect().Descriptor().FullName():
			return fd, ParamKindInt
		case (&hooksv1alpha1.StringListParam{}).ProtoReflect().Descriptor().FullName():
			return fd, ParamKindStringList
		}
	}
	return nil, ParamKindUnknown
}

// KindOfParam returns the type of a parameter by libvirt name, or
// ParamKindUnknown.
func KindOfParam(name string) ParamKind {
	_, k := paramField(name)
	return k
}

// ParamNames returns every libvirt parameter name the contract models,
// sorted.
func ParamNames() []string {
	fields := (&hooksv1alpha1.MigrationParams{}).ProtoReflect().Descriptor().Fields()
	out := make([]string, 0, fields.Len())
	for i := 0; i < fields.Len(); i++ {
		out = append(out, hooksv1alpha1.LibvirtParamName(fields.Get(i)))
	}
	sort.Strings(out)
	return out
}

// MigrationParams is a read-only view of the migration parameters of a
// request, addressed by libvirt name. The zero value has no parameters.
type MigrationParams struct {
	p *hooksv1alpha1.MigrationParams
}

// NewMigrationParams wraps the parameters of a request.
func NewMigrationParams(p *hooksv1alpha1.MigrationParams) MigrationParams {
	return MigrationParams{p: p}
}

// Proto returns the parameters as received (may be nil).
func (m MigrationParams) Proto() *hooksv1alpha1.MigrationParams { return m.p }

// Map returns the parameters that are set, keyed by libvirt name.
func (m MigrationParams) Map() map[string]any { return hooksv1alpha1.ParamsToMap(m.p) }

// Has reports whether the parameter is set.
func (m MigrationParams) Has(name string) bool {
	_, ok := m.Map()[name]
	return ok
}

// String returns a string parameter and whether it is set.
func (m MigrationParams) String(name string) (string, bool) {
	v, ok := m.Map()[name].(string)
	return v, ok
}

// Uint64 returns an unsigned 64-bit parameter and whether it is set.
func (m MigrationParams) Uint64(name string) (uint64, bool) {
	v, ok := m.Map()[name].(uint64)
	return v, ok
}

// Int returns a signed (C int) parameter and whether it is set.
func (m MigrationParams) Int(name string) (int32, bool) {
	v, ok := m.Map()[name].(int32)
	return v, ok
}

// List returns a string list parameter and whether it is set.
func (m MigrationParams) List(name string) ([]string, bool) {
	v, ok := m.Map()[name].([]string)
	return v, ok
}

// ParallelConnections returns parallel.connections.
func (m MigrationParams) ParallelConnections() (int32, bool) {
	return m.Int(ParamParallelConnections)
}

// Compression returns the compression methods.
func (m MigrationParams) Compression() ([]string, bool) { return m.List(ParamCompression) }

// Bandwidth returns bandwidth (MiB/s).
func (m MigrationParams) Bandwidth() (uint64, bool) { return m.Uint64(ParamBandwidth) }

// MigrateURI returns migrate_uri.
func (m MigrationParams) MigrateURI() (string, bool) { return m.String(ParamMigrateURI) }

func paramKindError(name string, got, want ParamKind) error {
	if got == ParamKindUnknown {
		return fmt.Errorf("unknown migration parameter %q", name)
	}
	return fmt.Errorf("migration parameter %q is a %s, not a %s", name, got, want)
}
