// SPDX-License-Identifier: Apache-2.0

// Package domainrun hands the launcher pipeline's results to libvirt through
// libvirt.org/go/libvirt: it defines and starts the domain GuestDefinition
// produced, and turns the PreMigrationSource result (VIR_MIGRATE_* flags and
// VIR_MIGRATE_PARAM_* parameters) into a MigrateToURI3 call.
//
// This is the only package of launcher-runtime that needs cgo and the
// libvirt development files (pkg-config libvirt). Every file but this one is
// built only with cgo, so `CGO_ENABLED=0 go build ./...` still succeeds for
// the module, with this package empty; the pipeline and kvpctl never import
// it.
//
// Two properties of libvirt.org/go/libvirt v1.12005.0 shape the conversion.
// Its DomainMigrateParameters holds one compression method although libvirt
// accepts the parameter several times, so more than one method is refused.
// It packs bandwidth.postcopy from the same field as bandwidth, so whenever
// bandwidth is set both parameters reach libvirt with that value; a
// bandwidth.postcopy that differs from bandwidth, or comes without it, is
// refused rather than silently applied to pre-copy too.
//
// Parameters and compression methods are checked against the version of
// the connected libvirt (GetLibVersion) before anything is sent: a hook
// that asks for something that libvirt lacks, such as the zlib and zstd
// levels and methods (9.4.0), the zero-detection disk lists or
// bandwidth.avail.switchover on Debian 12's libvirt 9.0, gets an error
// naming the parameter and the release it needs.
package domainrun
