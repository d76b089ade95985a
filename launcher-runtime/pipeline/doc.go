// Package pipeline runs the launcher hooks of KubeVirt Plugins inside
// virt-launcher: the GuestDefinition, PreBoot and PreMigrationSource chains.
//
// A Pipeline is built once from the Plugins handed to the launcher. New
// validates them with the same rules as the Plugin CRD and compiles every CEL
// expression up front, so a hook point call never compiles. Hooks run in
// declaration order inside a plugin and plugins run in alphabetical order of
// their names. CEL hooks run inline; sidecar hooks are gRPC calls over the
// Unix socket the plugin declares, below the sockets root.
//
// The package needs no cgo: the libvirt adapter that defines, starts and
// migrates the domain lives in the sibling package launcher-runtime/libvirt,
// and kvpctl uses this package to run the chains on a developer's machine.
package pipeline
