// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"errors"
	"fmt"

	"libvirt.org/go/libvirt"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// ErrUnsupportedParam is wrapped by errors about a migration parameter the
// connected libvirt, or the Go binding, cannot take.
var ErrUnsupportedParam = errors.New("unsupported migration parameter")

// Version is a libvirt version as GetLibVersion reports it:
// major*1,000,000 + minor*1,000 + release.
type Version uint32

// V builds a Version.
func V(major, minor, release uint32) Version {
	return Version(major*1_000_000 + minor*1_000 + release)
}

func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v/1_000_000, v/1_000%1_000, v%1_000)
}

// The libvirt release that introduced each VIR_MIGRATE_PARAM_* parameter.
var paramSince = map[string]Version{
	hooksv1alpha1.ParamMigrateURI:               V(1, 1, 0),
	hooksv1alpha1.ParamDestinationName:          V(1, 1, 0),
	hooksv1alpha1.ParamDestinationXML:           V(1, 1, 0),
	hooksv1alpha1.ParamBandwidth:                V(1, 1, 0),
	hooksv1alpha1.ParamGraphicsURI:              V(1, 1, 0),
	hooksv1alpha1.ParamListenAddress:            V(1, 1, 4),
	hooksv1alpha1.ParamMigrateDisks:             V(1, 2, 17),
	hooksv1alpha1.ParamDisksPort:                V(1, 3, 3),
	hooksv1alpha1.ParamCompression:              V(1, 3, 4),
	hooksv1alpha1.ParamCompressionMTLevel:       V(1, 3, 4),
	hooksv1alpha1.ParamCompressionMTThreads:     V(1, 3, 4),
	hooksv1alpha1.ParamCompressionMTDThreads:    V(1, 3, 4),
	hooksv1alpha1.ParamCompressionXBZRLECache:   V(1, 3, 4),
	hooksv1alpha1.ParamPersistentXML:            V(1, 3, 4),
	hooksv1alpha1.ParamAutoConvergeInitial:      V(2, 0, 0),
	hooksv1alpha1.ParamAutoConvergeIncrement:    V(2, 0, 0),
	hooksv1alpha1.ParamBandwidthPostcopy:        V(5, 1, 0),
	hooksv1alpha1.ParamParallelConnections:      V(5, 2, 0),
	hooksv1alpha1.ParamTLSDestination:           V(6, 0, 0),
	hooksv1alpha1.ParamDisksURI:                 V(6, 8, 0),
	hooksv1alpha1.ParamCompressionZlibLevel:     V(9, 4, 0),
	hooksv1alpha1.ParamCompressionZstdLevel:     V(9, 4, 0),
	hooksv1alpha1.ParamMigrateDisksDetectZeroes: V(10, 9, 0),
	hooksv1alpha1.ParamBandwidthAvailSwitchover: V(11, 1, 0),
	hooksv1alpha1.ParamMigrateDisksTargetZero:   V(12, 2, 0),
}

// The libvirt release that introduced each compression method; earlier
// releases answer "Unsupported compression method" only once the migration
// job has started.
var compressionSince = map[string]Version{
	"xbzrle": V(1, 3, 4),
	"mt":     V(1, 3, 4),
	"zlib":   V(9, 4, 0),
	"zstd":   V(9, 4, 0),
}

