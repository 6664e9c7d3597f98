#!/usr/bin/env python3
"""grpcio on both ends of an empty call, for modeld-bench's workload 14.

  bench-grpcio.py serve MODELD_SOCKET OWN_SOCKET
      asks modeld (gRPC over HTTP/2 at MODELD_SOCKET) for DaemonService/Status once, then serves
      that very answer, as bytes, from grpcio's own server at OWN_SOCKET; prints "serving" when
      it does, and serves until it is stopped (SIGTERM).
  bench-grpcio.py calls SOCKET COUNT
      makes 200 warm-up calls and then COUNT timed Status calls one after another over one
      channel; prints the answer's size, then the p50 and p99 in nanoseconds.
  bench-grpcio.py bulk SOCKET STORE COUNT
      inserts COUNT objects of modeld-bench's Item (name, category, score, price; a store made
      with that entity) in one QueryService/Apply call, the request's bytes written beforehand;
      prints the objects per second and the answer's size.

Both sides send and receive bytes (no protobuf decoding in Python), so what differs between the
two servers is the server alone.
"""
import struct
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


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, body):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(body)) + body


def entry(name, value):
    """An attributes map entry: the name, and a Value message (1 string, 2 sint64, 3 double)."""
    if isinstance(value, str):
        kind = field(1, value.encode())
    elif isinstance(value, int):
        kind = varint(2 << 3) + varint((value << 1) ^ (value >> 63))
    else:
        kind = varint(3 << 3 | 1) + struct.pack("<d", value)
    return field(1, name.encode()) + field(2, kind)


def bulk(socket, store, count):
    changes = bytearray()
    for i in range(1, count + 1):
        attributes = (
            field(2, entry("name", "item-%d" % i)) + field(2, entry("category", "c%d" % (i % 100)))
            + field(2, entry("score", (i * 7919) % 1000003)) + field(2, entry("price", (i % 10000) / 100))
        )
        changes += field(4, field(1, field(1, b"Item") + attributes))
    request = field(1, store.encode()) + bytes(changes)
    options = [("grpc.max_send_message_length", 1 << 28), ("grpc.max_receive_message_length", 1 << 28)]
    with grpc.insecure_channel("unix:" + socket, options=options) as channel:
        call = channel.unary_unary("/modeld.v1.QueryService/Apply")
        start = time.perf_counter()
        answer = call(request)
        elapsed = time.perf_counter() - start
    print("%.0f objects/s, answer %d bytes" % (count / elapsed, len(answer)))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "bulk":
        bulk(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        calls(sys.argv[2], int(sys.argv[3]))
