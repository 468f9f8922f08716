"""The Python SDK's fake control plane (sdk/python/tests/fakecp.py) driven over stdin and
stdout for the PHP tests: prints {"url": ...} once, then answers one JSON command a line
with one JSON line. Tests only."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))

from fakecp import FakeControlPlane  # noqa: E402


def main():
    fake = FakeControlPlane(type="cpu", sampling_interval_us=10000)
    delay = {"config": 0.0}
    config = fake._config

    def delayed(h):
        if delay["config"] > 0:
            time.sleep(delay["config"])
        config(h)

    fake._config = delayed
    upload = fake._upload

    def delayed_upload(h):
        if delay["config"] > 0:
            time.sleep(delay["config"])
        upload(h)

    fake._upload = delayed_upload
    upload_code = {"code": 201}
    fake.upload_answer = lambda params: upload_code["code"]
    print(json.dumps({"url": fake.url}), flush=True)
    for line in sys.stdin:
        c = json.loads(line)
        cmd, out = c["cmd"], {"ok": True}
        if cmd == "set_config":
            fake.set_config(**c["kw"])
        elif cmd == "set_mode":
            attrs = c.get("attrs", {})
            if "raw_body" in attrs:
                attrs["raw_body"] = attrs["raw_body"].encode()
            fake.set_mode(c["mode"], **attrs)
        elif cmd == "delay":  # every answer (config and upload) this much later
            delay["config"] = float(c["s"])
        elif cmd == "upload_code":
            upload_code["code"] = int(c["code"])
        elif cmd == "polls":
            now = time.monotonic()
            out = [{"age": now - p.t, "params": p.params} for p in list(fake.polls)]
        elif cmd == "uploads":
            now = time.monotonic()
            out = [{"age": now - u.t, "params": u.params, "answer": u.answer,
                    "profile": u.profile} for u in list(fake.uploads)]
        elif cmd == "quit":
            sys.stdout.flush()
            os._exit(0)  # no need to wait for serve_forever's poll
        print(json.dumps(out, default=list), flush=True)
    fake.close()


if __name__ == "__main__":
    main()
