// SPDX-License-Identifier: Apache-2.0

// Package pipeline runs the launcher hooks of KubeVirt Plugins inside
// virt-launcher: the GuestDefinition, PreBoot and PreMigrationSource chains.
//
// A Pipeline is built once, by New, from the Plugins handed to the launcher.
// New validates them with the rules of the Plugin CRD and compiles every
// condition and CEL expression, so a hook point call never compiles. A
// Plugin that does not validate or compile in this launcher does not stop
// the others: its hooks fail under Fail and are skipped under Ignore, each
// with an error naming it and the problem. At each
// hook point, plugins run in alphabetical order of their names and the hooks
// of a plugin in declaration order. A hook runs only when the plugin's
// condition and its own condition both hold; an error while evaluating a
// condition fails the call whatever the failure strategy. A failing hook
// fails the call under failureStrategy Fail (the hook's, else the plugin's,
// else Fail) and is skipped under Ignore, leaving no trace in the result
// (it is logged, see below). Cancelling the context fails the call
// whatever the strategy.
//
// virt-handler hands each Plugin over with the checked forms of its CEL
// expressions (handler-runtime's launcherplugins); New plans them without
// parsing, which spares a launcher most of what its first expression would
// cost it, and compiles the text of a Plugin handed over without them (an
// older virt-handler, kvpctl). New logs one line saying how many
// expressions it planned from their checked form and how many it compiled
// from their text. A launcher handed no Plugin builds no CEL environment.
//
// CEL hooks (GuestDefinition only) merge their Domain{...} into the domain
// inline. Sidecar hooks are gRPC calls over the Unix socket the plugin
// declares under /var/run/kubevirt-plugin/<plugin>/ (Options.SocketRoot),
// each bounded by the hook's timeout (30s by default). A socket is ready
// when a connection to it succeeds: a hook point call waits for sockets that
// are missing, or that exist while nothing listens on them (a restarting
// sidecar leaves its socket file in the emptyDir), trying again with backoff
// within one budget shared by all its sidecars (Options.SocketWaitBudget,
// 30s). The Pipeline keeps one connection per sidecar socket for its life
// (Close releases them) and dials again when one breaks. Every path
// component below the sockets root is checked when the connection is made,
// through the checked dial of api/socketpath (see its package
// documentation): a symlink is refused, also one swapped in after an
// earlier check.
//
// # What a GuestDefinition answer must be
//
// A sidecar's answer (and the legacy hook sidecars') is checked when it
// arrives, before anything decodes it, in one pass over its bytes that
// allocates nothing: it is refused when it is nested deeper than 256
// elements or has more than 32,768 elements and attributes (bounds that
// keep its decoding within some 90 MiB of allocations, far above any real
// domain), when it is not exactly one <domain> element (a second root
// element, or content other than white space, comments and processing
// instructions after it), or when its <name> or <uuid> differ from those
// of the domain the sidecar was sent. A refused answer is the failure of
// the hook that sent it, with the hook's failure strategy, like an answer
// that does not decode; the *HookError says which rule it broke. An answer
// equal to what the sidecar was sent is not checked again.
//
// Hook failures are *HookError values, which a host finds with errors.As:
// they carry the plugin, the scope (a hook, or the plugin's condition), the
// hook's index in spec.launcherHooks, its kind, the hook point and the
// socket, and wrap the cause. Their message has the shape of
// api/hookresult's, which handler-runtime/dispatch's node hook errors share:
//
//	plugin "x" launcher hook #1 (sidecar) at PreBoot: calling the sidecar (timeout 30s): rpc error: ...
//	plugin "x" at PreBoot: plugin condition: ...
//
// A failure of the legacy hook sidecars is a *HookError too, of Scope
// hookresult.ScopeLegacyHooks, with Kind KindLegacy and no plugin. A failure
// skipped under Ignore is not returned: its *HookError is the error of the
// line logged to Options.Logger (and it is counted with outcome ignored).
//
// Logs follow api/hookresult's convention, shared with dispatch: a failure
// let through by failureStrategy Ignore is logged with Error, the
// *HookError as the error; every hook that ran or was skipped is logged at
// V(1) ("launcher hook done", "launcher hook skipped: condition is false");
// both with the keys plugin, hookIndex, kind, hookPoint, outcome and, when
// the hook ran, duration.
//
// # Who changed what
//
// Plugins run in a fixed order and a later hook's value wins. At
// GuestDefinition the Pipeline keeps track of which hook changed which part
// of the domain (paths of Go field names from Domain, as an expression reads
// them: "CPU.Mode", "Devices.Disks[1].Driver.Cache") whenever hooks of two
// or more plugins run: a part changed by a hook of one plugin after a hook of
// another (the same part, or one holding the other) is an Overlap, logged at
// Info naming both hooks and counted. A chain of one plugin keeps no such
// books. A CEL hook's parts come from its merge, at the cost of its literal
// (celenv.DomainTransform.MergeWritten). A sidecar answers a whole domain,
// compared with what it was given only when Options.TrackSidecarWrites is
// set or the Logger is enabled at V(1), since that decodes every answer.
// GuestDefinitionWithReport returns the books with the domain: what each
// hook changed, the last hook to change each part, and the overlaps.
//
// # Reports
//
// Under failureStrategy Ignore a failed hook is otherwise only a log line in
// virt-launcher, where nobody looks. The *WithReport methods
// (GuestDefinitionWithReport, PreBootWithReport,
// PreMigrationSourceWithReport, and BootWithReport, MigrationTargetWithReport
// for the launcher's life) return with their result
// a Report: for every hook that handles the hook point, in the order the
// chain reached it, its plugin, index, kind, outcome (success: applied;
// skipped: a condition was false; ignored: failed under Ignore, the chain
// went on; error: failed, and the call with it), duration and *HookError,
// and at GuestDefinition what it changed and the overlaps. The report comes
// back also when the call fails.
//
// virt-launcher has no API credentials, so the report is a value the host
// passes on: it encodes to JSON (json.Marshal, errors as their text), and
// virt-launcher hands it to virt-handler with the reply of the command that
// ran the hooks (the launcher's command socket, as it returns the domain
// and migration results today), or writes it where virt-handler reads the
// launcher's state. virt-handler, which holds credentials, turns
// Report.Failed() into Warning Events on the VMI (reasons
// ReasonLauncherHookFailed and ReasonLauncherHookFailureIgnored, the pair of
// handler-runtime/dispatch's, which writes its own for node hooks) and may
// count or show the overlaps. Nothing in the Pipeline depends on the
// host doing so.
//
// With Options.Registerer set, the Pipeline records
// kubevirt_plugins_launcher_hook_duration_seconds{plugin,hook_point} and
// kubevirt_plugins_launcher_hook_outcomes_total{plugin,hook_point,outcome}
// with outcome success, error, ignored or skipped, and
// kubevirt_plugins_launcher_hook_overlaps_total{hook_point,plugin,overwritten_plugin}
// (not on a migration target, whose domain is discarded), and
// kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{plugin,hook_point},
// the evaluations of the plugin's conditions and GuestDefinition expressions
// that the CEL cost limit stopped (the hook's error wraps
// celenv.ErrCostLimitExceeded and quotes the expression).
//
// Prometheus scrapes virt-handler, not virt-launcher's Pod.
// Options.OnOutcome receives every count of the outcome and cost-limit
// metrics with the run's time the duration metric observes, and
// Options.OnOverlap every count of the overlap metric, Registerer set or
// not, so that the host can hand them to virt-handler: launcher-runtime/kubevirthost keeps them and writes them as
// an api/hookcounts report (Launcher.TakeHookCounts).
//
// The package needs no cgo: the libvirt adapter that defines, starts and
// migrates the domain lives in launcher-runtime/domainrun, and kvpctl uses
// this package to run the chains on a plugin author's machine.
package pipeline
