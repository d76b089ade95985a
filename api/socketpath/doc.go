// Package socketpath checks, on the file system, a Unix socket path below a
// trusted root before it is dialed: every component below the root must
// exist, none may be a symlink, the directories must be directories and the
// last component a socket. The root itself is resolved once, since on many
// images /var/run is a link to /run. The launcher runtime (sidecar sockets
// under /var/run/kubevirt-plugin) and the handler runtime (node hook sockets
// under the host paths virt-handler mounts) both check with it.
package socketpath
