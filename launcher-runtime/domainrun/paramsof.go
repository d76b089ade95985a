// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"libvirt.org/go/libvirt"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// ParamsOf is MigrateParameters the other way round: the parameters a host
// would hand MigrateToURI3, as PreMigrationSource hooks see them. A field is
// set in the result exactly when its Set flag is. Bandwidth fills both
// bandwidth and bandwidth.postcopy, as the binding sends both from it.
func ParamsOf(p *libvirt.DomainMigrateParameters) *hooksv1alpha1.MigrationParams {
	out := &hooksv1alpha1.MigrationParams{}
	if p == nil {
		return out
	}
	str := func(set bool, v string) *hooksv1alpha1.StringParam {
		if !set {
			return nil
		}
		return &hooksv1alpha1.StringParam{Value: &v}
	}
	u64 := func(set bool, v uint64) *hooksv1alpha1.Uint64Param {
		if !set {
			return nil
		}
		return &hooksv1alpha1.Uint64Param{Value: &v}
	}
	i32 := func(set bool, v int) *hooksv1alpha1.IntParam {
		if !set {
			return nil
		}
		n := int32(v)
		return &hooksv1alpha1.IntParam{Value: &n}
	}
	list := func(set bool, v []string) *hooksv1alpha1.StringListParam {
		if !set || len(v) == 0 {
			return nil
		}
		return &hooksv1alpha1.StringListParam{Values: append([]string(nil), v...)}
	}

	out.MigrateUri = str(p.URISet, p.URI)
	out.DestinationName = str(p.DestNameSet, p.DestName)
	out.DestinationXml = str(p.DestXMLSet, p.DestXML)
	out.PersistentXml = str(p.PersistXMLSet, p.PersistXML)
	out.GraphicsUri = str(p.GraphicsURISet, p.GraphicsURI)
	out.ListenAddress = str(p.ListenAddressSet, p.ListenAddress)
	out.DisksUri = str(p.DisksURISet, p.DisksURI)
	out.TlsDestination = str(p.TLSDestinationSet, p.TLSDestination)

	out.Bandwidth = u64(p.BandwidthSet, p.Bandwidth)
	out.BandwidthPostcopy = u64(p.BandwidthSet, p.Bandwidth)
	out.BandwidthAvailSwitchover = u64(p.BandwidthAvailSwitchoverSet, p.BandwidthAvailSwitchover)
	out.CompressionXbzrleCache = u64(p.CompressionXBZRLECacheSet, p.CompressionXBZRLECache)

	out.DisksPort = i32(p.DisksPortSet, p.DisksPort)
	out.CompressionMtLevel = i32(p.CompressionMTLevelSet, p.CompressionMTLevel)
	out.CompressionMtThreads = i32(p.CompressionMTThreadsSet, p.CompressionMTThreads)
	out.CompressionMtDthreads = i32(p.CompressionMTDThreadsSet, p.CompressionMTDThreads)
	out.CompressionZlibLevel = i32(p.CompressionZlibLevelSet, p.CompressionZlibLevel)
	out.CompressionZstdLevel = i32(p.CompressionZstdLevelSet, p.CompressionZstdLevel)
	out.AutoConvergeInitial = i32(p.AutoConvergeInitialSet, p.AutoConvergeInitial)
	out.AutoConvergeIncrement = i32(p.AutoConvergeIncrementSet, p.AutoConvergeIncrement)
	out.ParallelConnections = i32(p.ParallelConnectionsSet, p.ParallelConnections)

	out.MigrateDisks = list(p.MigrateDisksSet, p.MigrateDisks)
	out.MigrateDisksDetectZeroes = list(p.MigrateDisksDetectZeroesSet, p.MigrateDisksDetectZeroesList)
	out.MigrateDisksTargetZero = list(p.MigrateDisksTargetZeroSet, p.MigrateDisksTargetZero)
	if p.CompressionSet && p.Compression != "" {
		out.Compression = &hooksv1alpha1.StringListParam{Values: []string{p.Compression}}
	}
	return out
}
