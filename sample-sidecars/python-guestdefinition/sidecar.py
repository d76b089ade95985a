#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""python-guestdefinition: a GuestDefinition sidecar written in Python.

It sets libvirt's <on_crash> action of a VM's domain from the VMI annotation
crash.example.com/on-crash (destroy, restart, preserve, coredump-destroy or
coredump-restart). It speaks the contract of protos/hooks/v1alpha1 through
stubs that `make generate` builds from api.proto into hooks/v1alpha1/, and
needs only Debian's python3-grpcio and python3-protobuf.

Rules of the contract it keeps, each checked by `kvpctl conformance`:
  * only GuestDefinition, the Plugin's one permitted hook point, is
    implemented; the base class answers UNIMPLEMENTED for the others;
  * the same input gives the same output, and its own output comes back
    unchanged (idempotent): the action is set, never appended;
  * both invocation contexts are answered; on MigrationTarget the domain is
    returned as received (libvirt does not use it);
  * the rest of the domain is returned as received: the XML is edited in
    place with minidom, not rebuilt, and namespace declarations stay where
    they were;
  * the socket is <socket-root>/<plugin-name>/<socket-name>, its directory
    mode 0750 and the socket 0660; SIGTERM stops the server gracefully and
    removes the socket.
"""

import argparse
import json
import os
import signal
import stat
import sys
import threading
import time
from xml.dom import minidom
from xml.parsers.expat import ExpatError
from concurrent import futures

import grpc

# The generated stubs live next to this file; no bytecode is written there
# (the image's file system is read-only, the repository's stays clean).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hooks.v1alpha1 import api_pb2, api_pb2_grpc  # noqa: E402 (generated)

ANNOTATION = "crash.example.com/on-crash"
ACTIONS = ("destroy", "restart", "preserve", "coredump-destroy", "coredump-restart")
# Keep the same limit as the Go SDK: a domain with many devices is large.
MAX_MESSAGE_SIZE = 16 << 20
GRACE_SECONDS = 10


def log(msg, **kv):
    kv.update(time=round(time.time(), 3), msg=msg)
    print(json.dumps(kv, sort_keys=True), file=sys.stderr, flush=True)


class InvalidInput(Exception):
    """A request the sidecar cannot act on; answered INVALID_ARGUMENT."""


def set_on_crash(domain_xml, action):
    """Returns domain_xml with <on_crash> set to action, everything else as
    it was. minidom keeps every element, attribute and namespace declaration
    where it was; ElementTree would move the declaration of <metadata>'s
    kubevirt namespace to the root, where the launcher's copy of <metadata>
    loses it (GuestDefinition/KeepsDomain fails that)."""
    try:
        doc = minidom.parseString(domain_xml)
    except ExpatError as err:
        raise InvalidInput("domain XML does not parse: %s" % err) from err
    root = doc.documentElement
    if root.tagName != "domain":
        raise InvalidInput("domain XML has root <%s>, want <domain>" % root.tagName)
    found = [n for n in root.childNodes if n.nodeType == n.ELEMENT_NODE and n.tagName == "on_crash"]
    if found:
        el = found[0]
        while el.firstChild is not None:
            el.removeChild(el.firstChild)
    else:
        el = root.appendChild(doc.createElement("on_crash"))
    el.appendChild(doc.createTextNode(action))
    return root.toxml().encode()


def decode_vmi(vmi_json):
    try:
        return json.loads(vmi_json or b"{}")
    except ValueError as err:
        raise InvalidInput("VMI is not JSON: %s" % err) from err


def vmi_name(vmi):
    meta = vmi.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace", ""), meta.get("name", ""))


def wanted_action(vmi):
    """The action the VMI asks for, or None to change nothing."""
    annotations = (vmi.get("metadata") or {}).get("annotations") or {}
    action = annotations.get(ANNOTATION)
    if action is None:
        return None
    if action not in ACTIONS:
        raise InvalidInput("annotation %s: %r is not one of %s" % (ANNOTATION, action, ", ".join(ACTIONS)))
    return action


class Sidecar(api_pb2_grpc.LauncherHookServiceServicer):
    def __init__(self, plugin):
        self.plugin = plugin

    def GuestDefinition(self, request, context):
        invocation = request.sidecar_context.invocation_context
        if invocation == "MigrationTarget":
            # The target runs the domain migrated from the source.
            return api_pb2.GuestDefinitionResponse(domain_xml=request.domain_xml)
        where = "plugin %s: GuestDefinition" % self.plugin
        try:
            vmi = decode_vmi(request.vmi)
            where += " for VMI " + vmi_name(vmi)
            action = wanted_action(vmi)
            if action is None:
                return api_pb2.GuestDefinitionResponse(domain_xml=request.domain_xml)
            out = set_on_crash(request.domain_xml, action)
        except InvalidInput as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s: %s" % (where, err))
        # A caller that gave up does not get an answer; nothing was written.
        if not context.is_active():
            context.abort(grpc.StatusCode.CANCELLED, "plugin %s: caller went away" % self.plugin)
        return api_pb2.GuestDefinitionResponse(domain_xml=out)


def prepare_socket(path):
    """Creates the socket's directory (0750) when it does not exist and
    removes a stale socket. An existing directory is used as it is: in a
    launcher Pod it is the sidecar's subPath of the sockets volume, made and
    owned by the kubelet, whose mode the sidecar may not change. A directory
    that is a symlink, and a socket path that exists and is not a socket,
    are errors; nothing is removed."""
    directory = os.path.dirname(path)
    try:
        mode = os.lstat(directory).st_mode
    except FileNotFoundError:
        os.makedirs(directory)
        os.chmod(directory, 0o750)
    else:
        if stat.S_ISLNK(mode):
            raise SystemExit("socket directory %s is a symlink" % directory)
        if not stat.S_ISDIR(mode):
            raise SystemExit("socket directory %s is not a directory" % directory)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SystemExit("socket path %s exists and is not a socket" % path)
    os.remove(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugin-name", default="python-guestdefinition",
                        help="the Plugin's name; the socket is <socket-root>/<plugin-name>/<socket-name>")
    parser.add_argument("--socket-root", default="/var/run/kubevirt-plugin",
                        help="directory holding the plugin socket directories")
    parser.add_argument("--socket-name", default="hook.sock", help="socket file name (must end with .sock)")
    args = parser.parse_args(argv)
    if not args.socket_name.endswith(".sock") or "/" in args.socket_name:
        parser.error("--socket-name must be a file name ending with .sock")
    path = os.path.join(args.socket_root, args.plugin_name, args.socket_name)
    if len(path) >= 108:
        parser.error("socket path %s is longer than the 107 bytes a Unix socket allows" % path)

    prepare_socket(path)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
                 ("grpc.max_send_message_length", MAX_MESSAGE_SIZE)])
    api_pb2_grpc.add_LauncherHookServiceServicer_to_server(Sidecar(args.plugin_name), server)
    # gRPC binds the socket file in add_insecure_port: under this umask it
    # is created 0660 there, so it never has another mode, not even in the
    # moment before the chmod (which only states the mode whatever the
    # library does).
    previous = os.umask(0o117)
    try:
        server.add_insecure_port("unix:" + path)
        server.start()
    finally:
        os.umask(previous)
    os.chmod(path, 0o660)
    log("serving", plugin=args.plugin_name, socket=path, hooks=["GuestDefinition"])

    stopping = threading.Event()

    def stop(signum, _frame):
        log("stopping", signal=signal.Signals(signum).name)
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    stopping.wait()
    server.stop(GRACE_SECONDS).wait()
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    log("stopped", plugin=args.plugin_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
