// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// libvirt's migration parameter names, one per MigrationParams field: the
// names hooksv1alpha1 defines, under the SDK's names.
const (
	ParamMigrateURI               = hooksv1alpha1.ParamMigrateURI
	ParamDestinationName          = hooksv1alpha1.ParamDestinationName
	ParamDestinationXML           = hooksv1alpha1.ParamDestinationXML
	ParamPersistentXML            = hooksv1alpha1.ParamPersistentXML
	ParamGraphicsURI              = hooksv1alpha1.ParamGraphicsURI
	ParamListenAddress            = hooksv1alpha1.ParamListenAddress
	ParamDisksURI                 = hooksv1alpha1.ParamDisksURI
	ParamTLSDestination           = hooksv1alpha1.ParamTLSDestination
	ParamBandwidth                = hooksv1alpha1.ParamBandwidth
	ParamBandwidthPostcopy        = hooksv1alpha1.ParamBandwidthPostcopy
	ParamBandwidthAvailSwitchover = hooksv1alpha1.ParamBandwidthAvailSwitchover
	ParamCompressionXBZRLECache   = hooksv1alpha1.ParamCompressionXBZRLECache
	ParamDisksPort                = hooksv1alpha1.ParamDisksPort
	ParamCompressionMTLevel       = hooksv1alpha1.ParamCompressionMTLevel
	ParamCompressionMTThreads     = hooksv1alpha1.ParamCompressionMTThreads
	ParamCompressionMTDThreads    = hooksv1alpha1.ParamCompressionMTDThreads
	ParamCompressionZlibLevel     = hooksv1alpha1.ParamCompressionZlibLevel
	ParamCompressionZstdLevel     = hooksv1alpha1.ParamCompressionZstdLevel
	ParamAutoConvergeInitial      = hooksv1alpha1.ParamAutoConvergeInitial
	ParamAutoConvergeIncrement    = hooksv1alpha1.ParamAutoConvergeIncrement
	ParamParallelConnections      = hooksv1alpha1.ParamParallelConnections
	ParamMigrateDisks             = hooksv1alpha1.ParamMigrateDisks
	ParamMigrateDisksDetectZeroes = hooksv1alpha1.ParamMigrateDisksDetectZeroes
	ParamMigrateDisksTargetZero   = hooksv1alpha1.ParamMigrateDisksTargetZero
	ParamCompression              = hooksv1alpha1.ParamCompression
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
func ParamNames() []string { return hooksv1alpha1.LibvirtParamNames() }

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
