// SPDX-License-Identifier: Apache-2.0

// Package hooksv1alpha1 is the wire contract between KubeVirt and plugins:
// the Go code generated from api.proto (LauncherHookService, served by
// sidecars of virt-launcher; NodeHookService, served by plugin DaemonSets
// and called by virt-handler), in params.go the mapping of MigrationParams
// fields to libvirt's VIR_MIGRATE_PARAM_* names, and in invocation.go the
// values of SidecarContext.invocation_context.
//
// Plugin authors normally use package sdk instead, which serves these
// services with typed handlers. Regenerate with `make generate`.
package hooksv1alpha1
