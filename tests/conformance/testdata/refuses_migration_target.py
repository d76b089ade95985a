#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A GuestDefinition sidecar that fails on the migration target: every live
migration of its VMs would fail. Built on the python-guestdefinition
sample's generated stubs; `kvpctl conformance` must fail it."""

import os
import signal
import sys
import threading
from concurrent import futures

import grpc

sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])  # the sample directory holding hooks/v1alpha1
from hooks.v1alpha1 import api_pb2, api_pb2_grpc  # noqa: E402


class Sidecar(api_pb2_grpc.LauncherHookServiceServicer):
    def GuestDefinition(self, request, context):
        if request.sidecar_context.invocation_context != "Boot":
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "only Boot is handled")
        return api_pb2.GuestDefinitionResponse(domain_xml=request.domain_xml)


server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
api_pb2_grpc.add_LauncherHookServiceServicer_to_server(Sidecar(), server)
server.add_insecure_port("unix:" + sys.argv[2])
server.start()
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
done.wait()
server.stop(1).wait()  # grpc removes its Unix socket when it stops
