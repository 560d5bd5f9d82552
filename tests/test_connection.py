"""Connections: one shared pool, Redis down at enqueue, passwords and ACL users, TLS, Sentinel.

Every server here is a private redis-server started by the test on a free port.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest
import redis

import djqueue
from djqueue import config, connection, signals

from .redis_server import REDIS_SERVER, RedisServer, free_port
from .worker_support import wait_for


@djqueue.job(name="core.connection.ping")
def ping(n):
    return n


@pytest.fixture
def restore_settings(redis_url: str) -> Iterator[None]:
    """Tests that point djqueue elsewhere; the fixture's teardown configures it back."""
    yield


def start_server(*extra: str) -> tuple[subprocess.Popen[bytes], int, str]:
    """A redis-server with extra arguments, for set-ups RedisServer does not cover."""
    assert REDIS_SERVER
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="djqueue-redis-")
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir]
        + ["--save", "", "--appendonly", "no", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, port, workdir


def wait_until(check, what: str, process: subprocess.Popen[bytes] | None = None) -> None:
    """`wait_for` a server that is starting: ``check`` may fail to connect until it is up, and
    a server that exited stops the wait."""

    def up() -> bool:
        try:
            if check():
                return True
        except (redis.ConnectionError, OSError):
            pass
        if process is not None and process.poll() is not None:
            raise ChildProcessError(f"{what} exited at start")
        return False

    wait_for(up, 10, f"{what} up")


def stop_server(process: subprocess.Popen[bytes], workdir: str) -> None:
    process.kill()
    process.wait(10)
    shutil.rmtree(workdir, ignore_errors=True)


# -- one pool per process -----------------------------------------------------------------------


def test_clients_share_one_pool(r):
    first, second = djqueue.Client(), djqueue.Client()
    assert first.redis is second.redis is connection.get_redis()
    connections_before = len(r.client_list())
    first.push({"class": "X", "args": [1]})
    second.push({"class": "X", "args": [2]})
    ping.perform_later(3)
    assert len(r.client_list()) == connections_before + 1


def test_configure_replaces_the_pool(redis_url):
    before = connection.get_redis()
    djqueue.configure(redis_url=redis_url)
    assert connection.get_redis() is not before


def test_import_does_not_touch_redis():
    code = (
        "import sys, djqueue; from djqueue import connection; "
        "assert not connection._clients, 'a pool was made'; "
        "assert 'django' not in sys.modules and 'flask' not in sys.modules, 'framework imported'"
    )
    env = {**os.environ, "DJQUEUE_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


# -- Redis down at enqueue ----------------------------------------------------------------------


def test_nothing_listening_raises_redis_unavailable(restore_settings):
    port = free_port()
    djqueue.configure(redis_url=f"redis://:s3cret-pw@127.0.0.1:{port}/0")
    for push in (
        lambda: ping.perform_later(1),
        lambda: ping.perform_in(60, 1),
        lambda: ping.perform_bulk([[1], [2]]),
        lambda: djqueue.Client().push({"class": "RubyJob", "args": []}),
    ):
        with pytest.raises(djqueue.RedisUnavailable) as info:
            push()
        exc = info.value
        assert isinstance(exc, ConnectionError)
        assert isinstance(exc, djqueue.DjQueueError)
        message = str(exc)
        assert f"redis://:***@127.0.0.1:{port}/0" in message
        assert "s3cret-pw" not in message
        assert exc.url == f"redis://:***@127.0.0.1:{port}/0"
        assert isinstance(exc.cause, redis.ConnectionError)


def test_no_job_enqueued_signal_when_redis_is_down(restore_settings):
    seen: list = []

    def receiver(sender, payload):
        seen.append(payload["jid"])

    djqueue.configure(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    signals.job_enqueued.connect(receiver)
    try:
        with pytest.raises(djqueue.RedisUnavailable):
            ping.perform_later(1)
    finally:
        signals.job_enqueued.disconnect(receiver)
    assert seen == []


def test_redis_stopped_mid_test_then_back(restore_settings):
    server = RedisServer(durable=True).start()
    check = server.client(decode_responses=True)
    try:
        djqueue.configure(redis_url=server.url)
        first = ping.perform_later(1)
        server.stop()
        with pytest.raises(djqueue.RedisUnavailable, match=f"127.0.0.1:{server.port}"):
            ping.perform_later(2)
        with pytest.raises(djqueue.RedisUnavailable):
            ping.perform_bulk([[3], [4], [5]])
        with pytest.raises(djqueue.RedisUnavailable):
            ping.perform_in(60, 6)
        server.start()
        # Nothing of the failed pushes was written: the queue holds the first job alone.
        assert [json.loads(raw)["jid"] for raw in check.lrange("queue:default", 0, -1)] == [first]
        assert check.smembers("queues") == {"default"}
        assert check.exists("schedule") == 0
        # The shared pool recovers on its own (and the script is loaded again).
        second = ping.perform_later(7)
        assert check.llen("queue:default") == 2
        assert json.loads(check.lindex("queue:default", 0))["jid"] == second
    finally:
        check.close()
        server.close()


def test_redis_down_before_the_first_push_writes_nothing(restore_settings):
    server = RedisServer(durable=True).start()
    check = server.client(decode_responses=True)
    try:
        djqueue.configure(redis_url=server.url)
        server.stop()
        with pytest.raises(djqueue.RedisUnavailable):
            ping.perform_bulk([[i] for i in range(10)])
        server.start()
        assert check.dbsize() == 0
    finally:
        check.close()
        server.close()


def test_redis_dying_during_a_bulk_leaves_whole_batches(restore_settings):
    """Batches are written one by one: those before the failure are whole, the rest absent."""
    server = RedisServer(durable=True).start()
    check = server.client(decode_responses=True)

    def kill_at_job_2500(job, payload, queue, call_next):
        if payload["args"] == [2500]:
            server.stop()
        return call_next()

    chain = djqueue.Chain()
    chain.add(kill_at_job_2500)
    try:
        djqueue.configure(redis_url=server.url)
        client = djqueue.Client(middleware=chain)
        with pytest.raises(djqueue.RedisUnavailable):
            client.push_bulk({"class": "X", "args": [[i] for i in range(5000)]})
        server.start()
        written = [json.loads(raw)["args"][0] for raw in check.lrange("queue:default", 0, -1)]
        assert sorted(written) == list(range(2000))
        assert check.smembers("queues") == {"default"}
    finally:
        check.close()
        server.close()


def test_a_redis_that_never_answers_is_redis_unavailable(restore_settings):
    """A peer that accepts the connection and then says nothing: the socket timeout decides."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        djqueue.configure(redis_url=f"redis://:pw@127.0.0.1:{port}/0", socket_timeout=0.2)
        with pytest.raises(djqueue.RedisUnavailable) as info:
            ping.perform_later(1)
        assert isinstance(info.value.cause, redis.TimeoutError)
        assert f"redis://:***@127.0.0.1:{port}/0" in str(info.value)
    finally:
        listener.close()


def test_unix_socket_url(restore_settings):
    sockdir = tempfile.mkdtemp(prefix="djqueue-sock-")
    path = os.path.join(sockdir, "redis.sock")
    process, _, workdir = start_server("--unixsocket", path, "--unixsocketperm", "700")
    check = redis.Redis(unix_socket_path=path, db=2, decode_responses=True)
    try:
        wait_until(check.ping, "Redis on a unix socket", process)
        djqueue.configure(redis_url=f"unix://{path}?db=2")
        jid = ping.perform_later(1)
        assert json.loads(check.lindex("queue:default", 0))["jid"] == jid
    finally:
        check.close()
        stop_server(process, workdir)
        shutil.rmtree(sockdir, ignore_errors=True)


# -- passwords and ACL users --------------------------------------------------------------------


@pytest.fixture(scope="module")
def auth_server() -> Iterator[int]:
    """A Redis with a password on the default user and an ACL user ``worker``."""
    process, port, workdir = start_server("--requirepass", "default-pw")
    try:
        admin = redis.Redis(port=port, password="default-pw")
        wait_until(admin.ping, "Redis with a password", process)
        admin.acl_setuser(
            "worker",
            enabled=True,
            passwords=["+worker-pw"],
            keys=["*"],
            channels=["*"],
            commands=["+@all"],
        )
        admin.close()
        yield port
    finally:
        stop_server(process, workdir)


@pytest.mark.parametrize("userinfo", [":default-pw", "worker:worker-pw"], ids=["password", "acl"])
def test_password_and_acl_user_urls(restore_settings, auth_server, userinfo):
    djqueue.configure(redis_url=f"redis://{userinfo}@127.0.0.1:{auth_server}/0")
    jid = ping.perform_later(1)
    check = redis.Redis(port=auth_server, password="default-pw", decode_responses=True)
    try:
        assert json.loads(check.lindex("queue:default", 0))["jid"] == jid
    finally:
        check.flushall()
        check.close()


@pytest.mark.parametrize(
    "userinfo, secret",
    [(":wrong-pw@", "wrong-pw"), ("worker:wrong-pw@", "wrong-pw"), ("", None)],
)
def test_bad_credentials_are_redis_unavailable_without_the_password(
    restore_settings, auth_server, userinfo, secret
):
    djqueue.configure(redis_url=f"redis://{userinfo}127.0.0.1:{auth_server}/0")
    with pytest.raises(djqueue.RedisUnavailable) as info:
        ping.perform_later(1)
    assert f"127.0.0.1:{auth_server}" in str(info.value)
    if secret:
        assert secret not in str(info.value)
    check = redis.Redis(port=auth_server, password="default-pw")
    try:
        assert check.dbsize() == 0
    finally:
        check.close()


# -- TLS (rediss://) ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_server() -> Iterator[tuple[int, str]]:
    """A Redis answering TLS only, with a self-signed certificate for 127.0.0.1."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a certificate")
    certdir = tempfile.mkdtemp(prefix="djqueue-tls-")
    cert, key = os.path.join(certdir, "cert.pem"), os.path.join(certdir, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    tls_port = free_port()
    process, _, workdir = start_server(
        "--tls-port",
        str(tls_port),
        "--port",
        "0",
        "--tls-cert-file",
        cert,
        "--tls-key-file",
        key,
        "--tls-ca-cert-file",
        cert,
        "--tls-auth-clients",
        "no",
    )
    client = redis.Redis(host="127.0.0.1", port=tls_port, ssl=True, ssl_ca_certs=cert)
    try:
        try:
            wait_until(client.ping, "TLS Redis", process)
        except ChildProcessError:
            pytest.skip("this redis-server was built without TLS")
        client.close()
        yield tls_port, cert
    finally:
        stop_server(process, workdir)
        shutil.rmtree(certdir, ignore_errors=True)


def test_rediss_url_builds_an_ssl_connection():
    s = config.Settings.build(environ={}, redis_url="rediss://:pw@example.com:6380/0")
    client = connection.make_redis(s)
    assert client.connection_pool.connection_class is redis.SSLConnection
    client.close()


def test_rediss_url_pushes_over_tls(restore_settings, tls_server):
    port, cert = tls_server
    djqueue.configure(redis_url=f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}")
    jid = ping.perform_later(1)
    check = redis.Redis(
        host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=cert, decode_responses=True
    )
    try:
        assert json.loads(check.lindex("queue:default", 0))["jid"] == jid
        assert check.smembers("queues") == {"default"}
    finally:
        check.flushall()
        check.close()


def test_rediss_with_an_untrusted_certificate_is_redis_unavailable(restore_settings, tls_server):
    port, _ = tls_server
    djqueue.configure(redis_url=f"rediss://127.0.0.1:{port}/0")
    with pytest.raises(djqueue.RedisUnavailable, match=f"rediss://127.0.0.1:{port}/0"):
        ping.perform_later(1)


# -- Sentinel -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sentinel() -> Iterator[tuple[int, int]]:
    """A password-protected master and one sentinel watching it as ``mymaster``."""
    master, master_port, master_dir = start_server("--requirepass", "master-pw")
    try:
        wait_until(redis.Redis(port=master_port, password="master-pw").ping, "master", master)
        yield from _sentinel_watching(master_port)
    finally:
        stop_server(master, master_dir)


def _sentinel_watching(master_port: int) -> Iterator[tuple[int, int]]:
    sentinel_port = free_port()
    workdir = tempfile.mkdtemp(prefix="djqueue-sentinel-")
    conf = os.path.join(workdir, "sentinel.conf")
    with open(conf, "w") as f:
        f.write(
            f"port {sentinel_port}\nbind 127.0.0.1\ndir {workdir}\n"
            f"sentinel monitor mymaster 127.0.0.1 {master_port} 1\n"
            "sentinel auth-pass mymaster master-pw\n"
            "sentinel down-after-milliseconds mymaster 60000\n"
        )
    assert REDIS_SERVER
    process = subprocess.Popen(
        [REDIS_SERVER, conf, "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        watcher = redis.Redis(port=sentinel_port, decode_responses=True)
        wait_until(
            lambda: watcher.sentinel_get_master_addr_by_name("mymaster")[1] == master_port,
            "sentinel",
            process,
        )
        watcher.close()
        yield sentinel_port, master_port
    finally:
        stop_server(process, workdir)


def master_jobs(master_port: int) -> list[dict]:
    check = redis.Redis(port=master_port, password="master-pw", decode_responses=True)
    try:
        jobs = [json.loads(raw) for raw in check.lrange("queue:default", 0, -1)]
        check.flushall()
        return jobs
    finally:
        check.close()


def test_sentinel_url_pushes_to_the_master(restore_settings, sentinel):
    sentinel_port, master_port = sentinel
    djqueue.configure(redis_url=f"redis+sentinel://:master-pw@127.0.0.1:{sentinel_port}/mymaster")
    jid = ping.perform_later(1)
    assert [job["jid"] for job in master_jobs(master_port)] == [jid]


def test_explicit_sentinel_list_pushes_to_the_master(restore_settings, sentinel):
    sentinel_port, master_port = sentinel
    djqueue.configure(
        redis_url="redis://:master-pw@ignored-host:6379/0",
        sentinels=[("127.0.0.1", sentinel_port)],
        sentinel_master="mymaster",
    )
    jid = ping.perform_later(1)
    assert [job["jid"] for job in master_jobs(master_port)] == [jid]


def test_sentinel_url_pushes_to_the_master_from_async_code(restore_settings, sentinel):
    """The asyncio pool of ``aperform_later`` reads the sentinel settings as the sync one."""
    sentinel_port, master_port = sentinel
    djqueue.configure(redis_url=f"redis+sentinel://:master-pw@127.0.0.1:{sentinel_port}/mymaster")
    jid = asyncio.run(ping.aperform_later(1))
    assert [job["jid"] for job in master_jobs(master_port)] == [jid]


def test_no_sentinel_answering_async_code_is_redis_unavailable(restore_settings):
    port = free_port()
    djqueue.configure(redis_url=f"redis+sentinel://:master-pw@127.0.0.1:{port}/mymaster")
    with pytest.raises(djqueue.RedisUnavailable) as info:
        asyncio.run(ping.aperform_later(1))
    assert f"127.0.0.1:{port}/mymaster" in str(info.value)


def test_sentinel_url_lists_several_sentinels(restore_settings, sentinel):
    sentinel_port, master_port = sentinel
    dead = free_port()
    djqueue.configure(
        redis_url=f"redis+sentinel://:master-pw@127.0.0.1:{dead},127.0.0.1:{sentinel_port}/mymaster"
    )
    jid = ping.perform_later(1)
    assert [job["jid"] for job in master_jobs(master_port)] == [jid]


def test_no_sentinel_answering_is_redis_unavailable(restore_settings):
    port = free_port()
    djqueue.configure(redis_url=f"redis+sentinel://:master-pw@127.0.0.1:{port}/mymaster")
    with pytest.raises(djqueue.RedisUnavailable) as info:
        ping.perform_later(1)
    assert f"127.0.0.1:{port}/mymaster" in str(info.value)
    assert "master-pw" not in str(info.value)


def test_unknown_master_name_is_redis_unavailable(restore_settings, sentinel):
    sentinel_port, _ = sentinel
    djqueue.configure(redis_url=f"redis+sentinel://127.0.0.1:{sentinel_port}/nosuchmaster")
    with pytest.raises(djqueue.RedisUnavailable, match="nosuchmaster"):
        ping.perform_later(1)


def test_sentinel_url_without_master_name_fails_with_the_setting_name(restore_settings):
    djqueue.configure(redis_url="redis+sentinel://127.0.0.1:26379")
    with pytest.raises(djqueue.ConfigurationError, match="^redis_url: "):
        connection.get_redis()
