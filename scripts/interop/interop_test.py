#!/usr/bin/env python3
"""Interop test: Python's grpcio (the reference gRPC implementation) against a real modeld.

Usage: interop_test.py MODELD_BINARY [--stubs DIR]

Starts modeld in a fresh temporary directory, drives it over its Unix socket with stubs that
grpc_tools.protoc generated from Protos/ (scripts/interop/run.sh makes them), and stops it with
SIGTERM. Every check prints one line; the first failing check prints what it expected and what
it got, the daemon's stderr, and makes the script exit non-zero. The last line is the summary:
"interop: N passed, M failed".
"""

import argparse
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

# --- Arguments and generated stubs -------------------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("modeld", nargs="?", default=os.path.join(REPO, ".build", "debug", "modeld"),
                    help="the modeld binary (default .build/debug/modeld)")
parser.add_argument("--stubs", default=os.path.join(REPO, ".build", "interop-stubs"),
                    help="where run.sh generated the Python stubs (default .build/interop-stubs)")
parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
ARGS = parser.parse_args()

sys.path.insert(0, os.path.abspath(ARGS.stubs))

import grpc  # noqa: E402

# grpc.health.v1 is generated as top-level health_pb2 (run.sh compiles it with -I at its own
# folder), since a generated grpc/ package would be shadowed by grpcio's own `grpc` package.
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402
from google.protobuf.descriptor_pool import DescriptorPool  # noqa: E402
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (  # noqa: E402
    ProtoReflectionDescriptorDatabase)
from modeld.v1 import changes_pb2 as changes  # noqa: E402
from modeld.v1 import daemon_pb2, daemon_pb2_grpc  # noqa: E402
from modeld.v1 import predicate_pb2 as predicate  # noqa: E402
from modeld.v1 import queries_pb2, queries_pb2_grpc  # noqa: E402
from modeld.v1 import query_pb2 as query  # noqa: E402
from modeld.v1 import schema_pb2 as schema  # noqa: E402
from modeld.v1 import sessions_pb2, sessions_pb2_grpc  # noqa: E402
from modeld.v1 import stores_pb2, stores_pb2_grpc  # noqa: E402
from modeld.v1 import values_pb2 as values  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from watch_checks import run_watches  # noqa: E402

RPC_TIMEOUT = 15.0
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0

# --- Checks --------------------------------------------------------------------------------------


class CheckFailed(Exception):
    pass


PASSED = 0


def check(name, expected, got):
    """Passes when got == expected; otherwise fails with both."""
    global PASSED
    if expected != got:
        raise CheckFailed(f"{name}\n    expected: {expected!r}\n    got:      {got!r}")
    PASSED += 1
    print(f"ok {PASSED:3d} - {name}", flush=True)


def check_true(name, condition, detail=""):
    global PASSED
    if not condition:
        raise CheckFailed(f"{name}\n    {detail}" if detail else name)
    PASSED += 1
    print(f"ok {PASSED:3d} - {name}", flush=True)


def rpc_error(call, *args, **kwargs):
    """Runs a call (draining a stream) that must fail; returns its grpc.RpcError."""
    try:
        result = call(*args, timeout=RPC_TIMEOUT, **kwargs)
        if hasattr(result, "__iter__") and not hasattr(result, "ListFields"):
            result = list(result)
    except grpc.RpcError as error:
        return error
    raise CheckFailed(f"{getattr(call, '_method', call)!r} should have failed; it returned {result!r}")


def error_code(error):
    """The daemon's finer error code, from the trailing metadata `modeld-error-code`."""
    for key, value in error.trailing_metadata() or ():
        if key == "modeld-error-code":
            return value
    return None


def check_error(name, error, status, code=None):
    got = (error.code(), error_code(error)) if code is not None else error.code()
    expected = (status, code) if code is not None else status
    if got != expected:
        raise CheckFailed(f"{name}\n    expected: {expected!r}\n    got:      {got!r} "
                          f"(details: {error.details()!r}, metadata: {error.trailing_metadata()!r})")
    global PASSED
    PASSED += 1
    print(f"ok {PASSED:3d} - {name}: {error.code().name} {error_code(error)} ({error.details()})", flush=True)


# --- Values --------------------------------------------------------------------------------------

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def date_micros(text):
    day = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
    delta = day - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def string(s):
    return values.Value(string_value=s)


def date(text):
    return values.Value(date_micros=date_micros(text))


def double(d):
    return values.Value(double_value=d)


def boolean(b):
    return values.Value(bool_value=b)


def plain(value):
    """A Value as a plain Python value (dates as "date:<micros>"), for readable comparisons."""
    kind = value.WhichOneof("kind")
    if kind is None:
        return None
    if kind == "date_micros":
        return f"date:{value.date_micros}"
    return getattr(value, kind)


def plain_attributes(snapshot):
    return {name: plain(value) for name, value in snapshot.attributes.items()}


def to_one(uri):
    return values.RelationshipValue(to_one=uri)


def to_many(uris):
    return values.RelationshipValue(to_many=values.ObjectList(uris=list(uris)))


# --- The SampleTrips schema (Tests/Fixtures/SampleTrips.swift) as a modeld.v1.Schema -------------

T = schema.AttributeType


def attribute(name, type_, default=None, preserve=False, optional=False):
    a = schema.Attribute(name=name, type=type_, is_optional=optional, preserve_value_on_deletion=preserve)
    if default is not None:
        a.default_value.CopyFrom(default)
    return a


def names(*lists):
    return [schema.NameList(names=list(names_)) for names_ in lists]


def sample_trips_schema():
    return schema.Schema(entities=[
        schema.Entity(
            name="Trip",
            attributes=[
                attribute("name", T.ATTRIBUTE_TYPE_STRING, preserve=True),
                attribute("destination", T.ATTRIBUTE_TYPE_STRING),
                attribute("startDate", T.ATTRIBUTE_TYPE_DATE, preserve=True),
                attribute("endDate", T.ATTRIBUTE_TYPE_DATE, preserve=True),
            ],
            relationships=[
                schema.Relationship(name="bucketList", destination="BucketListItem", to_many=True,
                                    inverse="trip", delete_rule=schema.DELETE_RULE_CASCADE),
                schema.Relationship(name="livingAccommodation", destination="LivingAccommodation",
                                    inverse="trip", delete_rule=schema.DELETE_RULE_CASCADE),
            ],
            unique_constraints=names(["name", "startDate", "endDate"]),
            indexes=names(["name"], ["startDate"], ["endDate"], ["name", "startDate", "endDate"]),
        ),
        schema.Entity(
            name="PersonalTrip", superentity="Trip",
            attributes=[attribute("reason", T.ATTRIBUTE_TYPE_STRING, default=string("unknown"))],
        ),
        schema.Entity(
            name="BusinessTrip", superentity="Trip",
            attributes=[attribute("perdiem", T.ATTRIBUTE_TYPE_DOUBLE, default=double(0))],
        ),
        schema.Entity(
            name="BucketListItem",
            attributes=[
                attribute("title", T.ATTRIBUTE_TYPE_STRING),
                attribute("details", T.ATTRIBUTE_TYPE_STRING, default=string("")),
                attribute("hasReservation", T.ATTRIBUTE_TYPE_BOOL, default=boolean(False)),
                attribute("isInPlan", T.ATTRIBUTE_TYPE_BOOL, default=boolean(False)),
            ],
            relationships=[schema.Relationship(name="trip", destination="Trip")],
        ),
        schema.Entity(
            name="LivingAccommodation",
            attributes=[
                attribute("address", T.ATTRIBUTE_TYPE_STRING),
                attribute("placeName", T.ATTRIBUTE_TYPE_STRING),
                attribute("isConfirmed", T.ATTRIBUTE_TYPE_BOOL, default=boolean(False)),
            ],
            relationships=[schema.Relationship(name="trip", destination="Trip")],
        ),
    ])


