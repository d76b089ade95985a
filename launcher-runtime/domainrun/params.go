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
	"migrate_uri":                 V(1, 1, 0),
	"destination_name":            V(1, 1, 0),
	"destination_xml":             V(1, 1, 0),
	"bandwidth":                   V(1, 1, 0),
	"graphics_uri":                V(1, 1, 0),
	"listen_address":              V(1, 1, 4),
	"migrate_disks":               V(1, 2, 17),
	"disks_port":                  V(1, 3, 3),
	"compression":                 V(1, 3, 4),
	"compression.mt.level":        V(1, 3, 4),
	"compression.mt.threads":      V(1, 3, 4),
	"compression.mt.dthreads":     V(1, 3, 4),
	"compression.xbzrle.cache":    V(1, 3, 4),
	"persistent_xml":              V(1, 3, 4),
	"auto_converge.initial":       V(2, 0, 0),
	"auto_converge.increment":     V(2, 0, 0),
	"bandwidth.postcopy":          V(5, 1, 0),
	"parallel.connections":        V(5, 2, 0),
	"tls.destination":             V(6, 0, 0),
	"disks_uri":                   V(6, 8, 0),
	"compression.zlib.level":      V(9, 4, 0),
	"compression.zstd.level":      V(9, 4, 0),
	"migrate_disks_detect_zeroes": V(10, 9, 0),
	"bandwidth.avail.switchover":  V(11, 1, 0),
	"migrate_disks_target_zero":   V(12, 2, 0),
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

	str("migrate_uri", p.MigrateUri, &out.URISet, &out.URI)
	str("destination_name", p.DestinationName, &out.DestNameSet, &out.DestName)
	str("destination_xml", p.DestinationXml, &out.DestXMLSet, &out.DestXML)
	str("persistent_xml", p.PersistentXml, &out.PersistXMLSet, &out.PersistXML)
	str("graphics_uri", p.GraphicsUri, &out.GraphicsURISet, &out.GraphicsURI)
	str("listen_address", p.ListenAddress, &out.ListenAddressSet, &out.ListenAddress)
	str("disks_uri", p.DisksUri, &out.DisksURISet, &out.DisksURI)
	str("tls.destination", p.TlsDestination, &out.TLSDestinationSet, &out.TLSDestination)

	if err := bandwidth(p, lib, out); err != nil {
		errs = append(errs, err)
	}
	u64("bandwidth.avail.switchover", p.BandwidthAvailSwitchover, &out.BandwidthAvailSwitchoverSet, &out.BandwidthAvailSwitchover)
	u64("compression.xbzrle.cache", p.CompressionXbzrleCache, &out.CompressionXBZRLECacheSet, &out.CompressionXBZRLECache)

	i32("disks_port", p.DisksPort, &out.DisksPortSet, &out.DisksPort)
	i32("compression.mt.level", p.CompressionMtLevel, &out.CompressionMTLevelSet, &out.CompressionMTLevel)
	i32("compression.mt.threads", p.CompressionMtThreads, &out.CompressionMTThreadsSet, &out.CompressionMTThreads)
	i32("compression.mt.dthreads", p.CompressionMtDthreads, &out.CompressionMTDThreadsSet, &out.CompressionMTDThreads)
	i32("compression.zlib.level", p.CompressionZlibLevel, &out.CompressionZlibLevelSet, &out.CompressionZlibLevel)
	i32("compression.zstd.level", p.CompressionZstdLevel, &out.CompressionZstdLevelSet, &out.CompressionZstdLevel)
	i32("auto_converge.initial", p.AutoConvergeInitial, &out.AutoConvergeInitialSet, &out.AutoConvergeInitial)
	i32("auto_converge.increment", p.AutoConvergeIncrement, &out.AutoConvergeIncrementSet, &out.AutoConvergeIncrement)
	i32("parallel.connections", p.ParallelConnections, &out.ParallelConnectionsSet, &out.ParallelConnections)

	list("migrate_disks", p.MigrateDisks, &out.MigrateDisksSet, &out.MigrateDisks)
	list("migrate_disks_detect_zeroes", p.MigrateDisksDetectZeroes, &out.MigrateDisksDetectZeroesSet, &out.MigrateDisksDetectZeroesList)
	list("migrate_disks_target_zero", p.MigrateDisksTargetZero, &out.MigrateDisksTargetZeroSet, &out.MigrateDisksTargetZero)

	if methods := p.GetCompression().GetValues(); len(methods) > 1 {
		errs = append(errs, fmt.Errorf("%w: %q lists %d methods %q, but libvirt.org/go/libvirt v1.12005.0 passes only one; choose one method", ErrUnsupportedParam, "compression", len(methods), methods))
	} else if len(methods) == 1 && use("compression") {
		if since, known := compressionSince[methods[0]]; known && lib < since {
			errs = append(errs, fmt.Errorf("%w: %q method %q needs libvirt %s or newer, the connected libvirt is %s", ErrUnsupportedParam, "compression", methods[0], since, lib))
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
		return fmt.Errorf("%w: %q (%d MiB/s) cannot be sent without %q equal to it: libvirt.org/go/libvirt v1.12005.0 fills both parameters from one field, so it would cap pre-copy as well", ErrUnsupportedParam, "bandwidth.postcopy", post.GetValue(), "bandwidth")
	case hasPost && post.GetValue() != pre.GetValue():
		return fmt.Errorf("%w: %q (%d MiB/s) differs from %q (%d MiB/s): libvirt.org/go/libvirt v1.12005.0 fills both parameters from one field", ErrUnsupportedParam, "bandwidth.postcopy", post.GetValue(), "bandwidth", pre.GetValue())
	}
	// The binding sends bandwidth.postcopy along with bandwidth, so the
	// connected libvirt must know both.
	for _, name := range []string{"bandwidth", "bandwidth.postcopy"} {
		if since := paramSince[name]; lib < since {
			return fmt.Errorf("%w: %q needs libvirt %s or newer, the connected libvirt is %s (libvirt.org/go/libvirt v1.12005.0 sends it whenever bandwidth is set)", ErrUnsupportedParam, name, since, lib)
		}
	}
	out.BandwidthSet, out.Bandwidth = true, pre.GetValue()
	return nil
}
