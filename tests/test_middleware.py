"""Middleware chains: Sidekiq's chain operations, and what client and server middleware can do."""

from __future__ import annotations

import json

import pytest

import djqueue
from djqueue import Chain


class Recorder:
    """Appends (label, phase) to a shared log around ``call_next``."""

    def __init__(self, log: list, label: str = "") -> None:
        self.log = log
        self.label = label or type(self).__name__

    def __call__(self, job, payload, queue, call_next):
        self.log.append((self.label, "before"))
        result = call_next()
        self.log.append((self.label, "after"))
        return result


class A(Recorder):
    pass


class B(Recorder):
    pass


class C(Recorder):
    pass


def restore(chain: Chain, saved: Chain) -> None:
    """Put back what an integration had installed, constructor arguments included."""
    chain._entries = saved._entries


def order(chain: Chain) -> list[str]:
    return [klass.__name__ for klass in chain]


# -- chain operations ---------------------------------------------------------------------------


def test_add_prepend_insert_remove_clear():
    chain = Chain()
    log: list = []
    chain.add(A, log)
    chain.add(B, log)
    assert order(chain) == ["A", "B"]
    chain.prepend(C, log)
    assert order(chain) == ["C", "A", "B"]
    chain.remove(C)
    chain.insert_before(B, C, log)
    assert order(chain) == ["A", "C", "B"]
    chain.insert_after(B, C, log)
    assert order(chain) == ["A", "B", "C"]
    chain.insert_before(A, C, log)
    assert order(chain) == ["C", "A", "B"]
    assert len(chain) == 3
    chain.clear()
    assert order(chain) == []
    assert len(chain) == 0


def test_add_of_an_existing_entry_moves_it_to_the_end_with_new_arguments():
    chain = Chain()
    first: list = []
    second: list = []
    chain.add(A, first)
    chain.add(B, first)
    chain.add(A, second)
    assert order(chain) == ["B", "A"]
    chain.invoke("job", {}, "q", lambda: None)
    assert first == [("B", "before"), ("B", "after")]
    assert second == [("A", "before"), ("A", "after")]


def test_exists_and_contains():
    chain = Chain()
    chain.add(A, [])
    assert chain.exists(A)
    assert A in chain
    assert B not in chain
    assert not chain.exists(B)
    chain.remove(A)
    assert A not in chain
    chain.remove(A)  # removing what is not there is not an error, as in Sidekiq


def test_insert_relative_to_a_missing_entry_is_an_error():
    chain = Chain()
    chain.add(A, [])
    with pytest.raises(ValueError, match="not in this middleware chain"):
        chain.insert_before(B, C, [])
    with pytest.raises(ValueError):
        chain.insert_after(B, C, [])
    assert order(chain) == ["A"]


def test_invoke_runs_entries_in_order_around_the_final_step():
    chain = Chain()
    log: list = []
    chain.add(A, log)
    chain.add(B, log, "bee")
    result = chain.invoke("job", {}, "q", lambda: log.append(("job", "run")) or "done")
    assert result == "done"
    assert log == [
        ("A", "before"),
        ("bee", "before"),
        ("job", "run"),
        ("bee", "after"),
        ("A", "after"),
    ]


def test_an_empty_chain_runs_the_final_step():
    assert Chain().invoke("job", {}, "q", lambda: 42) == 42


def test_classes_are_instantiated_per_invocation_with_their_arguments():
    made: list = []

    class Counting:
        def __init__(self, prefix, suffix="!"):
            self.prefix = prefix
            self.suffix = suffix
            made.append(self)

        def __call__(self, job, payload, queue, call_next):
            payload.setdefault("seen", []).append(f"{self.prefix}{job}{self.suffix}")
            return call_next()

    chain = Chain()
    chain.add(Counting, "<", suffix=">")
    first: dict = {}
    second: dict = {}
    chain.invoke("one", first, "q", lambda: None)
    chain.invoke("two", second, "q", lambda: None)
    assert first["seen"] == ["<one>"]
    assert second["seen"] == ["<two>"]
    assert len(made) == 2 and made[0] is not made[1]


def test_a_plain_function_can_be_added_and_arguments_need_a_class():
    calls: list = []

    def stamp(job, payload, queue, call_next):
        calls.append(queue)
        return call_next()

    chain = Chain()
    chain.add(stamp)
    chain.invoke("job", {}, "mail", lambda: None)
    assert calls == ["mail"]
    with pytest.raises(TypeError):
        chain.add(stamp, "argument")
    with pytest.raises(TypeError):
        chain.add("not callable")


def test_a_copy_does_not_change_with_the_original():
    chain = Chain()
    chain.add(A, [])
    copy = chain.copy()
    chain.add(B, [])
    assert order(copy) == ["A"]
    assert order(chain) == ["A", "B"]


# -- client middleware --------------------------------------------------------------------------


@djqueue.job(name="core.middleware.greet", queue="mail")
def greet(name):
    return f"hello {name}"


@pytest.fixture
def client_chain():
    """The process-wide client chain, emptied again after the test."""
    saved = djqueue.client_middleware.copy()
    djqueue.client_middleware.clear()
    yield djqueue.client_middleware
    restore(djqueue.client_middleware, saved)


