"""start() never raises: missing, misspelt and invalid arguments (including service and
instance names the server would refuse) give status `error: ...` and start no thread;
errors caused by stop() itself do not show as last_error."""
import threading
import time

import pytest

import roottrace
from conftest import wait_for
from roottrace.names import NAME_MAX_BYTES, name_problem
from roottrace.status import STATUS_RE


@pytest.fixture(autouse=True)
def fresh_sdk():
    roottrace.stop(1)
    roottrace._agent = None
    yield
    roottrace.stop(1)
    roottrace._agent = None


def sdk_threads():
    return [t.name for t in threading.enumerate()
            if t.name.startswith("roottrace-") and t.is_alive()]


def assert_error_without_threads(prefix):
    st = roottrace.status()
    assert st["status"].startswith(prefix), st["status"]
    assert STATUS_RE.match(st["status"]), st["status"]
    assert st["state"] == "error"
    assert not sdk_threads()


def test_start_without_arguments_does_not_raise():
    assert roottrace.start() is None
    assert_error_without_threads("error: missing arguments: server, key, service")


@pytest.mark.parametrize("kwargs, missing", [
    (dict(key="k", service="s"), "error: missing argument: server"),
    (dict(server="http://127.0.0.1:9", service="s"), "error: missing argument: key"),
    (dict(server="http://127.0.0.1:9", key="k"), "error: missing argument: service"),
    (dict(server="http://127.0.0.1:9"), "error: missing arguments: key, service"),
])
def test_each_missing_argument_is_named(kwargs, missing):
    roottrace.start(**kwargs)
    assert_error_without_threads(missing)
    assert roottrace.status()["status"] == missing


@pytest.mark.parametrize("args, kwargs, want", [
    ((), dict(server=5, key="k", service="s"), "error: server must be a URL string"),
    ((), dict(server="ftp://x", key="k", service="s"), "error: server must be an http"),
    ((), dict(server="http://x", key="", service="s"), "error: key must be a non-empty"),
    ((), dict(server="http://x", key="k", service=b"s"), "error: service must be a string"),
    ((), dict(server="http://x", key="k", service="s", version=1), "error: version must be"),
    ((), dict(server="http://x", key="k", service="s", servce="t"),
     "error: unknown argument: servce"),
    (("http://x", "k", "s", None, None, "extra"), {},
     "error: too many positional arguments (6)"),
])
def test_invalid_arguments_never_raise(args, kwargs, want):
    roottrace.start(*args, **kwargs)
    assert_error_without_threads(want)


BAD_NAMES = {
    "empty": ("", "empty"),
    "201_bytes": ("x" * 201, "201 bytes, at most 200"),
    "201_bytes_of_unicode": ("\u00e9" * 100 + "x", "201 bytes, at most 200"),
    "newline": ("a\nb", "control character U+000A"),
    "slash": ("a/b", "contains '/'"),
    "tab": ("a\tb", "control character U+0009"),
    "del": ("a\x7fb", "control character U+007F"),
    "lone_surrogate": ("a\ud800b", "not valid UTF-8"),
}


@pytest.mark.parametrize("which", ["service", "instance"])
@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_names_the_server_would_refuse_are_refused_without_polling(fake, which, case):
    name, why = BAD_NAMES[case]
    kw = dict(server=fake.url, key="k", service="svc", instance="inst-1")
    kw[which] = name
    roottrace.start(**kw)
    assert_error_without_threads("error: invalid %s name (%s" % (which, why))
    time.sleep(0.3)
    assert fake.polls == []


@pytest.mark.parametrize("name", ["caf\u00e9-\u670d\u52a1-\U0001f680", "a\u0085b", "\u00e9" * 100,
                                  "x" * NAME_MAX_BYTES, "a b.c:d@e"])
def test_valid_names_including_unicode_reach_the_server(fake, name):
    assert name_problem(name) is None
    fake.set_config(enabled=False, poll_interval_s=1)
    roottrace.start(server=fake.url, key="k", service=name, instance=name)
    assert wait_for(lambda: roottrace.status()["status"] == "disabled", 3), roottrace.status()
    p = fake.polls[0].params
    assert p["service"] == name and p["instance"] == name


def test_generated_instance_is_a_valid_name(monkeypatch):
    from roottrace import agent
    monkeypatch.setattr(agent.socket, "gethostname", lambda: "h/\nost" + "\u00e9" * 200)
    inst = agent.make_instance_id()
    assert name_problem(inst) is None, inst
    assert inst.startswith("h--ost")


