#!/usr/bin/env python3
"""grpcio on both ends of an empty call, for modeld-bench's workload 14.

  bench-grpcio.py serve MODELD_SOCKET OWN_SOCKET
      asks modeld (gRPC over HTTP/2 at MODELD_SOCKET) for DaemonService/Status once, then serves
      that very answer, as bytes, from grpcio's own server at OWN_SOCKET; prints "serving" when
      it does, and serves until it is stopped (SIGTERM).
  bench-grpcio.py calls SOCKET COUNT
      makes 200 warm-up calls and then COUNT timed Status calls one after another over one
      channel; prints the answer's size, then the p50 and p99 in nanoseconds.

Both sides send and receive bytes (no protobuf decoding in Python), so what differs between the
two servers is the server alone.
"""
import sys
import time
from concurrent import futures

import grpc

METHOD = "/modeld.v1.DaemonService/Status"


def serve(modeld_socket, own_socket):
    with grpc.insecure_channel("unix:" + modeld_socket) as channel:
        answer = channel.unary_unary(METHOD)(b"")
    handler = grpc.method_handlers_generic_handler(
        "modeld.v1.DaemonService",
        {"Status": grpc.unary_unary_rpc_method_handler(lambda request, context: answer)},
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + own_socket)
    server.start()
    print("serving", flush=True)
    server.wait_for_termination()


def calls(socket, count):
    with grpc.insecure_channel("unix:" + socket) as channel:
        call = channel.unary_unary(METHOD)
        for _ in range(200):
            call(b"")
        latencies = []
        answer = b""
        for _ in range(count):
            start = time.perf_counter_ns()
            answer = call(b"")
            latencies.append(time.perf_counter_ns() - start)
    latencies.sort()
    print(len(answer), latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, len(latencies) * 99 // 100)])


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        calls(sys.argv[2], int(sys.argv[3]))
