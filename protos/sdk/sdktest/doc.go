// SPDX-License-Identifier: Apache-2.0

// Package sdktest checks a hook server against the contract of
// protos/hooks/v1alpha1 over its real Unix socket: from a plugin's own `go
// test`, or from `kvpctl conformance` against a server written in any
// language.
//
// Every check is a rule of the user guide and fails a server that breaks
// it, saying which rule and what was seen (the package's tests hold, per
// check, a sidecar that breaks exactly that rule):
//
//   - RPCs: every permitted hook point is implemented (implementing one that
//     is not permitted is only a warning);
//   - GuestDefinition: answers both invocation contexts (Boot and
//     MigrationTarget); returns a domain that parses; keeps the identity,
//     every kind of element and every device the VMI declares (the devices
//     KubeVirt names with an alias "ua-...") of a real KubeVirt domain
//     (KubeVirtDomainXML), which it may change but not drop;
//     returns the same domain when called again on the same generated
//     domain (repeatable) and when called on its own output (idempotent);
//   - PreBoot: nothing changes in the boot artifacts after a call returned,
//     nor after a call ended at a short deadline that did reach the handler;
//     files are replaced by rename, never rewritten in place; a second call
//     leaves the artifacts as the first did. The artifacts are in a
//     temporary directory the checks create and remove: a copy of the ISO
//     the contract names, or else a stand-in NoCloud ISO (StandInISOFiles),
//     so that a sidecar that does nothing without an ISO is still seen.
//     A run that gives no ISO at all (NoCloudInitISO) makes these checks
//     WARN, not PASS, when they see no change;
//   - PreMigrationSource: no flag bit both set and cleared, only parameters
//     the contract defines and each of its type; called on its own result it
//     changes nothing more. That an empty response changes nothing is a
//     rule of the launcher that applies it, which no sidecar can break, so
//     it is tested in launcher-runtime and is no check here;
//   - every hook point, node hooks included: a handler stops when its caller
//     gives up (the call after one that ended at its deadline is not held
//     up); node hooks answer a repeated event as they answered the first.
//
// What the context checks cannot see. PreBoot's is checked by its effect:
// the files must not change after the call ended. GuestDefinition,
// PreMigrationSource and node hooks have no effect the checks can watch
// (their answer is dropped once the caller gave up; a node hook acts on the
// node), so their check only times the next call: it catches a handler
// that ignores its context while holding what the next call needs (a lock,
// a worker of a small pool, such as a Python server with max_workers=1),
// but not one that ignores it and runs each call on its own, whose work
// after the deadline nobody outside the server can see. For those three a
// PASS means the handler was not seen to ignore its context, not that it
// honours it; read the handler.
//
// In a plugin's own tests:
//
//	func TestSidecarContract(t *testing.T) {
//		socket := sdktest.StartLauncher(t, "my-plugin", myplugin.NewHandler())
//		sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
//			Permitted: []string{sdk.HookGuestDefinition},
//			VMI:       sdktest.VMIJSON("default", "vm1", map[string]string{"app": "db"}, nil),
//		})
//	}
//
// LauncherChecks, NodeChecks and RunChecks return the results instead, for
// use outside testing.T (kvpctl conformance prints them).
package sdktest