// MigrateParameters converts PreMigrationSource parameters into the
// binding's DomainMigrateParameters for a libvirt of version lib. A scalar
// wrapper without a value and an empty list count as unset. It fails, naming
// the parameter and wrapping ErrUnsupportedParam, when a parameter is newer
// than lib or cannot be expressed through the binding (see the package
// documentation for compression and bandwidth.postcopy).
func MigrateParameters(p *hooksv1alpha1.MigrationParams, lib Version) (*libvirt.DomainMigrateParameters, error) {
	out := &libvirt.DomainMigrateParameters{}
	if p == nil {
		return out, nil
	}
	var errs []error
	// use records a parameter that is set, after checking the version.
	use := func(name string) bool {
		if since := paramSince[name]; lib < since {
			errs = append(errs, fmt.Errorf("%w: %q needs libvirt %s or newer, the connected libvirt is %s", ErrUnsupportedParam, name, since, lib))
			return false
		}
		return true
	}
	str := func(name string, w *hooksv1alpha1.StringParam, set *bool, dst *string) {
		if w != nil && w.Value != nil && use(name) {
			*set, *dst = true, *w.Value
		}
	}
	u64 := func(name string, w *hooksv1alpha1.Uint64Param, set *bool, dst *uint64) {
		if w != nil && w.Value != nil && use(name) {
			*set, *dst = true, *w.Value
		}
	}
	i32 := func(name string, w *hooksv1alpha1.IntParam, set *bool, dst *int) {
		if w != nil && w.Value != nil && use(name) {
			*set, *dst = true, int(*w.Value)
		}
	}
	list := func(name string, w *hooksv1alpha1.StringListParam, set *bool, dst *[]string) {
		if len(w.GetValues()) > 0 && use(name) {
			*set, *dst = true, append([]string(nil), w.GetValues()...)
		}
	}

	str(hooksv1alpha1.ParamMigrateURI, p.MigrateUri, &out.URISet, &out.URI)
	str(hooksv1alpha1.ParamDestinationName, p.DestinationName, &out.DestNameSet, &out.DestName)
	str(hooksv1alpha1.ParamDestinationXML, p.DestinationXml, &out.DestXMLSet, &out.DestXML)
	str(hooksv1alpha1.ParamPersistentXML, p.PersistentXml, &out.PersistXMLSet, &out.PersistXML)
	str(hooksv1alpha1.ParamGraphicsURI, p.GraphicsUri, &out.GraphicsURISet, &out.GraphicsURI)
	str(hooksv1alpha1.ParamListenAddress, p.ListenAddress, &out.ListenAddressSet, &out.ListenAddress)
	str(hooksv1alpha1.ParamDisksURI, p.DisksUri, &out.DisksURISet, &out.DisksURI)
	str(hooksv1alpha1.ParamTLSDestination, p.TlsDestination, &out.TLSDestinationSet, &out.TLSDestination)

	if err := bandwidth(p, lib, out); err != nil {
		errs = append(errs, err)
	}
	u64(hooksv1alpha1.ParamBandwidthAvailSwitchover, p.BandwidthAvailSwitchover, &out.BandwidthAvailSwitchoverSet, &out.BandwidthAvailSwitchover)
	u64(hooksv1alpha1.ParamCompressionXBZRLECache, p.CompressionXbzrleCache, &out.CompressionXBZRLECacheSet, &out.CompressionXBZRLECache)

	i32(hooksv1alpha1.ParamDisksPort, p.DisksPort, &out.DisksPortSet, &out.DisksPort)
	i32(hooksv1alpha1.ParamCompressionMTLevel, p.CompressionMtLevel, &out.CompressionMTLevelSet, &out.CompressionMTLevel)
	i32(hooksv1alpha1.ParamCompressionMTThreads, p.CompressionMtThreads, &out.CompressionMTThreadsSet, &out.CompressionMTThreads)
	i32(hooksv1alpha1.ParamCompressionMTDThreads, p.CompressionMtDthreads, &out.CompressionMTDThreadsSet, &out.CompressionMTDThreads)
	i32(hooksv1alpha1.ParamCompressionZlibLevel, p.CompressionZlibLevel, &out.CompressionZlibLevelSet, &out.CompressionZlibLevel)
	i32(hooksv1alpha1.ParamCompressionZstdLevel, p.CompressionZstdLevel, &out.CompressionZstdLevelSet, &out.CompressionZstdLevel)
	i32(hooksv1alpha1.ParamAutoConvergeInitial, p.AutoConvergeInitial, &out.AutoConvergeInitialSet, &out.AutoConvergeInitial)
	i32(hooksv1alpha1.ParamAutoConvergeIncrement, p.AutoConvergeIncrement, &out.AutoConvergeIncrementSet, &out.AutoConvergeIncrement)
	i32(hooksv1alpha1.ParamParallelConnections, p.ParallelConnections, &out.ParallelConnectionsSet, &out.ParallelConnections)

	list(hooksv1alpha1.ParamMigrateDisks, p.MigrateDisks, &out.MigrateDisksSet, &out.MigrateDisks)
	list(hooksv1alpha1.ParamMigrateDisksDetectZeroes, p.MigrateDisksDetectZeroes, &out.MigrateDisksDetectZeroesSet, &out.MigrateDisksDetectZeroesList)
	list(hooksv1alpha1.ParamMigrateDisksTargetZero, p.MigrateDisksTargetZero, &out.MigrateDisksTargetZeroSet, &out.MigrateDisksTargetZero)

	if methods := p.GetCompression().GetValues(); len(methods) > 1 {
		errs = append(errs, fmt.Errorf("%w: %q lists %d methods %q, but libvirt.org/go/libvirt v1.12005.0 passes only one; choose one method", ErrUnsupportedParam, hooksv1alpha1.ParamCompression, len(methods), methods))
	} else if len(methods) == 1 && use(hooksv1alpha1.ParamCompression) {
		if since, known := compressionSince[methods[0]]; known && lib < since {
			errs = append(errs, fmt.Errorf("%w: %q method %q needs libvirt %s or newer, the connected libvirt is %s", ErrUnsupportedParam, hooksv1alpha1.ParamCompression, methods[0], since, lib))
		} else {
			out.CompressionSet, out.Compression = true, methods[0]
		}
	}

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// bandwidth handles bandwidth and bandwidth.postcopy, which the binding
// packs from one field: setting it sends both parameters with one value.
func bandwidth(p *hooksv1alpha1.MigrationParams, lib Version, out *libvirt.DomainMigrateParameters) error {
	pre, post := p.GetBandwidth(), p.GetBandwidthPostcopy()
	hasPre, hasPost := pre != nil && pre.Value != nil, post != nil && post.Value != nil
	switch {
	case !hasPre && !hasPost:
		return nil
	case !hasPre:
		return fmt.Errorf("%w: %q (%d MiB/s) cannot be sent without %q equal to it: libvirt.org/go/libvirt v1.12005.0 fills both parameters from one field, so it would cap pre-copy as well", ErrUnsupportedParam, hooksv1alpha1.ParamBandwidthPostcopy, post.GetValue(), hooksv1alpha1.ParamBandwidth)
	case hasPost && post.GetValue() != pre.GetValue():
		return fmt.Errorf("%w: %q (%d MiB/s) differs from %q (%d MiB/s): libvirt.org/go/libvirt v1.12005.0 fills both parameters from one field", ErrUnsupportedParam, hooksv1alpha1.ParamBandwidthPostcopy, post.GetValue(), hooksv1alpha1.ParamBandwidth, pre.GetValue())
	}
	// The binding sends bandwidth.postcopy along with bandwidth, so the
	// connected libvirt must know both.
	for _, name := range []string{hooksv1alpha1.ParamBandwidth, hooksv1alpha1.ParamBandwidthPostcopy} {
		if since := paramSince[name]; lib < since {
			return fmt.Errorf("%w: %q needs libvirt %s or newer, the connected libvirt is %s (libvirt.org/go/libvirt v1.12005.0 sends it whenever bandwidth is set)", ErrUnsupportedParam, name, since, lib)
		}
	}
	out.BandwidthSet, out.Bandwidth = true, pre.GetValue()
	return nil
}
