// SPDX-License-Identifier: Apache-2.0

// Command kvpctl is the tool a plugin author runs before deploying a
// Plugin: it validates Plugin manifests with the CRD rules and the CEL
// checks, runs the GuestDefinition and PreMigrationSource chains on local
// files (CEL hooks inline, sidecars over their sockets below --socket-root),
// evaluates conditions against a VMI, and checks a running sidecar or node
// hook server, in any language, against the hook contract (the checks of
// protos/sdk/sdktest).
//
//	kvpctl validate FILE...
//	kvpctl guest-definition --plugins PATH --vmi FILE --domain FILE [--context Boot|MigrationTarget] [--socket-wait DURATION] [--socket-root DIR] [--diff]
//	kvpctl pre-migration-source --plugins PATH --vmi FILE --flags N [--params FILE] [--socket-wait DURATION] [--socket-root DIR]
//	kvpctl condition --expression EXPR --vmi FILE
//	kvpctl conformance --plugin FILE --socket PATH [--hooks launcher|node] [--vmi FILE] [--domain FILE] [--iso FILE | --no-iso] [--flags N] [--params FILE] [--timeout D] [--short-deadline D] [--settle D]
//
// Exit status: 0 on success, 1 when the operation fails (the reason is on
// stderr), 2 on a usage error. kvpctl is built without cgo and does not
// link libvirt.
package main