# --- The daemon ----------------------------------------------------------------------------------


class Daemon:
    def __init__(self, binary, directory):
        self.binary = binary
        self.directory = directory
        self.socket = os.path.join(directory, "socket")
        self.stderr_path = os.path.join(directory, "modeld.stderr")
        self.process = None
        self.channel = None

    def start(self):
        if len(self.socket.encode()) >= 107:
            raise CheckFailed(f"socket path too long: {self.socket}")
        self.stderr_file = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            [self.binary, "--socket", self.socket, "--data-dir", os.path.join(self.directory, "data"),
             "--default-store", ""],
            stdin=subprocess.DEVNULL, stdout=self.stderr_file, stderr=self.stderr_file)
        self.channel = grpc.insecure_channel(f"unix://{self.socket}")
        health = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.monotonic() + START_TIMEOUT
        last = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CheckFailed(f"modeld exited at start-up with status {self.process.returncode}")
            if os.path.exists(self.socket):
                try:
                    response = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
                    if response.status == health_pb2.HealthCheckResponse.SERVING:
                        return response
                    last = response
                except grpc.RpcError as error:
                    last = error
            time.sleep(0.1)
        raise CheckFailed(f"modeld not SERVING within {START_TIMEOUT:.0f}s; last answer: {last!r}")

    def stop(self):
        """SIGTERM; returns the exit status (None if it had to be killed)."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.process is None:
            return None
        try:
            if self.process.poll() is not None:
                return self.process.returncode
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                print(f"modeld did not stop within {STOP_TIMEOUT:.0f}s of SIGTERM; killing it", file=sys.stderr)
                self.process.kill()
                self.process.wait()
                return None
        finally:
            self.stderr_file.close()

    def stderr(self):
        try:
            with open(self.stderr_path, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return "(no stderr file)"


# --- The test ------------------------------------------------------------------------------------

URI_PATTERN = re.compile(r"^modeld://([0-9A-Fa-f-]{36})/([A-Za-z_][A-Za-z0-9_]*)/([pt])(.+)$")


def uri_parts(uri):
    match = URI_PATTERN.match(uri)
    if not match:
        raise CheckFailed(f"not an object URI: {uri!r}")
    return match.groups()


def run(daemon):
    ch = daemon.channel
    health = health_pb2_grpc.HealthStub(ch)
    status = daemon_pb2_grpc.DaemonServiceStub(ch)
    stores = stores_pb2_grpc.StoreServiceStub(ch)
    sessions = sessions_pb2_grpc.SessionServiceStub(ch)
    queries = queries_pb2_grpc.QueryServiceStub(ch)
    t = RPC_TIMEOUT

    # Health and status.
    check("health: overall status is SERVING", health_pb2.HealthCheckResponse.SERVING,
          health.Check(health_pb2.HealthCheckRequest(service=""), timeout=t).status)
    services = ["modeld.v1.DaemonService", "modeld.v1.QueryService", "modeld.v1.SessionService",
                "modeld.v1.StoreService"]
    check("health: each modeld.v1 service is SERVING", [health_pb2.HealthCheckResponse.SERVING] * 4,
          [health.Check(health_pb2.HealthCheckRequest(service=s), timeout=t).status for s in services])
    check_error("health: an unknown service", rpc_error(health.Check, health_pb2.HealthCheckRequest(service="nope")),
                grpc.StatusCode.NOT_FOUND)

    # Server reflection, as generic tools use it: grpcio-reflection's own client, without our protos.
    reflection = ProtoReflectionDescriptorDatabase(ch)
    check("reflection: lists every service",
          sorted(services + ["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"]),
          sorted(reflection.get_services()))
    pool = DescriptorPool(reflection)
    fetch = pool.FindMethodByName("modeld.v1.QueryService.Fetch")
    check("reflection: resolves a method's request and response types",
          ("modeld.v1.StoreFetchRequest", "modeld.v1.FetchResponse", True),
          (fetch.input_type.full_name, fetch.output_type.full_name, fetch.server_streaming))
    check("reflection: and the fields of a type another file defines",
          ["entity", "predicate"], [f.name for f in pool.FindMessageTypeByName("modeld.v1.FetchRequest").fields][:2])
    missing = None
    try:
        pool.FindMessageTypeByName("modeld.v1.NoSuchMessage")
    except KeyError as error:
        missing = error
    check_true("reflection: an unknown symbol is not found", missing is not None)
    info = status.Status(daemon_pb2.StatusRequest(), timeout=t)
    check("status: pid is the process started", daemon.process.pid, info.pid)
    check("status: no stores yet (--default-store '')", 0, info.stores)

    # A store with the SampleTrips schema.
    store = "trips"
    created = stores.CreateStore(stores_pb2.CreateStoreRequest(name=store, kind=stores_pb2.STORE_KIND_SQLITE), timeout=t)
    check("CreateStore: name, kind sqlite, no schema yet",
          (store, stores_pb2.STORE_KIND_SQLITE, ""), (created.name, created.kind, created.schema_version_hash))
    store_uuid = created.uuid
    check_true("CreateStore: the store has a UUID", re.fullmatch(r"[0-9A-Fa-f-]{36}", store_uuid) is not None,
               f"got {store_uuid!r}")
    check("CreateStore: an SQLite file in the data directory",
          (os.path.join(daemon.directory, "data", "stores", store + ".sqlite"), True),
          (created.path, os.path.isfile(created.path)))
    check_error("CreateStore with a taken name", rpc_error(stores.CreateStore, stores_pb2.CreateStoreRequest(name=store)),
                grpc.StatusCode.ALREADY_EXISTS)
    # A request over --max-message-size (16 MiB by default) is refused by status, naming the
    # limit, while grpcio is still sending it: not a reset stream (CANCELLED).
    oversized = rpc_error(stores.CreateStore, stores_pb2.CreateStoreRequest(name="x" * (17 * 1024 * 1024)))
    check_error("a request over the maximum message size: RESOURCE_EXHAUSTED", oversized,
                grpc.StatusCode.RESOURCE_EXHAUSTED, "resourceExhausted")
    check_true("a request over the maximum message size: the message names the limit",
               "maximum message size" in (oversized.details() or ""), oversized.details())
    # Bytes that are not the request message: INVALID_ARGUMENT with modeld's error code.
    not_protobuf = grpc.insecure_channel(f"unix://{daemon.socket}").unary_unary(
        "/modeld.v1.StoreService/CreateStore", request_serializer=None, response_deserializer=None)
    garbled = rpc_error(not_protobuf, b"\xff" * 64)
    check_error("a request that is not protobuf: INVALID_ARGUMENT with modeld-error-code",
                garbled, grpc.StatusCode.INVALID_ARGUMENT, "invalidArgument")
    check_true("a request that is not protobuf: the message names the message expected, as the protos do",
               "is not a valid modeld.v1.CreateStoreRequest message" in (garbled.details() or ""), garbled.details())

    sent_schema = sample_trips_schema()
    applied = stores.ApplySchema(stores_pb2.ApplySchemaRequest(store=store, schema=sent_schema), timeout=t)
    check("ApplySchema: the store lists the five entities",
          sorted(["Trip", "PersonalTrip", "BusinessTrip", "BucketListItem", "LivingAccommodation"]),
          sorted(applied.entities))
    check_true("ApplySchema: the store has a schema version hash",
               re.fullmatch(r"[0-9a-f]{64}", applied.schema_version_hash) is not None,
               f"got {applied.schema_version_hash!r}")
    got_schema = stores.GetSchema(stores_pb2.GetSchemaRequest(store=store), timeout=t)
    check("GetSchema: same hash as ApplySchema", applied.schema_version_hash, got_schema.version_hash)

    def entity_map(s):
        return {e.name: e for e in s.entities}

    check("GetSchema: returns the schema applied (entity by entity)",
          {n: str(e) for n, e in entity_map(sent_schema).items()},
          {n: str(e) for n, e in entity_map(got_schema.schema).items()})
    again = stores.ApplySchema(stores_pb2.ApplySchemaRequest(store=store, schema=sent_schema), timeout=t)
    check("ApplySchema again with the same schema: allowed, same hash",
          applied.schema_version_hash, again.schema_version_hash)

    # Two sessions.
    alice = sessions.OpenSession(sessions_pb2.OpenSessionRequest(store=store, author="alice"), timeout=t)
    bob = sessions.OpenSession(sessions_pb2.OpenSessionRequest(store=store, author="bob"), timeout=t)
    check("OpenSession: both sessions name the store's UUID", (store_uuid, store_uuid), (alice.store_uuid, bob.store_uuid))
    check_true("OpenSession: distinct session ids", alice.session_id and alice.session_id != bob.session_id,
               f"alice {alice.session_id!r}, bob {bob.session_id!r}")

    def stage(session, *change_list):
        return list(sessions.Stage(sessions_pb2.StageRequest(session_id=session.session_id, changes=list(change_list)),
                                   timeout=t).uris)

    def save(session, return_transaction=False):
        return sessions.Save(sessions_pb2.SaveRequest(session_id=session.session_id,
                                                      return_transaction=return_transaction), timeout=t)

    def fetch_request(entity, text=None, sort=(), **kwargs):
        request = query.FetchRequest(entity=entity, sort=[query.SortKey(key_path=k, descending=d) for k, d in sort],
                                     **kwargs)
        if text is not None:
            request.predicate.text = text
        return request

    def session_fetch(session, request):
        objects = []
        for response in sessions.Fetch(sessions_pb2.SessionFetchRequest(session_id=session.session_id, fetch=request),
                                       timeout=t):
            objects.extend(response.objects)
        return objects

    def session_count(session, request):
        return sessions.Count(sessions_pb2.SessionFetchRequest(session_id=session.session_id, fetch=request),
                              timeout=t).count

    def store_fetch(request):
        objects, count = [], None
        for response in queries.Fetch(queries_pb2.StoreFetchRequest(store=store, fetch=request), timeout=t):
            objects.extend(response.objects)
            if response.HasField("count"):
                count = response.count
        return objects, count

    def get_objects(uris):
        return list(queries.GetObjects(queries_pb2.GetObjectsRequest(store=store, uris=list(uris)), timeout=t).objects)

    def insert(entity, attributes, relationships=None, temporary_uri=""):
        return changes.Change(insert=changes.Insert(entity=entity, attributes=attributes,
                                                    relationships=relationships or {}, temporary_uri=temporary_uri))

    def trip(entity, name, destination, start, end, **extra):
        attrs = {"name": string(name), "destination": string(destination),
                 "startDate": date(start), "endDate": date(end)}
        attrs.update(extra)
        return insert(entity, attrs)

    # Alice inserts five trips; nobody else sees them until she saves.
    trips = [
        trip("PersonalTrip", "Tokyo Spring", "Japan", "2026-03-10", "2026-03-20", reason=string("family")),
        trip("BusinessTrip", "Jakarta Summit", "jakarta", "2026-05-02", "2026-05-06", perdiem=double(150.0)),
        trip("Trip", "Jordan Hike", "Jordan", "2025-11-01", "2025-11-10"),
        trip("PersonalTrip", "Paris Weekend", "Paris", "2026-04-01", "2026-04-03"),
        trip("Trip", "Jeju Retreat", "Jeju Island", "2026-08-15", "2026-08-22"),
    ]
    trip_names = ["Tokyo Spring", "Jakarta Summit", "Jordan Hike", "Paris Weekend", "Jeju Retreat"]
    temporary = stage(alice, *trips)
    check("Stage: one temporary URI per insert, of the right entity and store",
          [(store_uuid, e, "t") for e in ["PersonalTrip", "BusinessTrip", "Trip", "PersonalTrip", "Trip"]],
          [uri_parts(u)[:3] for u in temporary])
    all_trips = fetch_request("Trip", sort=[("name", False)])
    check("before save: alice's session counts her 5 trips", 5, session_count(alice, all_trips))
    check("before save: alice's session fetches them", sorted(trip_names),
          [o.attributes["name"].string_value for o in session_fetch(alice, all_trips)])
    check("before save: alice's session filters and sorts her unsaved trips",
          ["Jeju Retreat", "Jakarta Summit", "Tokyo Spring"],
          [o.attributes["name"].string_value for o in session_fetch(alice, fetch_request(
              "Trip", text='destination BEGINSWITH[c] "j" AND startDate > "2026-01-01"', sort=[("startDate", True)]))])
    check("before save: bob's session counts 0 trips", 0, session_count(bob, all_trips))
    check("before save: bob's session fetches none", [], session_fetch(bob, all_trips))
    check("before save: the store (QueryService.Count) has 0 trips", 0,
          queries.Count(queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=t).count)
    described = sessions.DescribeSession(sessions_pb2.DescribeSessionRequest(session_id=alice.session_id), timeout=t)
    check("DescribeSession: alice has unsaved changes, the 5 inserts", (True, sorted(temporary)),
          (described.unsaved_changes, sorted(described.inserted)))

    first_save = save(alice)
    check("Save: remaps exactly the 5 temporary URIs", sorted(temporary), sorted(first_save.remapped.keys()))
    permanent = [first_save.remapped[u] for u in temporary]
    check("Save: permanent URIs keep store and entity, with a p<key>",
          [(store_uuid, uri_parts(u)[1], "p") for u in temporary], [uri_parts(u)[:3] for u in permanent])
    check_true("Save: returns a history token", first_save.HasField("token"), str(first_save))
    token_after_first_save = first_save.token
    uri_of = dict(zip(trip_names, permanent))

    check("after save: bob's session counts 5 trips", 5, session_count(bob, all_trips))
    check("after save: bob's session fetches them, by name", sorted(trip_names),
          [o.attributes["name"].string_value for o in session_fetch(bob, all_trips)])
    check("after save: alice's session has nothing unsaved", False,
          sessions.DescribeSession(sessions_pb2.DescribeSessionRequest(session_id=alice.session_id),
                                   timeout=t).unsaved_changes)

    # A text predicate and a sort.
    text = 'destination BEGINSWITH[c] "j" AND startDate > "2026-01-01"'
    objects, count = store_fetch(fetch_request("Trip", text=text, sort=[("startDate", True)]))
    check(f"QueryService.Fetch {text!r} by startDate descending: names in order",
          ["Jeju Retreat", "Jakarta Summit", "Tokyo Spring"], [o.attributes["name"].string_value for o in objects])
    check("QueryService.Fetch: count in the last response", 3, count)
    objects, _ = store_fetch(fetch_request("Trip", text=text, sort=[("startDate", False)], limit=2, batch_size=1))
    check("QueryService.Fetch ascending, limit 2, batches of 1", ["Tokyo Spring", "Jakarta Summit"],
          [o.attributes["name"].string_value for o in objects])

    # Inheritance: fetching Trip returns the subentities' objects, with their own attributes.
    objects, _ = store_fetch(fetch_request("Trip", text='@entity == "PersonalTrip"', sort=[("name", False)]))
    check("Fetch Trip where @entity == PersonalTrip: PersonalTrip objects with their reason (default 'unknown')",
          [("PersonalTrip", "Paris Weekend", "unknown"), ("PersonalTrip", "Tokyo Spring", "family")],
          [(uri_parts(o.uri)[1], o.attributes["name"].string_value, o.attributes["reason"].string_value)
           for o in objects])
    objects, _ = store_fetch(fetch_request("Trip", sort=[("startDate", False)]))
    check("Fetch Trip: every trip, each as its concrete entity",
          [("Jordan Hike", "Trip"), ("Tokyo Spring", "PersonalTrip"), ("Paris Weekend", "PersonalTrip"),
           ("Jakarta Summit", "BusinessTrip"), ("Jeju Retreat", "Trip")],
          [(o.attributes["name"].string_value, uri_parts(o.uri)[1]) for o in objects])
    business = [o for o in objects if uri_parts(o.uri)[1] == "BusinessTrip"]
    check("Fetch Trip: the BusinessTrip carries perdiem", [150.0],
          [o.attributes["perdiem"].double_value for o in business])
    objects, _ = store_fetch(fetch_request("Trip", sort=[("name", False)], exclude_subentities=True))
    check("Fetch Trip excluding subentities: only plain trips", ["Jeju Retreat", "Jordan Hike"],
          [o.attributes["name"].string_value for o in objects])
    check_error("Fetch Trip where reason == 'family': a subentity's attribute is not Trip's (as in Core Data)",
                rpc_error(queries.Fetch, queries_pb2.StoreFetchRequest(
                    store=store, fetch=fetch_request("Trip", text='reason == "family"'))),
                grpc.StatusCode.INVALID_ARGUMENT, "unknownProperty")
    objects, _ = store_fetch(fetch_request("PersonalTrip", text='reason == "family"'))
    check("Fetch PersonalTrip where reason == 'family'", ["Tokyo Spring"],
          [o.attributes["name"].string_value for o in objects])

    # URIs resolve to the objects saved.
    resolved = get_objects([uri_of["Tokyo Spring"], uri_of["Jakarta Summit"], uri_of["Jordan Hike"]])
    check("GetObjects: three URIs, three objects, in order",
          [uri_of["Tokyo Spring"], uri_of["Jakarta Summit"], uri_of["Jordan Hike"]], [o.uri for o in resolved])
    check("GetObjects: PersonalTrip values",
          {"name": "Tokyo Spring", "destination": "Japan", "startDate": f"date:{date_micros('2026-03-10')}",
           "endDate": f"date:{date_micros('2026-03-20')}", "reason": "family"},
          plain_attributes(resolved[0]))
    check("GetObjects: BusinessTrip values",
          {"name": "Jakarta Summit", "destination": "jakarta", "startDate": f"date:{date_micros('2026-05-02')}",
           "endDate": f"date:{date_micros('2026-05-06')}", "perdiem": 150.0},
          plain_attributes(resolved[1]))
    check("GetObjects: versions start at 1", [1, 1, 1], [o.version for o in resolved])
    check("GetObjects: a missing key of this store is left out", [],
          get_objects([f"modeld://{store_uuid}/Trip/p999999"]))
    other_store = str(uuid.uuid4())
    check_error("GetObjects: a URI of another store", rpc_error(
        queries.GetObjects, queries_pb2.GetObjectsRequest(store=store, uris=[f"modeld://{other_store}/Trip/p1"])),
        grpc.StatusCode.INVALID_ARGUMENT)
    check_error("GetObjects: not a URI", rpc_error(
        queries.GetObjects, queries_pb2.GetObjectsRequest(store=store, uris=["https://example.com/Trip/p1"])),
        grpc.StatusCode.INVALID_ARGUMENT)

    # Batches that change nothing save nothing and answer no token (queries.proto's BatchResult).
    # Release builds of Swift 6.3.1 once answered these with whatever the memory held.
    latest = stores.GetStore(stores_pb2.GetStoreRequest(name=store), timeout=t).history_token
    held = queries.BatchUpdate(queries_pb2.BatchUpdateRequest(
        store=store, entity="Trip", predicate=predicate.Predicate(text='name == "Jordan Hike"'),
        attributes={"destination": string("Jordan")}), timeout=t)
    check("BatchUpdate to the values already held: one matched, no token", (1, False),
          (held.matched, held.HasField("token")))
    unmatched = queries.BatchUpdate(queries_pb2.BatchUpdateRequest(
        store=store, entity="Trip", predicate=predicate.Predicate(text='name == "Nowhere"'),
        attributes={"destination": string("Nowhere")}), timeout=t)
    check("BatchUpdate matching nothing: no token", (0, False), (unmatched.matched, unmatched.HasField("token")))
    undeleted = queries.BatchDelete(queries_pb2.BatchDeleteRequest(
        store=store, entity="Trip", predicate=predicate.Predicate(text='name == "Nowhere"')), timeout=t)
    check("BatchDelete matching nothing: no token, nothing deleted", (0, False, 0),
          (undeleted.matched, undeleted.HasField("token"), undeleted.deleted))
    check("Batches that changed nothing wrote no history", latest,
          stores.GetStore(stores_pb2.GetStoreRequest(name=store), timeout=t).history_token)

    # A unique constraint conflict fails the save and leaves the session's changes staged.
    duplicate = stage(alice, trip("Trip", "Tokyo Spring", "Somewhere else", "2026-03-10", "2026-03-20"))
    check_error("Save of a duplicate name+startDate+endDate", rpc_error(
        sessions.Save, sessions_pb2.SaveRequest(session_id=alice.session_id)),
        grpc.StatusCode.ALREADY_EXISTS, "uniqueConstraint")
    described = sessions.DescribeSession(sessions_pb2.DescribeSessionRequest(session_id=alice.session_id), timeout=t)
    check("after the failed save: the session still has its insert", (True, duplicate),
          (described.unsaved_changes, list(described.inserted)))
    check("after the failed save: alice's session sees 6 trips", 6, session_count(alice, all_trips))
    check("after the failed save: the store still has 5 trips", 5,
          queries.Count(queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=t).count)
    rolled_back = sessions.Rollback(sessions_pb2.RollbackRequest(session_id=alice.session_id), timeout=t)
    check("Rollback: discards the one change", 1, rolled_back.discarded_changes)
    check("after Rollback: alice's session sees 5 trips, nothing unsaved", (5, False),
          (session_count(alice, all_trips),
           sessions.DescribeSession(sessions_pb2.DescribeSessionRequest(session_id=alice.session_id),
                                    timeout=t).unsaved_changes))
    check("after Rollback: Save has nothing to save (no token)", False, save(alice).HasField("token"))

    # Bob inserts a trip with an accommodation and two bucket list items, across two Stage calls.
    items = stage(bob,
                  insert("BucketListItem", {"title": string("Jungle canopy walk"), "isInPlan": boolean(True)}),
                  insert("BucketListItem", {"title": string("Night safari"), "details": string("bring a torch")}))
    trek_temporary = f"modeld://{store_uuid}/Trip/t{uuid.uuid4()}"
    staged = stage(bob,
                   changes.Change(insert=changes.Insert(
                       entity="Trip", temporary_uri=trek_temporary,
                       attributes={"name": string("Jungle Trek"), "destination": string("Borneo"),
                                   "startDate": date("2026-09-01"), "endDate": date("2026-09-12")},
                       relationships={"bucketList": to_many(items)})),
                   insert("LivingAccommodation", {"address": string("1 River Road"), "placeName": string("Eco Lodge")},
                          {"trip": to_one(trek_temporary)}))
    check("Stage with Insert.temporary_uri: the trip keeps the URI given", trek_temporary, staged[0])
    accommodation_temporary = staged[1]
    trek_save = save(bob)
    check("Save: remaps the trip, the accommodation and both items",
          sorted(items + staged), sorted(trek_save.remapped.keys()))
    trek = trek_save.remapped[trek_temporary]
    accommodation = trek_save.remapped[accommodation_temporary]
    item_uris = [trek_save.remapped[u] for u in items]
    token_trek_insert = trek_save.token
    resolved = {o.uri: o for o in get_objects([trek, accommodation] + item_uris)}
    check("GetObjects: the trip's bucketList holds both items (permanent URIs)", sorted(item_uris),
          sorted(resolved[trek].relationships["bucketList"].to_many.uris))
    check("GetObjects: the trip's livingAccommodation (set through the inverse)", accommodation,
          resolved[trek].relationships["livingAccommodation"].to_one)
    check("GetObjects: each item's trip (the inverse)", [trek, trek],
          [resolved[u].relationships["trip"].to_one for u in item_uris])
    check("GetObjects: item values with defaults",
          [{"title": "Jungle canopy walk", "details": "", "hasReservation": False, "isInPlan": True},
           {"title": "Night safari", "details": "bring a torch", "hasReservation": False, "isInPlan": False}],
          [plain_attributes(resolved[u]) for u in item_uris])
    check("GetObjects: accommodation values with defaults",
          {"address": "1 River Road", "placeName": "Eco Lodge", "isConfirmed": False},
          plain_attributes(resolved[accommodation]))

    # Alice updates a trip: a save by another author in between.
    updated = stage(alice, changes.Change(update=changes.Update(uri=uri_of["Paris Weekend"],
                                                                attributes={"destination": string("Paris, France")})))
    check("Stage update: returns the object's URI", [uri_of["Paris Weekend"]], updated)
    update_save = save(alice)
    check("Save of an update: nothing remapped, a token", (0, True),
          (len(update_save.remapped), update_save.HasField("token")))
    check("after the update: version 2 and the new destination", (2, "Paris, France"),
          [(o.version, o.attributes["destination"].string_value) for o in get_objects([uri_of["Paris Weekend"]])][0])

    # Bob deletes the trip: the cascade takes the accommodation and the items.
    check("Stage delete: returns the object's URI", [trek], stage(bob, changes.Change(delete=changes.Delete(uri=trek))))
    delete_save = save(bob, return_transaction=True)
    transaction = delete_save.transaction
    check("Save(return_transaction): the transaction is the save's", (delete_save.token, "bob", False),
          (transaction.token, transaction.author, delete_save.transaction_truncated))
    check("Save(return_transaction): deletes of the trip, its accommodation and both items",
          sorted([(changes.CHANGE_KIND_DELETE, u) for u in [trek, accommodation] + item_uris]),
          sorted((c.kind, c.uri) for c in transaction.changes))
    tombstones = {c.uri: {k: plain(v) for k, v in c.tombstone.items()} for c in transaction.changes}
    trek_tombstone = {"name": "Jungle Trek", "startDate": f"date:{date_micros('2026-09-01')}",
                      "endDate": f"date:{date_micros('2026-09-12')}"}
    check("Save(return_transaction): the trip's tombstone keeps name, startDate, endDate", trek_tombstone,
          tombstones.get(trek))
    check("after the delete: GetObjects finds none of the four", [],
          get_objects([trek, accommodation] + item_uris))
    check("after the delete: bob's session sees none of them either", [],
          list(sessions.GetObjects(sessions_pb2.SessionGetObjectsRequest(
              session_id=bob.session_id, uris=[trek, accommodation] + item_uris), timeout=t).objects))
    check("after the delete: no bucket list items or accommodations left", (0, 0),
          tuple(queries.Count(queries_pb2.StoreFetchRequest(store=store, fetch=query.FetchRequest(entity=e)),
                              timeout=t).count for e in ["BucketListItem", "LivingAccommodation"]))

    # History after the first save's token: exactly the saves made since.
    transactions = []
    for response in queries.History(queries_pb2.HistoryRequest(store=store, after=token_after_first_save), timeout=t):
        for tx in response.transactions:
            if transactions and transactions[-1].token == tx.token:
                transactions[-1].changes.extend(tx.changes)  # a continued transaction
            else:
                transactions.append(tx)
    check("History after the first save: the three saves since, in order",
          [token_trek_insert, update_save.token, delete_save.token], [tx.token for tx in transactions])
    check("History: tokens have no gaps", [token_after_first_save + 1, token_after_first_save + 2,
                                           token_after_first_save + 3], [tx.token for tx in transactions])
    check("History: authors", ["bob", "alice", "bob"], [tx.author for tx in transactions])
    kinds = [sorted(changes.ChangeKind.Name(c.kind) for c in tx.changes) for tx in transactions]
    check("History: kinds of changes per transaction",
          [["CHANGE_KIND_INSERT"] * 4, ["CHANGE_KIND_UPDATE"], ["CHANGE_KIND_DELETE"] * 4], kinds)
    check("History: the insert transaction names the four new objects",
          sorted([trek, accommodation] + item_uris), sorted(c.uri for c in transactions[0].changes))
    check("History: the update names the object and its changed property",
          [(uri_of["Paris Weekend"], ["destination"])],
          [(c.uri, list(c.changed_properties)) for c in transactions[1].changes])
    history_tombstones = {c.uri: {k: plain(v) for k, v in c.tombstone.items()} for c in transactions[2].changes}
    check("History: the trip's delete carries its tombstone (name, startDate, endDate)", trek_tombstone,
          history_tombstones.get(trek))
    check("History: the delete transaction equals the one Save returned", transaction, transactions[2])
    check_true("History: timestamps do not go backwards",
               all(a.timestamp_micros <= b.timestamp_micros for a, b in zip(transactions, transactions[1:])),
               str([tx.timestamp_micros for tx in transactions]))
    now = int(time.time() * 1_000_000)
    check_true("History: timestamps are of the last minute (microseconds since 1970)",
               all(now - 60_000_000 <= tx.timestamp_micros <= now + 1_000_000 for tx in transactions),
               f"now {now}, got {[tx.timestamp_micros for tx in transactions]}")
    first = list(queries.History(queries_pb2.HistoryRequest(store=store, limit=1), timeout=t))
    check("History without `after`, limit 1: alice's first save with five inserts",
          [(token_after_first_save, "alice", 5)],
          [(tx.token, tx.author, len(tx.changes)) for r in first for tx in r.transactions])
    check("GetStore: the latest history token is the delete's", delete_save.token,
          stores.GetStore(stores_pb2.GetStoreRequest(name=store), timeout=t).history_token)

    # Bad input: each with its status code; the daemon answers after each.
    def still_answers(after):
        check(f"after {after}: the daemon still answers", (health_pb2.HealthCheckResponse.SERVING, 5),
              (health.Check(health_pb2.HealthCheckRequest(service=""), timeout=t).status,
               queries.Count(queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=t).count))

    check_error("bad input: unknown entity in a fetch", rpc_error(
        queries.Fetch, queries_pb2.StoreFetchRequest(store=store, fetch=query.FetchRequest(entity="Spaceship"))),
        grpc.StatusCode.INVALID_ARGUMENT, "unknownEntity")
    still_answers("an unknown entity")

    error = rpc_error(queries.Fetch, queries_pb2.StoreFetchRequest(
        store=store, fetch=fetch_request("Trip", text='name == "x" AND startDate >')))
    check_error("bad input: malformed predicate text", error, grpc.StatusCode.INVALID_ARGUMENT, "invalidPredicate")
    check_true("bad input: the predicate error names the column", "column" in (error.details() or ""),
               f"details: {error.details()!r}")
    still_answers("a malformed predicate")

    check_error("bad input: a string attribute given an int", rpc_error(
        sessions.Stage, sessions_pb2.StageRequest(session_id=alice.session_id, changes=[
            trip("Trip", "Fine", "Fine", "2026-01-01", "2026-01-02"),
            insert("Trip", {"name": values.Value(int_value=42), "destination": string("Nowhere"),
                            "startDate": date("2026-01-01"), "endDate": date("2026-01-02")})])),
        grpc.StatusCode.INVALID_ARGUMENT, "typeMismatch")
    check("bad input: the failed Stage kept none of its changes", False,
          sessions.DescribeSession(sessions_pb2.DescribeSessionRequest(session_id=alice.session_id),
                                   timeout=t).unsaved_changes)
    check_error("bad input: a predicate comparing a date with a bool", rpc_error(
        queries.Fetch, queries_pb2.StoreFetchRequest(store=store, fetch=fetch_request("Trip", text="startDate == true"))),
        grpc.StatusCode.INVALID_ARGUMENT)
    still_answers("a wrong value type")

    check_error("bad input: a missing store (GetStore)", rpc_error(
        stores.GetStore, stores_pb2.GetStoreRequest(name="no-such-store")), grpc.StatusCode.NOT_FOUND, "notFound")
    check_error("bad input: a missing store (OpenSession)", rpc_error(
        sessions.OpenSession, sessions_pb2.OpenSessionRequest(store="no-such-store", author="eve")),
        grpc.StatusCode.NOT_FOUND)
    still_answers("a missing store")

    check_error("bad input: an unknown session id", rpc_error(
        sessions.DescribeSession, sessions_pb2.DescribeSessionRequest(session_id=str(uuid.uuid4()))),
        grpc.StatusCode.NOT_FOUND)
    closed = sessions.OpenSession(sessions_pb2.OpenSessionRequest(store=store, author="carol"), timeout=t)
    sessions.CloseSession(sessions_pb2.CloseSessionRequest(session_id=closed.session_id), timeout=t)
    check_error("bad input: a closed session's id", rpc_error(
        sessions.Count, sessions_pb2.SessionFetchRequest(session_id=closed.session_id, fetch=all_trips)),
        grpc.StatusCode.NOT_FOUND)
    still_answers("a closed session")

    check_error("bad input: an invalid store name '../etc'", rpc_error(
        stores.CreateStore, stores_pb2.CreateStoreRequest(name="../etc")), grpc.StatusCode.INVALID_ARGUMENT)
    check_true("bad input: nothing created outside the data directory",
               not os.path.exists(os.path.join(daemon.directory, "etc")), "found <tmp>/etc")
    still_answers("an invalid store name")

    check_error("bad input: an access level that is neither READ nor WRITE", rpc_error(
        stores.GrantAccess, stores_pb2.GrantAccessRequest(store=store, grant=stores_pb2.AccessGrant(
            principal=stores_pb2.AccessPrincipal(user="root"), level=7))),
        grpc.StatusCode.INVALID_ARGUMENT, "invalidArgument")
    still_answers("an unknown access level")

    check_error("bad input: a backend that is not the URL's", rpc_error(
        stores.CreateStore, stores_pb2.CreateStoreRequest(
            name="mixed", backend="memory", url="sqlite://" + os.path.join(daemon.directory, "mixed.sqlite"))),
        grpc.StatusCode.INVALID_ARGUMENT, "invalidArgument")
    check_true("bad input: nothing made for the mixed request",
               not os.path.exists(os.path.join(daemon.directory, "mixed.sqlite")), "found mixed.sqlite")
    still_answers("a backend beside another's URL")

    # More calls at once on one connection than the daemon takes (100 streams, said in its
    # SETTINGS): grpcio queues the rest, and every one is answered (they hung or were refused).
    futures = [queries.Count.future(queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=60)
               for _ in range(300)]
    outcomes = []
    for future in futures:
        try:
            outcomes.append(future.result().count)
        except grpc.RpcError as error:
            outcomes.append(error.code().name)
    check_true("300 calls at once on one connection: every one answered",
               all(isinstance(outcome, int) for outcome in outcomes),
               f"outcomes: {sorted(set(map(str, outcomes)))}")

    # Close the sessions.
    for name, session in [("alice", alice), ("bob", bob)]:
        closed = sessions.CloseSession(sessions_pb2.CloseSessionRequest(session_id=session.session_id), timeout=t)
        check(f"CloseSession {name}: nothing discarded", 0, closed.discarded_changes)
    check("Status: no sessions open, one store", (0, 1),
          (lambda s: (s.open_sessions, s.stores))(status.Status(daemon_pb2.StatusRequest(), timeout=t)))

    # A migration of the store with its data: Trip gains an optional budget.
    trips_before = queries.Count(queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=t).count
    old_hash = stores.GetStore(stores_pb2.GetStoreRequest(name=store), timeout=t).schema_version_hash
    budgeted = sample_trips_schema()
    budgeted.entities[0].attributes.append(attribute("budget", T.ATTRIBUTE_TYPE_DOUBLE, optional=True))
    planned = stores.ApplySchema(stores_pb2.ApplySchemaRequest(store=store, schema=budgeted, dry_run=True), timeout=t)
    check("migration dry run: one step, adding budget to every trip, not applied",
          ([("addAttribute", "Trip", trips_before)], False, old_hash),
          ([(step.kind, step.entity, step.objects) for step in planned.migration.steps], planned.migration.applied,
           planned.schema_version_hash))
    migrated = stores.ApplySchema(
        stores_pb2.ApplySchemaRequest(store=store, schema=budgeted, author="py-migrator"), timeout=t)
    check("migration: applied, from the old version to a new one",
          (True, old_hash, migrated.schema_version_hash),
          (migrated.migration.applied, migrated.migration.from_version, migrated.migration.to_version))
    check_true("migration: the version hash moved", migrated.schema_version_hash != old_hash)
    after_migration = [o for r in queries.Fetch(queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=t)
                       for o in r.objects]
    check("migration: every trip is still there, with a nil budget",
          (trips_before, [None] * trips_before),
          (len(after_migration), [plain(o.attributes["budget"]) if "budget" in o.attributes else None
                                  for o in after_migration]))
    last = [tx for r in queries.History(queries_pb2.HistoryRequest(store=store, after=migrated.history_token - 1),
                                        timeout=t) for tx in r.transactions]
    check("migration: history records it, by its author, with both versions",
          [("py-migrator", 0, old_hash, migrated.schema_version_hash)],
          [(tx.author, len(tx.changes), tx.schema_change.from_version, tx.schema_change.to_version) for tx in last])
    no_destination = sample_trips_schema()
    del no_destination.entities[0].attributes[1]
    error = rpc_error(stores.ApplySchema, stores_pb2.ApplySchemaRequest(store=store, schema=no_destination))
    check_error("migration: removing an attribute with data needs allow_data_loss", error,
                grpc.StatusCode.FAILED_PRECONDITION, "schemaMismatch")
    check_true("migration: the refusal names what would be lost", "remove destination" in (error.details() or ""),
               f"details: {error.details()!r}")
    still_answers("a refused migration")

    # A staged migration: a migration session steps to a schema with a label, fills it from the
    # old values, and commits it as one unit; meanwhile the store answers UNAVAILABLE.
    labelled = sample_trips_schema()
    labelled.entities[0].attributes.append(attribute("budget", T.ATTRIBUTE_TYPE_DOUBLE, optional=True))
    labelled.entities[0].attributes.append(attribute("label", T.ATTRIBUTE_TYPE_STRING, optional=True))
    migration = sessions.BeginMigration(sessions_pb2.BeginMigrationRequest(store=store, author="py-stager"), timeout=t)
    error = rpc_error(queries.Count, queries_pb2.StoreFetchRequest(store=store, fetch=all_trips))
    check_error("staged migration: the store is unavailable meanwhile", error, grpc.StatusCode.UNAVAILABLE)
    check_true("staged migration: the refusal says the store is migrating", "is migrating" in (error.details() or ""),
               f"details: {error.details()!r}")
    step = sessions.StepMigration(sessions_pb2.StepMigrationRequest(session_id=migration.session_id, schema=labelled),
                                  timeout=t)
    check("staged migration: the step adds label to every trip", [("addAttribute", "Trip", trips_before)],
          [(s.kind, s.entity, s.objects) for s in step.steps])
    in_migration = session_fetch(migration, fetch_request("Trip"))
    stage(migration, *[changes.Change(update=changes.Update(
        uri=o.uri, attributes={"label": string(plain(o.attributes["name"]) + " in " + plain(o.attributes["destination"]))}))
        for o in in_migration])
    save(migration)
    committed = sessions.CommitMigration(sessions_pb2.CommitMigrationRequest(session_id=migration.session_id),
                                         timeout=t)
    check_true("staged migration: committed, at a new version",
               committed.schema_version_hash not in ("", migrated.schema_version_hash), committed.schema_version_hash)
    labels = sorted(plain(o.attributes["label"]) for r in queries.Fetch(
        queries_pb2.StoreFetchRequest(store=store, fetch=all_trips), timeout=t) for o in r.objects)
    check("staged migration: every trip has the label its stage wrote",
          sorted(plain(o.attributes["name"]) + " in " + plain(o.attributes["destination"]) for o in in_migration), labels)
    history = [tx for r in queries.History(queries_pb2.HistoryRequest(store=store, after=migrated.history_token),
                                           timeout=t) for tx in r.transactions]
    check("staged migration: history has the step and the stage's save, by the stager",
          [("py-stager", True), ("py-stager", False)],
          [(tx.author, tx.HasField("schema_change")) for tx in history])
    # Closing a migration session rolls it back.
    migration = sessions.BeginMigration(sessions_pb2.BeginMigrationRequest(store=store), timeout=t)
    sessions.StepMigration(sessions_pb2.StepMigrationRequest(session_id=migration.session_id, schema=budgeted,
                                                             allow_data_loss=True), timeout=t)
    sessions.CloseSession(sessions_pb2.CloseSessionRequest(session_id=migration.session_id), timeout=t)
    check("staged migration: a closed one leaves the store as it was", committed.schema_version_hash,
          stores.GetStore(stores_pb2.GetStoreRequest(name=store), timeout=t).schema_version_hash)
    still_answers("a staged migration")

    # Live queries (QueryService.Watch), on a store of their own.
    run_watches(ch, sample_trips_schema(), t, check, check_true, check_error, rpc_error)
    still_answers("watches")

    # Backup (server streaming) and restore (client streaming), as any gRPC client makes them.
    source = stores.GetStore(stores_pb2.GetStoreRequest(name=store), timeout=t)
    parts = list(stores.BackupStore(stores_pb2.BackupStoreRequest(name=store), timeout=t))
    info = parts[0].info
    backup = b"".join(part.data for part in parts)
    check("BackupStore: the store's UUID, token and size", (source.uuid, source.history_token, len(backup)),
          (info.uuid, info.history_token, info.size))
    check("BackupStore: an SQLite file", b"SQLite format 3\0", backup[:16])

    def chunks(name, data, **first):
        yield stores_pb2.RestoreStoreRequest(name=name, data=data[:100_000], **first)
        for start in range(100_000, len(data), 100_000):
            yield stores_pb2.RestoreStoreRequest(data=data[start:start + 100_000])

    restored = stores.RestoreStore(chunks("py-restored", backup, new_identity=True), timeout=t)
    check("RestoreStore: the backup's token and schema, a new UUID",
          (source.history_token, source.schema_version_hash, True),
          (restored.history_token, restored.schema_version_hash, restored.uuid != source.uuid))
    corrupt = backup[:8192] + b"\x5a" * 4096 + backup[12288:]
    check_error("RestoreStore of a corrupt file", rpc_error(stores.RestoreStore, chunks("py-corrupt", corrupt)),
                grpc.StatusCode.INVALID_ARGUMENT, "invalidArgument")
    check_error("RestoreStore over a taken name", rpc_error(stores.RestoreStore, chunks(store, backup)),
                grpc.StatusCode.ALREADY_EXISTS)
    check("RestoreStore: nothing made of refused files", ["py-restored"],
          [s.name for s in stores.ListStores(stores_pb2.ListStoresRequest(), timeout=t).stores if s.name.startswith("py-")])
    still_answers("backup and restore")

    # Apply of plain inserts alone (what a bulk load sends): a `remapped` entry per object under
    # a temporary URI made up for it, or, with answer_runs, the objects as runs in the order of
    # the inserts, which history lists in that order too.
    for backend in ["sqlite", "memory"]:
        bulk_loads(stores, queries, t, backend)


def bulk_loads(stores, queries, t, backend):
    """Apply of plain inserts, remapped or answered as runs, on a store of `backend`: the memory
    backend answers runs as SQLite's does."""
    bulk = f"interop-bulk-{backend}"
    stores.CreateStore(stores_pb2.CreateStoreRequest(name=bulk, backend=backend), timeout=t)
    stores.ApplySchema(stores_pb2.ApplySchemaRequest(store=bulk, schema=schema.Schema(entities=[
        schema.Entity(name="Reading", attributes=[attribute("station", T.ATTRIBUTE_TYPE_STRING)]),
        schema.Entity(name="Sensor", attributes=[attribute("code", T.ATTRIBUTE_TYPE_STRING)])])), timeout=t)

    def readings(count, first):
        return [changes.Change(insert=changes.Insert(entity="Reading", attributes={"station": string(f"s{n}")}))
                for n in range(first, first + count)]

    plain_save = queries.Apply(queries_pb2.ApplyRequest(store=bulk, changes=readings(3, 0)), timeout=t)
    check(f"Apply of plain inserts ({backend}): a remapped entry per object, no runs", (3, 0),
          (len(plain_save.remapped), len(plain_save.inserted_runs)))
    check(f"Apply of plain inserts ({backend}): the made-up URIs are temporary, the others permanent",
          [("t", "p")] * 3, [(uri_parts(k)[2], uri_parts(v)[2]) for k, v in plain_save.remapped.items()])
    sensor = changes.Change(insert=changes.Insert(entity="Sensor", attributes={"code": string("x")}))
    run_save = queries.Apply(queries_pb2.ApplyRequest(
        store=bulk, changes=readings(400, 3) + [sensor] + readings(2, 403), answer_runs=True,
        return_transaction=True), timeout=t)
    check(f"Apply with answer_runs ({backend}): nothing remapped, three runs of 400, 1 and 2", (0, [400, 1, 2]),
          (len(run_save.remapped), [r.count for r in run_save.inserted_runs]))
    answered = []
    for r in run_save.inserted_runs:
        store_part, entity, _, key = uri_parts(r.first_uri)
        answered += [f"modeld://{store_part}/{entity}/p{int(key) + n}" for n in range(r.count)]
    check(f"Apply with answer_runs ({backend}): the runs' URIs are the transaction's inserts, in order",
          [c.uri for c in run_save.transaction.changes], answered)
    got = {o.uri: plain_attributes(o) for o in queries.GetObjects(
        queries_pb2.GetObjectsRequest(store=bulk, uris=[answered[0], answered[399], answered[400], answered[402]]),
        timeout=t).objects}
    check(f"Apply with answer_runs ({backend}): the objects hold the inserts' values, in order",
          [{"station": "s3"}, {"station": "s402"}, {"code": "x"}, {"station": "s404"}],
          [got.get(u) for u in [answered[0], answered[399], answered[400], answered[402]]])
    mixed = queries.Apply(queries_pb2.ApplyRequest(store=bulk, changes=readings(1, 500) + [
        changes.Change(update=changes.Update(uri=answered[0], attributes={"station": string("moved")}))],
        answer_runs=True), timeout=t)
    check(f"Apply with answer_runs of more than inserts ({backend}): answered as without it", (1, 0),
          (len(mixed.remapped), len(mixed.inserted_runs)))