def test_poll_refused_403_shows_the_server_message(fake):
    fake.set_mode("status", code=403, status_body=(
        b'{"error":"forbidden","message":"this ingest key is bound to another service"}'))
    roottrace.start(server=fake.url, key="k", service="svc")
    want = ("waiting: no config yet (config poll answered 403: this ingest key is bound to "
            "another service)")
    assert wait_for(lambda: roottrace.status()["status"] == want, 3), roottrace.status()


def test_stop_leaves_no_error_of_its_own(fake):
    # A held poll is in flight when stop() ends it: that is not a control-plane failure.
    fake.set_config(enabled=False, poll_interval_s=1)
    roottrace.start(server=fake.url, key="k", service="svc")
    assert wait_for(lambda: len(fake.polls) >= 2, 3)  # the second poll is held
    time.sleep(0.2)
    assert roottrace.status()["last_error"] is None
    roottrace.stop(2)
    st = roottrace.status()
    assert st["status"] == "disabled: stopped"
    assert st["last_error"] is None, st["last_error"]


def test_stop_keeps_a_real_error_from_before(fake):
    fake.set_config(enabled=False, poll_interval_s=1)
    fake.set_mode("status", code=503)
    roottrace.start(server=fake.url, key="k", service="svc")
    assert wait_for(lambda: roottrace.status()["last_error"] == "config poll answered 503", 3)
    roottrace.stop(2)
    assert roottrace.status()["last_error"] == "config poll answered 503"


# The fields every SDK's status() has (docs/sdk/README.md, "One vocabulary"), in its order,
# then Python's own.
STATUS_KEYS = ["status", "state", "reason", "interval_us", "service", "instance",
               "profiles_sent", "profiles_dropped", "profiles_queued", "samples",
               "last_error", "median_walk_us"]


def test_status_before_start_has_the_shared_fields_in_order():
    st = roottrace.status()
    assert list(st) == STATUS_KEYS
    assert st == {"status": "disabled: not started", "state": "disabled",
                  "reason": "not started", "interval_us": 20000, "service": None,
                  "instance": None, "profiles_sent": 0, "profiles_dropped": 0,
                  "profiles_queued": 0, "samples": 0, "last_error": None,
                  "median_walk_us": 0.0}


def test_reason_of_bad_arguments():
    roottrace.start(server="http://127.0.0.1:9", key="k")
    st = roottrace.status()
    assert list(st) == STATUS_KEYS
    assert (st["status"], st["state"], st["reason"], st["last_error"]) == (
        "error: missing argument: service", "error", "missing argument: service",
        "error: missing argument: service")


def test_reason_in_each_state_the_control_plane_brings(fake):
    fake.set_mode("status", code=403, status_body=b'{"error":"forbidden","message":"no"}')
    roottrace.start(server=fake.url, key="k", service="svc", instance="inst-1")
    want = "waiting: no config yet (config poll answered 403: no)"
    assert wait_for(lambda: roottrace.status()["status"] == want, 3), roottrace.status()
    st = roottrace.status()
    assert list(st) == STATUS_KEYS
    assert (st["state"], st["reason"]) == ("waiting", "no config yet (config poll answered "
                                                      "403: no)")
    assert (st["service"], st["instance"]) == ("svc", "inst-1")
    roottrace.stop(1)
    assert (roottrace.status()["state"], roottrace.status()["reason"]) == ("disabled",
                                                                           "stopped")
    roottrace._agent = None

    fake.set_mode("normal")
    fake.set_config(enabled=False, poll_interval_s=1)
    roottrace.start(server=fake.url, key="k", service="svc")
    assert wait_for(lambda: roottrace.status()["status"] == "disabled", 3), roottrace.status()
    assert (roottrace.status()["state"], roottrace.status()["reason"]) == ("disabled", "")

    fake.set_config(enabled=True, type="cpu")  # the held poll returns with it at once
    want = "profiling: cpu not supported, sending wall"
    assert wait_for(lambda: roottrace.status()["status"] == want, 3), roottrace.status()
    st = roottrace.status()
    assert (st["state"], st["reason"]) == ("profiling", "cpu not supported, sending wall")

    fake.set_config(type="wall")
    assert wait_for(lambda: roottrace.status()["status"] == "profiling", 3), roottrace.status()
    st = roottrace.status()
    assert (st["state"], st["reason"]) == ("profiling", "")
    assert list(st) == STATUS_KEYS


def test_reason_when_status_itself_fails(monkeypatch):
    class Broken:
        def status(self):
            raise RuntimeError("boom")

    monkeypatch.setattr(roottrace, "_agent", Broken())
    st = roottrace.status()
    assert list(st) == STATUS_KEYS  # the same fields as every other status
    assert (st["status"], st["state"], st["reason"], st["last_error"]) == (
        "error: status: boom", "error", "status: boom", "error: status: boom")
    assert (st["profiles_sent"], st["samples"], st["service"]) == (0, 0, None)
