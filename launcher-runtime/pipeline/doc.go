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
// Hook failures are *HookError values, which a host finds with errors.As:
// they carry the plugin, the hook's index in spec.launcherHooks, its kind,
// the hook point and the socket, and wrap the cause:
//
//	plugin "x" launcher hook #1 (sidecar) at PreBoot: calling the sidecar (timeout 30s): rpc error: ...
//
// A failure of the legacy hook sidecars is a *HookError too, with Kind
// KindLegacy, HookIndex LegacyHooksIndex and no plugin. A failure skipped
// under Ignore is not returned: its *HookError is the error of the line
// logged to Options.Logger (and it is counted with outcome ignored).
//
// With Options.Registerer set, the Pipeline records
// kubevirt_plugins_launcher_hook_duration_seconds{plugin,hook_point} and
// kubevirt_plugins_launcher_hook_outcomes_total{plugin,hook_point,outcome}
// with outcome success, error, ignored or skipped.
//
// The package needs no cgo: the libvirt adapter that defines, starts and
// migrates the domain lives in launcher-runtime/domainrun, and kvpctl uses
// this package to run the chains on a plugin author's machine.
package pipeline
