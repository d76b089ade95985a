// SPDX-License-Identifier: Apache-2.0

// Package sdk is the plugin side of the hook contract in
// protos/hooks/v1alpha1: what a sidecar or a node hook server links to serve
// its hooks.
//
// A plugin implements one small interface per hook point it handles
// (GuestDefinitionHandler, PreBootHandler, PreMigrationSourceHandler,
// NodeHookHandler) and calls ServeLauncherHooks or ServeNodeHooks. The SDK
// owns the gRPC plumbing: it creates the socket (under
// /var/run/kubevirt-plugin/<plugin>/ for sidecars) with restrictive
// permissions, registers only the RPCs the handler implements (the others
// answer codes.Unimplemented), decodes the VMI and the libvirt domain,
// composes logging, panic recovery and Prometheus metrics interceptors, and
// stops gracefully, removing the socket, when its context is cancelled.
// It serves on every socket path admission accepts, up to the 108 bytes of
// sun_path: Go's own sockaddr keeps a byte for a terminating NUL, so a path
// of exactly 108 bytes is bound through a descriptor of its directory
// (/proc/self/fd/<fd>/<name>), the way virt-launcher and virt-handler dial.
//
// Helpers cover the rest of the contract: AtomicWriteFile for PreBoot hooks
// that rewrite boot artifacts, MigrationFlags for the VIR_MIGRATE_* bits,
// MigrationParams for reading migration parameters by libvirt name, and
// MigrationChanges for building a PreMigrationSource response.
//
// The package keeps no package-level state; everything is configured
// through Options. Package sdktest checks a running sidecar against the
// contract from a plugin's own tests.
package sdk
