// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// DefineAndStart defines domain on conn and starts it. The caller frees the
// returned domain. A domain that was defined but failed to start stays
// defined, as libvirt left it, so that its configuration can be inspected.
func DefineAndStart(ctx context.Context, conn *libvirt.Connect, domain *libvirtxml.Domain) (*libvirt.Domain, error) {
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
// an error wrapping ctx.Err(). A migration that completed before the abort
// took effect is reported as a success.
func Migrate(ctx context.Context, dom *libvirt.Domain, destURI string, flags uint64, params *hooksv1alpha1.MigrationParams) error {
	name, err := dom.GetName()
	if err != nil {
		return fmt.Errorf("migrate: domain name: %w", err)
	}
	migFlags, err := MigrateFlags(flags)
	if err != nil {
		return fmt.Errorf("migrate domain %q: %w", name, err)
	}
	conn, err := dom.DomainGetConnect()
	if err != nil {
		return fmt.Errorf("migrate domain %q: connection: %w", name, err)
	}
	lib, err := conn.GetLibVersion()
	_, _ = conn.Close() // drops only the reference DomainGetConnect took
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
		done <- dom.MigrateToURI3(destURI, mp, migFlags)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("migrate domain %q to %q: %w", name, destURI, err)
		}
		return nil
	case <-ctx.Done():
	}
	return abort(dom, name, destURI, ctx.Err(), done)
}

// MigrateFlags converts a VIR_MIGRATE_* bitmask as the hooks exchange it
// (64 bits wide) into the binding's type; libvirt's flags argument is a C
// unsigned int, so a bit above 31 is an error rather than silently dropped.
func MigrateFlags(flags uint64) (libvirt.DomainMigrateFlags, error) {
	if flags > math.MaxUint32 {
		return 0, fmt.Errorf("flags %#x do not fit libvirt's 32-bit VIR_MIGRATE_* flags", flags)
	}
	return libvirt.DomainMigrateFlags(flags), nil
}

// abortRetry is how often abort retries AbortJob while libvirt has no
// migration job to abort yet.
const abortRetry = 100 * time.Millisecond

// abort stops the migration job whose MigrateToURI3 reports on done. Right
// after MigrateToURI3 was called the job may not exist yet, and AbortJob
// then fails: it is retried until MigrateToURI3 returns.
//
// The abort travels on a connection of its own to the URI of dom's. While
// MigrateToURI3 waits for its reply, libvirt's client library may hold a
// second call on the same connection back until that reply arrives (seen
// with libvirt 9.0 on a loaded machine): an abort sent there would reach
// the daemon only after the migration had completed. Only when no second
// connection can be opened is dom's own connection used.
func abort(dom *libvirt.Domain, name, destURI string, cause error, done <-chan error) error {
	target, release := abortHandle(dom)
	defer release()
	tick := time.NewTicker(abortRetry)
	defer tick.Stop()
	var abortErr error
	for {
		if abortErr = target.AbortJob(); abortErr == nil {
			break
		}
		select {
		case migErr := <-done:
			return aborted(name, destURI, cause, abortErr, migErr)
		case <-tick.C:
		}
	}
	return aborted(name, destURI, cause, nil, <-done)
}

// abortHandle returns dom looked up on a new connection to the URI of its
// own, or dom itself when that connection or lookup fails, and the
// function that releases what it opened. The URI and the UUID are read
// from libvirt's client-side objects, without a call on dom's connection.
func abortHandle(dom *libvirt.Domain) (*libvirt.Domain, func()) {
	uuid, err := dom.GetUUIDString()
	if err != nil {
		return dom, func() {}
	}
	domConn, err := dom.DomainGetConnect()
	if err != nil {
		return dom, func() {}
	}
	uri, err := domConn.GetURI()
	_, _ = domConn.Close() // drops only the reference DomainGetConnect took
	if err != nil {
		return dom, func() {}
	}
	conn, err := libvirt.NewConnect(uri)
	if err != nil {
		return dom, func() {}
	}
	own, err := conn.LookupDomainByUUIDString(uuid)
	if err != nil {
		_, _ = conn.Close()
		return dom, func() {}
	}
	return own, func() {
		_ = own.Free()
		_, _ = conn.Close()
	}
}

func aborted(name, destURI string, cause, abortErr, migErr error) error {
	if migErr == nil {
		// The migration completed before the abort took effect: the
		// domain now runs on the destination, and saying otherwise would
		// make the caller resume a guest that is gone.
		return nil
	}
	if abortErr != nil {
		return fmt.Errorf("migrate domain %q to %q: %w (abort failed: %w): %w", name, destURI, cause, abortErr, migErr)
	}
	return fmt.Errorf("migrate domain %q to %q: aborted: %w: %w", name, destURI, cause, migErr)
}