def main():
    binary = os.path.abspath(ARGS.modeld)
    if not os.access(binary, os.X_OK):
        print(f"interop: no modeld binary at {binary}", file=sys.stderr)
        print("interop: 0 passed, 1 failed")
        return 1
    directory = tempfile.mkdtemp(prefix="pyi-", dir="/tmp")
    daemon = Daemon(binary, directory)
    failed = False
    try:
        print(f"interop: modeld {binary}, temp dir {directory}, grpcio {grpc.__version__}", flush=True)
        daemon.start()
        run(daemon)
        socket = daemon.socket
        exit_status = daemon.stop()
        check("SIGTERM: modeld exits with status 0", 0, exit_status)
        check("SIGTERM: the socket file is removed", False, os.path.exists(socket))
    except Exception as error:  # noqa: BLE001 - any failure ends the run loudly
        failed = True
        print(f"FAILED: {error}" if isinstance(error, CheckFailed) else "FAILED with an exception:", file=sys.stderr)
        if not isinstance(error, CheckFailed):
            traceback.print_exc()
        daemon.stop()
        print(f"--- modeld stderr ({daemon.stderr_path}) ---", file=sys.stderr)
        print(daemon.stderr(), file=sys.stderr)
        print("--- end of modeld stderr ---", file=sys.stderr, flush=True)
    finally:
        if ARGS.keep:
            print(f"interop: kept {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"interop: {PASSED} passed, {1 if failed else 0} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
