// Package socketpath checks, on the file system, a Unix socket path below a
// trusted root before it is dialed: every component below the root must
// exist, none may be a symlink, the directories must be directories and the
// last component a socket. The root itself is resolved once, since on many
// images /var/run is a link to /run. The launcher runtime (sidecar sockets
// under /var/run/kubevirt-plugin) and the handler runtime (node hook sockets
// under the host paths virt-handler mounts) both dial with it.
//
// Root.Walk returns a checked path; Root.Dial checks and connects in one
// step. The directories holding plugin sockets are writable from plugin
// containers, so a component may be replaced by a symlink between a check
// and connect(2). On Linux, Dial holds each component open (O_PATH,
// O_NOFOLLOW) while it checks it and connects through /proc/self/fd, so
// what it connects to is what it checked.
package socketpath
