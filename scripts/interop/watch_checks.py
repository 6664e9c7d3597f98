"""Live queries from grpcio: QueryService.Watch, checked from the protos and docs alone.

Each difference is applied as docs/daemon.md and queries.proto say (remove deleted and moved
objects at their old offsets, highest first; insert inserted and moved ones at their new
offsets, lowest first; replace updated ones), and the state it builds must equal a fresh Fetch.
"""

import grpc

from modeld.v1 import changes_pb2 as changes
from modeld.v1 import queries_pb2, queries_pb2_grpc
from modeld.v1 import query_pb2 as query
from modeld.v1 import stores_pb2, stores_pb2_grpc
from modeld.v1 import values_pb2 as values


def apply_difference(objects, response):
    """The new result: `objects` (the previous one) with the response's difference applied."""
    result = list(objects)
    moved = {}
    removals = [(d.offset, None) for d in response.deleted] + [(m.__getattribute__("from"), m.uri)
                                                                for m in response.moved]
    for offset, uri in sorted(removals, key=lambda r: r[0], reverse=True):
        removed = result.pop(offset)
        if uri is not None:
            moved[uri] = removed
    insertions = [(i.offset, i.object) for i in response.inserted] + [(m.to, moved[m.uri]) for m in response.moved]
    for offset, obj in sorted(insertions, key=lambda i: i[0]):
        result.insert(offset, obj)
    for update in response.updated:
        result[update.offset] = update.object
    return result


def run_watches(channel, schema, timeout, check, check_true, check_error, rpc_error):
    stores = stores_pb2_grpc.StoreServiceStub(channel)
    queries = queries_pb2_grpc.QueryServiceStub(channel)
    store = "py-watch"
    stores.CreateStore(stores_pb2.CreateStoreRequest(name=store, schema=schema), timeout=timeout)

    def value(s):
        return values.Value(string_value=s)

    def day(n):
        return values.Value(date_micros=1_800_000_000_000_000 + n * 86_400_000_000)

    def apply(*change_list):
        return queries.Apply(queries_pb2.ApplyRequest(store=store, author="py-watcher", changes=list(change_list)),
                             timeout=timeout)

    def trip(name, destination, n):
        return changes.Change(insert=changes.Insert(entity="Trip", attributes={
            "name": value(name), "destination": value(destination), "startDate": day(n), "endDate": day(n)}))

    italy = query.FetchRequest(entity="Trip", sort=[query.SortKey(key_path="name")])
    italy.predicate.text = 'destination == "Italy"'

    def fresh():
        return [o for r in queries.Fetch(queries_pb2.StoreFetchRequest(store=store, fetch=italy), timeout=timeout)
                for o in r.objects]

    def names(objects):
        return [o.attributes["name"].string_value for o in objects]

    watch = queries.Watch(queries_pb2.WatchRequest(store=store, fetch=italy), timeout=120)
    counting = queries.Watch(queries_pb2.WatchRequest(store=store, count=query.FetchRequest(entity="Trip")),
                             timeout=120)
    first = next(watch)
    check("Watch: the first response is the initial, empty result", (True, [], False),
          (first.initial, list(first.objects), first.HasField("token")))
    check("Watch count: the first count", 0, next(counting).count)

    saved = apply(trip("Rome", "Italy", 1), trip("Milan", "Italy", 2), trip("Oslo", "Norway", 3))
    second = next(watch)
    state = apply_difference(first.objects, second)
    check("Watch: the save's token", saved.token, second.token)
    check("Watch: two objects inserted at offsets 0 and 1", [0, 1], [i.offset for i in second.inserted])
    check("Watch: the difference builds the fresh result", names(fresh()), names(state))
    check("Watch count: all three trips", (saved.token, 3), (lambda r: (r.token, r.count))(next(counting)))

    rome = [o.uri for o in state if o.attributes["name"].string_value == "Rome"][0]
    # Oslo's rename touches nothing the fetch selects: its next response is the one after.
    norway = query.FetchRequest(entity="Trip")
    norway.predicate.text = 'destination == "Norway"'
    oslo = [o.uri for r in queries.Fetch(queries_pb2.StoreFetchRequest(store=store, fetch=norway), timeout=timeout)
            for o in r.objects][0]
    apply(changes.Change(update=changes.Update(uri=oslo, attributes={"name": value("Bergen")})))
    renamed = apply(changes.Change(update=changes.Update(uri=rome, attributes={"name": value("Aosta")})))
    third = next(watch)
    check("Watch: a save that left the result alone sent nothing (next token is the rename's)",
          renamed.token, third.token)
    # Rome (now Aosta) and Milan swap places: one of them is reported moved (either is right).
    check("Watch: the rename moves one object past the other, inserting and deleting none", (1, [], []),
          (len(third.moved), list(third.inserted), list(third.deleted)))
    check("Watch: the renamed trip is updated at its new offset, naming the changed property",
          [(0, rome, ["name"])], [(u.offset, u.object.uri, list(u.changed_properties)) for u in third.updated])
    state = apply_difference(state, third)
    check("Watch: the state after the move equals a fresh fetch", names(fresh()), names(state))

    deleted = apply(changes.Change(delete=changes.Delete(uri=rome)))
    fourth = next(watch)
    state = apply_difference(state, fourth)
    check("Watch: a delete removes the object at its offset", (deleted.token, [(0, rome)]),
          (fourth.token, [(d.offset, d.uri) for d in fourth.deleted]))
    check("Watch: the final state equals a fresh fetch", names(fresh()), names(state))
    watch.cancel()
    counting.cancel()

    check_error("Watch without a query", rpc_error(
        lambda request, timeout: next(queries.Watch(request, timeout=timeout)), queries_pb2.WatchRequest(store=store)),
        grpc.StatusCode.INVALID_ARGUMENT)
    for size in (-1, 20000):
        check_error(f"Watch: a batch_size of {size} is refused as Fetch refuses it", rpc_error(
            lambda request, timeout: next(queries.Watch(request, timeout=timeout)),
            queries_pb2.WatchRequest(store=store, fetch=query.FetchRequest(entity="Trip", batch_size=size))),
            grpc.StatusCode.INVALID_ARGUMENT)
    check_error("Watch: a watched fetch of identifiers is refused", rpc_error(
        lambda request, timeout: next(queries.Watch(request, timeout=timeout)),
        queries_pb2.WatchRequest(store=store, fetch=query.FetchRequest(
            entity="Trip", result_type=query.RESULT_TYPE_IDENTIFIERS))),
        grpc.StatusCode.INVALID_ARGUMENT)
    dropped = queries.Watch(queries_pb2.WatchRequest(store=store, count=query.FetchRequest(entity="Trip")),
                            timeout=60)
    next(dropped)
    stores.DropStore(stores_pb2.DropStoreRequest(name=store, force=True), timeout=timeout)
    check_error("Watch: dropping the store ends it", rpc_error(lambda request, timeout: next(dropped), None),
                grpc.StatusCode.NOT_FOUND)
