"""fork(): the child gets a new instance id and its own SDK threads, and keeps profiling;
the parent is unaffected."""
import json
import os
import threading
import time

import pytest

import roottrace
from conftest import wait_for
from roottrace.config import DEFAULT_LIMITS

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def test_fork_child_new_instance_keeps_working_parent_unaffected(fake):
    fake.set_config(enabled=True, upload_interval_s=0.3, sampling_interval_us=10000)
    roottrace.start(server=fake.url, key="k", service="forky",
                    _limits=DEFAULT_LIMITS.override(upload_interval_min_s=0.3))
    try:
        assert wait_for(lambda: roottrace.status()["state"] == "profiling", 3)
        parent = roottrace.status()
        parent_agent = roottrace._agent
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report, never return into pytest
            code = 1
            try:
                os.close(r)
                ok = wait_for(lambda: roottrace.status()["profiles_sent"] >= 1, 5)
                st = roottrace.status()
                alive = sorted(t.name for t in threading.enumerate()
                               if t.name.startswith("roottrace-") and t.is_alive())
                roottrace.stop(2)
                os.write(w, json.dumps({"ok": ok, "status": st, "pid": os.getpid(),
                                        "threads": alive}).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            child = json.loads(f.read().decode() or "{}")
        _, rc = os.waitpid(pid, 0)
        assert rc == 0 and child["ok"], child
        cst = child["status"]
        assert cst["instance"] != parent["instance"]
        assert cst["instance"].endswith(cst["instance"][-4:])
        assert "-%d-" % child["pid"] in cst["instance"]
        assert cst["state"] == "profiling"
        assert child["threads"] == ["roottrace-poller", "roottrace-sampler", "roottrace-uploader"]
        # The child's profiles reached the server under its own instance.
        child_ups = [u for u in fake.uploads if u.params["instance"] == cst["instance"]]
        assert child_ups and all(u.answer == 201 for u in child_ups)
        assert any(p.params["instance"] == cst["instance"] for p in fake.polls)
        # The parent: same agent, same instance, its threads alive, still uploading.
        assert roottrace._agent is parent_agent
        assert roottrace.status()["instance"] == parent["instance"]
        assert all(t.is_alive() for t in parent_agent.threads)
        n = len([u for u in fake.uploads if u.params["instance"] == parent["instance"]])
        assert wait_for(lambda: len([u for u in fake.uploads
                                     if u.params["instance"] == parent["instance"]]) > n, 3)
        assert roottrace.status()["state"] == "profiling"
    finally:
        roottrace.stop(2)


def test_user_instance_kept_and_stopped_sdk_stays_stopped_in_child(fake):
    fake.set_config(enabled=False)
    roottrace.start(server=fake.url, key="k", service="forky", instance="web-1")
    roottrace.stop(1)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.write(w, json.dumps(roottrace.status()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        st = json.loads(f.read().decode())
    os.waitpid(pid, 0)
    assert st["state"] == "disabled"
    fake.set_config(enabled=False)
    roottrace.start(server=fake.url, key="k", service="forky", instance="web-1")
    try:
        assert roottrace.status()["instance"] == "web-1"
    finally:
        roottrace.stop(1)
