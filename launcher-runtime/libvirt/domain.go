//go:build cgo

package libvirt

import (
	"context"
	"errors"
	"fmt"
	"math"

	golibvirt "libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// DefineAndStart defines domain on conn and starts it. The caller frees the
// returned domain. A domain that was defined but failed to start stays
// defined, as libvirt left it, so that its configuration can be inspected.
func DefineAndStart(ctx context.Context, conn *golibvirt.Connect, domain *libvirtxml.Domain) (*golibvirt.Domain, error) {
	if domain == nil {
		return nil, errors.New("define domain: no domain given")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("define domain %q: %w", domain.Name, err)
	}
	xml, err := domain.Marshal()
	if err != nil {
		return nil, fmt.Errorf("define domain %q: marshal XML: %w", domain.Name, err)
	}
	dom, err := conn.DomainDefineXML(xml)
	if err != nil {
		return nil, fmt.Errorf("define domain %q: %w", domain.Name, err)
	}
	if err := ctx.Err(); err != nil {
		_ = dom.Free()
		return nil, fmt.Errorf("start domain %q: %w", domain.Name, err)
	}
	if err := dom.Create(); err != nil {
		_ = dom.Free()
		return nil, fmt.Errorf("start domain %q: %w", domain.Name, err)
	}
	return dom, nil
}

// Migrate migrates dom with MigrateToURI3 using the flags and parameters a
// PreMigrationSource chain produced. destURI is the destination libvirt URI
// for peer-to-peer migration (VIR_MIGRATE_PEER2PEER), empty otherwise. The
// parameters are checked against the version of the libvirt dom belongs to
// before anything is sent.
//
// MigrateToURI3 blocks until the migration ends; when ctx is done first the
// migration job is aborted and Migrate returns once libvirt gave up, with
// an error wrapping ctx.Err().
func Migrate(ctx context.Context, dom *golibvirt.Domain, destURI string, flags uint64, params *hooksv1alpha1.MigrationParams) error {
	name, err := dom.GetName()
	if err != nil {
		return fmt.Errorf("migrate: domain name: %w", err)
	}
	if flags > math.MaxUint32 {
		return fmt.Errorf("migrate domain %q: flags %#x do not fit libvirt's 32-bit VIR_MIGRATE_* flags", name, flags)
	}
	conn, err := dom.DomainGetConnect()
	if err != nil {
		return fmt.Errorf("migrate domain %q: connection: %w", name, err)
	}
	lib, err := conn.GetLibVersion()
	if err != nil {
		return fmt.Errorf("migrate domain %q: libvirt version: %w", name, err)
	}
	mp, err := MigrateParameters(params, Version(lib))
	if err != nil {
		return fmt.Errorf("migrate domain %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("migrate domain %q: %w", name, err)
	}

	done := make(chan error, 1)
	go func() {
		done <- dom.MigrateToURI3(destURI, mp, golibvirt.DomainMigrateFlags(flags))
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("migrate domain %q to %q: %w", name, destURI, err)
		}
		return nil
	case <-ctx.Done():
	}
	// The job may not have started yet, or may just have finished: an
	// abort error then says nothing about the migration's outcome, which
	// MigrateToURI3 reports.
	abortErr := dom.AbortJob()
	migErr := <-done
	if migErr == nil {
		// The migration completed before the abort took effect.
		return nil
	}
	if abortErr != nil {
		return fmt.Errorf("migrate domain %q to %q: %w (abort: %v): %w", name, destURI, ctx.Err(), abortErr, migErr)
	}
	return fmt.Errorf("migrate domain %q to %q: aborted: %w: %w", name, destURI, ctx.Err(), migErr)
}