def test_client_middleware_sees_name_payload_queue_and_can_change_the_payload(r, client_chain):
    seen: list = []

    class Tenant:
        def __init__(self, tenant):
            self.tenant = tenant

        def __call__(self, job, payload, queue, call_next):
            seen.append((job, queue, list(payload["args"])))
            payload["tenant"] = self.tenant
            payload["args"].append("extra")
            return call_next()

    client_chain.add(Tenant, "acme")
    jid = greet.perform_later("ann")
    assert seen == [("core.middleware.greet", "mail", ["ann"])]
    (payload,) = [json.loads(raw) for raw in r.lrange("queue:mail", 0, -1)]
    assert payload["jid"] == jid
    assert payload["tenant"] == "acme"
    assert payload["args"] == ["ann", "extra"]


def test_client_middleware_can_reroute_a_job(r, client_chain):
    class Reroute:
        def __call__(self, job, payload, queue, call_next):
            payload["queue"] = "priority"
            return call_next()

    client_chain.add(Reroute)
    greet.perform_later("bo")
    assert r.llen("queue:priority") == 1
    assert r.exists("queue:mail") == 0
    assert r.smembers("queues") == {"priority"}


def test_client_middleware_can_stop_the_push(r, client_chain):
    class Veto:
        def __call__(self, job, payload, queue, call_next):
            if payload["args"] == ["blocked"]:
                return None
            return call_next()

    client_chain.add(Veto)
    assert greet.perform_later("blocked") is None
    assert greet.perform_in(60, "blocked") is None
    assert r.dbsize() == 0
    jids = greet.perform_bulk([["a"], ["blocked"], ["c"]])
    assert len(jids) == 2
    assert sorted(json.loads(raw)["args"][0] for raw in r.lrange("queue:mail", 0, -1)) == ["a", "c"]


def test_a_middleware_that_forgets_to_return_still_pushes(r, client_chain):
    class Forgetful:
        def __call__(self, job, payload, queue, call_next):
            call_next()

    client_chain.add(Forgetful)
    jid = greet.perform_later("x")
    assert jid is not None
    assert json.loads(r.lindex("queue:mail", 0))["jid"] == jid


def test_an_exception_in_client_middleware_writes_nothing(r, client_chain):
    class Broken:
        def __call__(self, job, payload, queue, call_next):
            raise RuntimeError("lookup failed")

    client_chain.add(Broken)
    with pytest.raises(RuntimeError, match="lookup failed"):
        greet.perform_later("x")
    assert r.dbsize() == 0


def test_a_non_json_value_added_by_middleware_writes_nothing(r, client_chain):
    class AddsObject:
        def __call__(self, job, payload, queue, call_next):
            payload["user"] = object()
            return call_next()

    client_chain.add(AddsObject)
    with pytest.raises(TypeError):
        greet.perform_later("x")
    assert r.dbsize() == 0


# -- server middleware (perform_now runs the same chain as a worker) ----------------------------


@pytest.fixture
def server_chain():
    saved = djqueue.server_middleware.copy()
    djqueue.server_middleware.clear()
    yield djqueue.server_middleware
    restore(djqueue.server_middleware, saved)


@djqueue.job(name="core.middleware.fails")
def fails(message):
    raise ValueError(message)


class Audited(djqueue.Job, name="core.middleware.Audited", queue="audit"):
    def perform(self, amount):
        return amount * 2


def test_server_middleware_wraps_the_job(redis_url, server_chain):
    log: list = []

    class Around:
        def __call__(self, job, payload, queue, call_next):
            log.append(("before", job, payload["class"], payload["args"], queue))
            result = call_next()
            log.append(("after", result))
            return result

    server_chain.add(Around)
    assert greet.perform_now("zoe") == "hello zoe"
    assert log == [
        ("before", greet, "core.middleware.greet", ["zoe"], "mail"),
        ("after", "hello zoe"),
    ]


def test_server_middleware_gets_the_job_instance_for_a_class_job(redis_url, server_chain):
    seen: list = []

    class Inspect:
        def __call__(self, job, payload, queue, call_next):
            seen.append((type(job), job.jid == payload["jid"], queue))
            return call_next()

    server_chain.add(Inspect)
    assert Audited.perform_now(21) == 42
    assert seen == [(Audited, True, "audit")]


def test_server_middleware_sees_the_exception(redis_url, server_chain):
    caught: list = []

    class Catch:
        def __call__(self, job, payload, queue, call_next):
            try:
                return call_next()
            except ValueError as exc:
                caught.append(str(exc))
                raise

    server_chain.add(Catch)
    with pytest.raises(ValueError, match="boom"):
        fails.perform_now("boom")
    assert caught == ["boom"]


def test_server_middleware_can_skip_the_job(redis_url, server_chain):
    class Skip:
        def __call__(self, job, payload, queue, call_next):
            return "skipped"

    server_chain.add(Skip)
    assert fails.perform_now("never raised") == "skipped"


def test_current_job_is_set_while_middleware_and_job_run(redis_url, server_chain):
    seen: list = []

    class Look:
        def __call__(self, job, payload, queue, call_next):
            seen.append(djqueue.current_job() is payload)
            return call_next()

    @djqueue.job(name="core.middleware.current")
    def current():
        return djqueue.current_job()["class"]

    server_chain.add(Look)
    assert current.perform_now() == "core.middleware.current"
    assert seen == [True]
    assert djqueue.current_job() is None
