"""The security claims of docs/security.md, each test named there beside its claim: the auth
matrix (every route of the server's route table x every kind of principal), token storage,
request limits, response headers and CORS, CSRF and cookie flags, the default loopback
binding and the data directory's permissions."""
import base64
import fcntl
import gzip
import hashlib
import http.client
import os
import re
import secrets
import socket
import subprocess
import tempfile
import time

import pytest
import yaml

import pprof_build as pb
from conftest import (ADMIN_TOKEN, BIN, REPO, Server, cli, clickhouse_sql, free_port,
                      sqlite_only, store_args, store_uri)

T = 1764460800
S = 10**9
API_C = os.path.join(REPO, "server", "src", "http", "api.c")
OPENAPI = os.path.join(REPO, "docs", "openapi.yaml")

# ---------------------------------------------------------------------------------------
# 1. The auth matrix
# ---------------------------------------------------------------------------------------


def server_routes():
    """{(method, pattern): scope} from the route table in server/src/http/api.c; "*" stands
    for one path segment, scope "none" for the session routes that authenticate themselves."""
    src = open(API_C).read()
    table = src[src.index("static const struct route routes[]"):]
    table = table[:table.index("};")]
    rows = re.findall(r'\{"([A-Z]+)", "([^"]+)", RT_SCOPE_([A-Z]+), \w+, '
                      r'(?:true|false), (?:true|false)\}', table)
    assert len(rows) == table.count("rt__api_"), "every row of the route table parsed"
    return {(m, p): s.lower() for m, p, s in rows}


def openapi_routes():
    """{(method, pattern): scope} of docs/openapi.yaml's API paths (/api/ and Pyroscope's two,
    {id} written as *); scope from x-roottrace-scope, "none" for operations with
    `security: []`."""
    spec = yaml.safe_load(open(OPENAPI))
    out = {}
    for path, ops in spec["paths"].items():
        if not path.startswith("/api/") and path not in PYROSCOPE_PATHS:
            continue
        pattern = re.sub(r"\{[^}]+\}", "*", path)
        for method, op in ops.items():
            if method in ("get", "post", "put", "delete", "patch"):
                scope = "none" if op.get("security") == [] else op["x-roottrace-scope"]
                out[(method.upper(), pattern)] = scope
    return out


PYROSCOPE_PATHS = ("/ingest", "/push.v1.PusherService/Push")


def profile_body():
    return pb.cpu_profile({"main;a": 1}, time_nanos=T * S, duration_nanos=S)


def push_body():
    """A Connect JSON push of one cpu profile of service svc (DESIGN §12)."""
    raw = base64.b64encode(profile_body()).decode()
    return {"series": [{"labels": [{"name": "service_name", "value": "svc"},
                                   {"name": "__name__", "value": "process_cpu"}],
                        "samples": [{"rawProfile": raw}]}]}


# (method, pattern) -> (concrete path, query params, body) of a request that an allowed
# principal gets a 2xx (or a non-auth 4xx) for.
SCOPED = {
    ("POST", "/api/v1/profiles"): ("/api/v1/profiles", {"service": "svc"}, "PROFILE"),
    ("POST", "/ingest"): ("/ingest", {"name": "svc.cpu{}", "from": T, "until": T + 10},
                          "FOLDED"),
    ("POST", "/push.v1.PusherService/Push"): ("/push.v1.PusherService/Push", None, "PUSH"),
    ("GET", "/api/v1/sdk/config"): ("/api/v1/sdk/config",
                                    {"service": "svc", "instance": "i-1"}, None),
    ("GET", "/api/v1/profile"): ("/api/v1/profile", {"service": "svc", "type": "cpu"}, None),
    ("GET", "/api/v1/timeline"): ("/api/v1/timeline", {"service": "svc", "type": "cpu"}, None),
    ("GET", "/api/v1/diff"): ("/api/v1/diff", {"service": "svc", "type": "cpu", "at": T}, None),
    ("GET", "/api/v1/export"): ("/api/v1/export",
                                {"service": "svc", "type": "cpu", "format": "folded"}, None),
    ("GET", "/api/v1/issues"): ("/api/v1/issues", None, None),
    ("POST", "/api/v1/issues"): ("/api/v1/issues", None,
                                 {"service": "svc", "title": "t", "started_at": T}),
    ("GET", "/api/v1/issues/*"): ("/api/v1/issues/1", None, None),
    ("PATCH", "/api/v1/issues/*"): ("/api/v1/issues/1", None, {"ended_at": T + 60}),
    ("POST", "/api/v1/alerts/alertmanager"): ("/api/v1/alerts/alertmanager", None,
                                              {"version": "4", "alerts": []}),
    ("POST", "/api/v1/alerts/grafana"): ("/api/v1/alerts/grafana", None, {"alerts": []}),
    ("GET", "/api/v1/issues/*/diff"): ("/api/v1/issues/1/diff", {"type": "cpu"}, None),
    ("GET", "/api/v1/deploys"): ("/api/v1/deploys", None, None),
    ("POST", "/api/v1/deploys"): ("/api/v1/deploys", None, {"service": "svc", "version": "2"}),
    ("GET", "/api/v1/services"): ("/api/v1/services", None, None),
    ("PUT", "/api/v1/services/*/profiling"): ("/api/v1/services/svc/profiling", None,
                                              {"enabled": True}),
    ("GET", "/api/v1/keys"): ("/api/v1/keys", None, None),
    ("POST", "/api/v1/keys"): ("/api/v1/keys", None, {"scope": "read"}),
    ("DELETE", "/api/v1/keys/*"): ("/api/v1/keys/999999", None, None),
    ("GET", "/api/v1/audit"): ("/api/v1/audit", None, None),
}
SESSION_ROUTES = {("POST", "/api/v1/session"), ("GET", "/api/v1/session"),
                  ("DELETE", "/api/v1/session")}

# Principals of the matrix. Bearer keys: none, a wrong key, a non-Bearer scheme, a revoked
# admin key, and one key of each scope. UI sessions: admin with and without the CSRF
# header, read with it, and a session whose key has since been revoked.
# Basic: a raw key (no base64 of user:key) is refused; "basic-<scope>" sends the key as
# Basic's password (DESIGN §12), which counts as the key.
PRINCIPALS = ["none", "wrong-key", "basic-scheme", "revoked-admin", "ingest", "read", "admin",
              "basic-admin", "basic-ingest", "basic-wrong",
              "cookie-admin-no-csrf", "cookie-admin", "cookie-read", "cookie-revoked"]


def expected(need, method, who):
    """"401", "403" or "ok" (a 2xx or a 4xx that is not about authentication)."""
    if who in ("none", "wrong-key", "basic-scheme", "basic-wrong", "revoked-admin",
               "cookie-revoked"):
        return "401"
    scope = who.split("-")[1] if who.startswith(("cookie", "basic")) else who
    if who == "cookie-admin-no-csrf" and method not in ("GET", "HEAD"):
        return "403"
    return "ok" if scope == "admin" or scope == need else "403"


def sign_in(srv, token):
    r = srv.post("/api/v1/session", body={"token": token}, token="")
    assert r.status == 201, r.body
    return r.headers["Set-Cookie"].split(";")[0], r.json()["csrf_token"]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("sec") / "data").start()
    srv.put("/api/v1/services/svc/profiling", body={"enabled": True})
    assert srv.post("/api/v1/issues", body={"service": "svc", "started_at": T}).status == 201
    creds = {"admin": ({"Authorization": f"Bearer {ADMIN_TOKEN}"}),
             "none": {},
             "wrong-key": {"Authorization": "Bearer rt_" + secrets.token_urlsafe(32)},
             "basic-scheme": {"Authorization": f"Basic {ADMIN_TOKEN}"}}
    for scope in ("ingest", "read"):
        creds[scope] = {"Authorization": f"Bearer {srv.key(scope)}"}
    basic = lambda key: "Basic " + base64.b64encode(f"any-user:{key}".encode()).decode()
    creds["basic-admin"] = {"Authorization": basic(ADMIN_TOKEN)}
    creds["basic-ingest"] = {"Authorization": basic(srv.key("ingest"))}
    creds["basic-wrong"] = {"Authorization": basic("rt_" + secrets.token_urlsafe(32))}
    made = srv.post("/api/v1/keys", body={"scope": "admin"}).json()
    assert srv.get("/api/v1/keys", token=made["key"]).status == 200
    assert srv.delete(f"/api/v1/keys/{made['id']}").status == 200
    creds["revoked-admin"] = {"Authorization": f"Bearer {made['key']}"}
    cookie, csrf = sign_in(srv, ADMIN_TOKEN)
    creds["cookie-admin-no-csrf"] = {"Cookie": cookie}
    creds["cookie-admin"] = {"Cookie": cookie, "X-CSRF-Token": csrf}
    cookie, csrf = sign_in(srv, srv.key("read"))
    creds["cookie-read"] = {"Cookie": cookie, "X-CSRF-Token": csrf}
    made = srv.post("/api/v1/keys", body={"scope": "read"}).json()
    cookie, csrf = sign_in(srv, made["key"])
    assert srv.delete(f"/api/v1/keys/{made['id']}").status == 200
    creds["cookie-revoked"] = {"Cookie": cookie, "X-CSRF-Token": csrf}
    yield srv, creds
    srv.stop()


def send(srv, method, path, params, body, headers):
    headers = dict(headers)
    if body == "PROFILE":
        body = profile_body()
        headers["Content-Type"] = "application/octet-stream"
    elif body == "FOLDED":
        body = b"main;a 3\n"
        headers["Content-Type"] = "text/plain"
    elif body == "PUSH":
        body = push_body()
    return srv.request(method, path, params, body, headers=headers, token="")


def test_route_table_matches_openapi_and_the_matrix():
    """A route added to api.c or docs/openapi.yaml without a row here fails this test."""
    table, spec = server_routes(), openapi_routes()
    assert table == spec, (set(table.items()) ^ set(spec.items()))
    assert set(table) == set(SCOPED) | SESSION_ROUTES
    assert {r for r, s in table.items() if s == "none"} == SESSION_ROUTES


@pytest.mark.parametrize("route", sorted(SCOPED), ids=[f"{m} {p}" for m, p in sorted(SCOPED)])
def test_auth_matrix(matrix, route):
    srv, creds = matrix
    need = server_routes()[route]
    path, params, body = SCOPED[route]
    got = {}
    for who in PRINCIPALS:
        r = send(srv, route[0], path, params, body, creds[who])
        want = expected(need, route[0], who)
        ok = (r.status not in (401, 403) and r.status < 500) if want == "ok" \
            else r.status == int(want)
        if ok and want != "ok":
            ok = r.json()["error"] == ("unauthorized" if want == "401" else "forbidden")
        got[who] = (r.status, want, ok)
    assert all(ok for _, _, ok in got.values()), got


def test_session_routes_matrix(matrix):
    """The three session routes authenticate themselves: a key in the body to sign in (admin
    and read keys only), the cookie (and for DELETE the CSRF header) afterwards."""
    srv, creds = matrix
    post = lambda tok: srv.post("/api/v1/session", body={"token": tok}, token="").status
    assert post(ADMIN_TOKEN) == 201
    assert post(srv.key("read")) == 201
    assert post(srv.key("ingest")) == 403
    for who in ("wrong-key", "revoked-admin"):
        assert post(creds[who]["Authorization"].split(" ", 1)[1]) == 401, who
    assert srv.post("/api/v1/session", body={}, token="").status == 400
    get = lambda who: srv.request("GET", "/api/v1/session", headers=creds[who], token="")
    for who in ("none", "wrong-key", "admin", "read", "ingest", "cookie-revoked"):
        assert get(who).status == 401, who  # a bearer key is not a session
    assert get("cookie-admin-no-csrf").status == 200
    assert get("cookie-read").json()["scope"] == "read"
    cookie, csrf = sign_in(srv, ADMIN_TOKEN)
    delete = lambda h: srv.request("DELETE", "/api/v1/session", headers=h, token="").status
    assert delete({}) == 401
    assert delete({"Authorization": f"Bearer {ADMIN_TOKEN}"}) == 401
    assert delete({"Cookie": cookie}) == 403
    assert delete({"Cookie": cookie, "X-CSRF-Token": "0" * 64}) == 403
    assert delete({"Cookie": cookie, "X-CSRF-Token": csrf}) == 200
    assert delete({"Cookie": cookie, "X-CSRF-Token": csrf}) == 401


def test_route_and_method_checks_come_before_authentication(matrix):
    srv, _ = matrix
    for _, pattern in server_routes():
        r = srv.request("PURGE", pattern.replace("*", "1"), token="")
        assert r.status == 405, (pattern, r.status)
    assert srv.get("/api/v1/nope", token="").status == 404
    assert srv.get("/api/v1/keys/" + "1" * 2000, token="").status == 404


# ---------------------------------------------------------------------------------------
# 2. Token storage
# ---------------------------------------------------------------------------------------


def files_under(d):
    for root, _, names in os.walk(d):
        for n in names:
            yield os.path.join(root, n)


def stored_bytes(data_dir):
    """Everything the store holds: the bytes of every file in the data directory (SQLite),
    or every table of the data directory's database dumped as RowBinary (ClickHouse)."""
    uri = store_uri(data_dir)
    if not uri:
        return b"".join(open(f, "rb").read() for f in files_under(data_dir))

    def query(q):
        return clickhouse_sql(uri, q)
    tables = query("SHOW TABLES").decode().split()
    assert "keys" in " ".join(tables), tables
    return b"".join(query(f"SELECT * FROM `{t}` FORMAT RowBinary") for t in tables)


def test_tokens_never_reach_the_store(tmp_path):
    srv = Server(tmp_path / "data").start()
    try:
        srv.put("/api/v1/services/svc/profiling", body={"enabled": True})
        tokens = {"admin": ADMIN_TOKEN}
        for scope in ("admin", "read", "ingest"):
            tokens[scope + "-made"] = srv.key(scope)
        tokens["bound"] = srv.key("ingest", service="svc")
        assert srv.upload(profile_body(), service="svc", token=tokens["bound"]).status == 201
        assert srv.upload(profile_body(), service="svc", token=tokens["ingest-made"],
                          profile_id="6f1c1f0e-0000-4000-8000-000000000001").status == 201
        assert srv.get("/api/v1/services", token=tokens["read-made"]).status == 200
        assert srv.get("/api/v1/keys", token=tokens["admin-made"]).status == 200
        sign_in(srv, tokens["read-made"])
        running = stored_bytes(srv.data_dir)
    finally:
        srv.stop()
    stopped = stored_bytes(srv.data_dir)
    log = open(srv.log_path, "rb").read()
    for name, tok in tokens.items():
        digest = hashlib.blake2b(tok.encode(), digest_size=32).digest()
        for where, blob in (("running", running), ("stopped", stopped), ("log", log)):
            assert tok.encode() not in blob, (name, where)
            assert tok[3:].encode() not in blob, (name, where)
        # the positive control: the hash is what is stored (in the WAL or the database)
        assert digest in running or digest in stopped, name


def test_a_store_password_is_never_printed():
    """A ClickHouse store that cannot be reached is a clear error at start, naming the
    store with its password written as *** (the CLI's own store too)."""
    secret = "S3cret" + secrets.token_hex(8)
    uri = f"clickhouse:http://127.0.0.1:{free_port()}/rt?user=u&password={secret}&cluster=c"
    for args in (["serve", "--listen", "127.0.0.1:0"], ["top", "--service", "s", "--type", "cpu"]):
        r = subprocess.run([BIN, *args, "--store", uri], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "ROOTTRACE_TOKEN": ADMIN_TOKEN})
        assert r.returncode == 1, (args, r.returncode, r.stderr)
        assert secret not in r.stdout + r.stderr, args
        assert "password=***&cluster=c" in r.stderr and "unreachable" in r.stderr, r.stderr


def test_secrets_are_compared_in_constant_time():
    """Static check (nothing better exists: a unit test cannot observe timing without a
    timing assertion): every comparison of a key hash, session id or CSRF token in the
    server is sodium_memcmp, and no plain memcmp/strcmp touches them. The hashing and the
    lookup by hash are checked in the code path by tests/unit/control/test_key_storage.c."""
    keys = open(os.path.join(REPO, "server/src/control/keys.c")).read()
    session = open(os.path.join(REPO, "server/src/http/session.c")).read()
    assert "sodium_memcmp(h, c->keys[i].hash, 32)" in keys
    assert "sodium_memcmp(x->id, id, RT_SESSION_HEX - 1)" in session
    assert "sodium_memcmp(h, csrf, RT_SESSION_HEX - 1)" in session
    plain = re.compile(r"(?<!sodium_)\b(memcmp|strcmp|strncmp|strcasecmp|bcmp)\s*\(([^;]*)")
    for name, src in (("keys.c", keys), ("session.c", session)):
        for fn, args in plain.findall(src):
            assert not re.search(r"hash|token|csrf|\bid\b|secret", args), (name, fn, args)


# ---------------------------------------------------------------------------------------
# 3. Request limits (the others are in test_ingest_errors.py, cited by docs/security.md)
# ---------------------------------------------------------------------------------------


def raw_request(srv, method, path, headers=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def refused_upload(srv, data, status, word):
    before = srv.metric("roottrace_store_profiles")
    r = srv.upload(data, service="svc")
    assert r.status == status, (r.status, r.body)
    assert word in r.json()["message"]
    assert srv.metric("roottrace_store_profiles") == before


def pb_gzip(raw):
    return gzip.compress(raw, 6)


def test_limit_pprof_samples(server):
    raw = pb.build([(["main.a"], [1, 10])], compress=False)
    refused_upload(server, pb_gzip(raw + b"\x12\x00" * (10**6 + 1)), 413, "max_samples")


def test_limit_pprof_locations(server):
    raw = pb.build([(["main.a"], [1, 10])], compress=False)
    refused_upload(server, pb_gzip(raw + b"\x22\x02\x08\x07" * (10**6 + 1)), 413,
                   "max_locations")


def test_limit_pprof_strings(server):
    raw = pb.build([(["main.a"], [1, 10])], compress=False)
    refused_upload(server, pb_gzip(raw + b"\x32\x00" * (10**6 + 1)), 413, "max_strings")


def test_limit_json_bodies_too(server):
    """The 16 MiB body limit is the transport's: a JSON route refuses an oversized body
    before reading it as JSON; sign-in bodies stop at 4 KiB."""
    body = b'{"enabled": true, "pad": "' + b"x" * (17 << 20) + b'"}'
    r = server.put("/api/v1/services/a/profiling", body=body,
                   headers={"Content-Type": "application/json"})
    assert r.status == 413 and r.json()["error"] == "too_large"
    r = server.post("/api/v1/session", body=b'{"token": "' + b"x" * 5000 + b'"}', token="",
                    headers={"Content-Type": "application/json"})
    assert r.status == 413 and "4096" in r.json()["message"]
    assert server.get("/api/v1/services").json() == []


def peak_rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_bodies_without_credentials_are_not_kept(server):
    """A request that will be refused whatever its body (no key, a wrong key, an unknown
    route) has its body read and dropped: four concurrent 15 MiB bodies raise the server's
    peak memory by far less than one of them (the server used to buffer each)."""
    import threading
    body = os.urandom(15 << 20)
    before = peak_rss_kib(server.proc.pid)
    got = []

    def send(token, path):
        got.append(server.request("POST", path, {"service": "svc"}, body, token=token,
                                  headers={"Content-Type": "application/octet-stream"}).status)
    threads = [threading.Thread(target=send, args=a) for a in
               (("", "/api/v1/profiles"), ("rt_wrong_0123456789abcdef", "/api/v1/profiles"),
                ("", "/api/v1/nope"), ("", "/api/v1/keys"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [401, 401, 401, 404], got
    grew_mib = (peak_rss_kib(server.proc.pid) - before) / 1024
    assert grew_mib < 8, f"peak memory grew {grew_mib:.0f} MiB"
    r = server.upload(profile_body(), service="svc")  # credentials: the body is kept
    assert r.status == 201


def test_limit_query_parameters(server):
    ok = {f"p{i}": "v" for i in range(62)} | {"service": "svc"}
    assert server.get("/api/v1/services", ok).status == 200
    over = {f"p{i}": "v" for i in range(64)}
    r = server.get("/api/v1/services", over, token="")
    assert r.status == 400 and "at most 63" in r.json()["message"]
    assert server.get("/api/v1/services?service=a%00b").status == 400


def test_limit_url_and_headers(server):
    """libmicrohttpd's 32 KiB per-connection memory pool: a longer request line gets 414,
    longer headers 431; the server keeps serving."""
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert raw_request(server, "GET", "/api/v1/services?x=" + "a" * 20000, auth)[0] == 200
    assert raw_request(server, "GET", "/api/v1/services?x=" + "a" * 40000, auth)[0] == 414
    assert raw_request(server, "GET", "/api/v1/services", {**auth, "X-Pad": "a" * 40000})[0] \
        == 431
    many = {**auth, **{f"X-H{i}": "v" for i in range(4000)}}
    assert raw_request(server, "GET", "/api/v1/services", many)[0] == 431
    assert server.get("/healthz").status == 200


# ---------------------------------------------------------------------------------------
# 4. Response headers, CORS
# ---------------------------------------------------------------------------------------

API_HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
               "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
               "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'"}


def test_api_answers_carry_security_headers(server):
    answers = [server.get("/api/v1/services"), server.get("/api/v1/services", token=""),
               server.get("/api/v1/nope"), server.request("PATCH", "/api/v1/services"),
               server.get("/healthz"), server.get("/metrics"),
               server.upload(b"not a profile", service="svc"),
               server.get("/api/v1/export", {"service": "svc", "type": "cpu",
                                             "format": "pprof"})]
    for r in answers:
        for k, v in API_HEADERS.items():
            assert r.headers.get(k) == v, (r.status, k, r.headers.get(k))
    assert answers[0].headers["Content-Type"] == "application/json"


def test_ui_answers_carry_security_headers(server):
    """The UI's pages (test_session.py::test_ui_is_embedded_with_a_strict_csp checks the CSP
    directives and the assets) also forbid framing."""
    for path in ("/", "/index.html", "/favicon.svg", "/no/such/page"):
        r = server.get(path, token="")
        assert r.headers["X-Frame-Options"] == "DENY", path
        assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"], path
        assert r.headers["X-Content-Type-Options"] == "nosniff", path
        assert r.headers["Referrer-Policy"] == "no-referrer", path


def test_no_cors_for_other_origins(server):
    """No answer grants another origin anything: no Access-Control-Allow-* header, and a
    preflight (OPTIONS) is refused, so a cross-origin page can neither read answers nor send
    the JSON or custom-header requests that mutate."""
    cookie, csrf = sign_in(server, ADMIN_TOKEN)
    evil = {"Origin": "https://evil.example", "Cookie": cookie}
    pre = server.request("OPTIONS", "/api/v1/services/x/profiling", token="",
                         headers={**evil, "Access-Control-Request-Method": "PUT",
                                  "Access-Control-Request-Headers": "x-csrf-token"})
    assert pre.status == 405
    answers = [pre, server.request("GET", "/api/v1/services", token="", headers=evil),
               server.request("POST", "/api/v1/session", body={"token": ADMIN_TOKEN},
                              token="", headers={"Origin": "https://evil.example"})]
    for r in answers:
        assert not [h for h in r.headers if h.lower().startswith("access-control-")], r.headers


# ---------------------------------------------------------------------------------------
# 5. CSRF and the session cookie
# ---------------------------------------------------------------------------------------


def test_cross_site_form_post_with_the_cookie_is_refused(server):
    """What a cross-site <form> can send (text/plain body, no custom header) with the
    session cookie changes nothing (SameSite=Strict keeps the cookie off such requests in
    browsers; this checks the server-side defence beneath it)."""
    cookie, _ = sign_in(server, ADMIN_TOKEN)
    for method, path, body in (("POST", "/api/v1/keys", b'{"scope": "admin"}'),
                               ("POST", "/api/v1/issues", b'{"service": "x", "started_at": 1}'),
                               ("PUT", "/api/v1/services/x/profiling", b'{"enabled": true}'),
                               ("DELETE", "/api/v1/keys/1", None),
                               ("POST", "/api/v1/deploys", b'{"service": "x", "version": "1"}')):
        r = server.request(method, path, body=body, token="",
                           headers={"Cookie": cookie, "Content-Type": "text/plain",
                                    "Origin": "https://evil.example"})
        assert r.status == 403 and "X-CSRF-Token" in r.json()["message"], (method, path)
    assert server.get("/api/v1/services").json() == []
    assert len(server.get("/api/v1/keys").json()) == 1


def test_sign_in_takes_json_only(server):
    """Login CSRF: a form on another site can post text/plain, urlencoded or multipart
    bodies (even one shaped like JSON), never application/json; sign-in refuses them all."""
    body = b'{"token": "' + ADMIN_TOKEN.encode() + b'", "x": "="}'
    for ctype in ("text/plain", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x", "application/jsonp", None):
        headers = {"Origin": "https://evil.example", **({"Content-Type": ctype} if ctype else {})}
        r = server.request("POST", "/api/v1/session", body=body, token="", headers=headers)
        assert r.status == 415 and "Set-Cookie" not in r.headers, (ctype, r.status)
    for ctype in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        r = server.request("POST", "/api/v1/session", body=body, token="",
                           headers={"Content-Type": ctype})
        assert r.status == 201 and "Set-Cookie" in r.headers, ctype


def test_session_cookie_flags(server):
    """HttpOnly, SameSite=Strict, Path=/, a 12 h Max-Age; Secure when a TLS-terminating proxy
    says so with X-Forwarded-Proto: https (and on sign-out alike)."""
    r = server.post("/api/v1/session", body={"token": ADMIN_TOKEN}, token="")
    attrs = [a.strip() for a in r.headers["Set-Cookie"].split(";")[1:]]
    assert {"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"} == set(attrs)
    r = server.post("/api/v1/session", body={"token": ADMIN_TOKEN}, token="",
                    headers={"X-Forwarded-Proto": "https"})
    attrs = [a.strip() for a in r.headers["Set-Cookie"].split(";")[1:]]
    assert {"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200", "Secure"} == set(attrs)
    out = server.request("DELETE", "/api/v1/session", token="",
                         headers={"Cookie": r.headers["Set-Cookie"].split(";")[0],
                                  "X-CSRF-Token": r.json()["csrf_token"],
                                  "X-Forwarded-Proto": "HTTPS"})
    assert out.status == 200
    assert "Secure" in out.headers["Set-Cookie"] and "Max-Age=0" in out.headers["Set-Cookie"]


# ---------------------------------------------------------------------------------------
# 7. Default loopback binding
# ---------------------------------------------------------------------------------------


def listening_sockets(pid):
    """(address, port) of every TCP socket in LISTEN state that process pid holds."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:
                continue
            addr, port = f[1].split(":")
            raw = bytes.fromhex(addr)
            if width == 8:
                ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:
                ip = socket.inet_ntop(socket.AF_INET6, b"".join(
                    raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            out.append((ip, int(port, 16)))
    return out


def test_serve_listens_on_loopback_by_default(tmp_path):
    """`roottrace serve` without --listen: 127.0.0.1:4040 (cmd_serve.c), nothing else. The
    port is fixed, so when another process holds 4040 the refusal's message shows the
    default address instead. The conformance suite runs two passes at once: they take turns
    (a lock file) rather than refuse each other."""
    log = tmp_path / "serve.log"
    with open(os.path.join(tempfile.gettempdir(),
                           f"roottrace-test-port-4040-{os.getuid()}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _serve_on_the_default_address(tmp_path, log)


def _serve_on_the_default_address(tmp_path, log):
    with open(log, "wb") as f:
        p = subprocess.Popen([BIN, "serve", *store_args(tmp_path / "data")], stdout=f,
                             stderr=f, env={**os.environ,
                                            "ROOTTRACE_BOOTSTRAP_TOKEN": ADMIN_TOKEN})
    try:
        deadline = time.monotonic() + 20
        socks = []
        while time.monotonic() < deadline and p.poll() is None and not socks:
            socks = listening_sockets(p.pid)
            time.sleep(0.05)
        if p.poll() is not None:
            # The refusal names the default address, but no socket was seen: not a pass.
            assert "cannot listen on 127.0.0.1:4040" in log.read_text(), log.read_text()
            pytest.skip("another process holds port 4040: the default binding could not be "
                        "observed (the refusal names 127.0.0.1:4040)")
        assert socks == [("127.0.0.1", 4040)], socks
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=30)
    assert "listening on 127.0.0.1:4040" in log.read_text()


def test_container_image_listens_on_all_interfaces_and_compose_on_loopback():
    """The documented exception: the image says 0.0.0.0 explicitly, Compose publishes the
    port on the host's loopback only."""
    docker = open(os.path.join(REPO, "deploy", "Dockerfile")).read()
    assert '"--listen", "0.0.0.0:4040"' in docker
    compose = yaml.safe_load(open(os.path.join(REPO, "deploy", "compose.yaml")))
    ports = [p for svc in compose["services"].values() for p in svc.get("ports", [])]
    assert ports and all(str(p).startswith("127.0.0.1:") for p in ports), ports


# ---------------------------------------------------------------------------------------
# 8. Data directory permissions
# ---------------------------------------------------------------------------------------


def modes(d):
    out = {os.path.relpath(d, d): oct(os.stat(d).st_mode & 0o777)}
    for root, dirs, names in os.walk(d):
        for n in dirs + names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, d)] = oct(os.stat(p).st_mode & 0o777)
    return out


@sqlite_only("the modes of the SQLite files")
def test_data_directory_is_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        srv = Server(tmp_path / "data").start()
        try:
            srv.put("/api/v1/services/svc/profiling", body={"enabled": True})
            assert srv.upload(profile_body(), service="svc").status == 201
            sign_in(srv, ADMIN_TOKEN)
            running = modes(srv.data_dir)
        finally:
            srv.stop()
        cli_dir = tmp_path / "a" / "b" / "data"
        cli("ingest", "--data", str(cli_dir), "--service", "svc", "--type", "cpu",
            write_profile(tmp_path))
        by_cli = modes(str(cli_dir))
    finally:
        os.umask(old)
    assert {"roottrace.db", "roottrace.db-wal", "roottrace.db-shm"} <= set(running), running
    for got in (running, modes(srv.data_dir), by_cli):
        assert got["."] == "0o700", got
        assert all(m == "0o600" for f, m in got.items() if f != "."), got
    # every directory created on the way is private too
    assert oct(os.stat(tmp_path / "a").st_mode & 0o777) == "0o700"
    assert oct(os.stat(tmp_path / "a" / "b").st_mode & 0o777) == "0o700"


def write_profile(tmp_path):
    p = tmp_path / "p.pb.gz"
    p.write_bytes(profile_body())
    return str(p)


@sqlite_only("the modes of the SQLite files")
def test_an_open_existing_data_directory_is_warned_about(tmp_path):
    """An existing directory keeps its mode (it is the operator's), but the log says so."""
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o755)
    srv = Server(data).start()
    srv.stop()
    log = open(srv.log_path).read()
    assert f"the data directory {data} has mode 755" in log, log
    assert "the database" not in log  # created by the server: 0600
    assert oct(os.stat(data / "roottrace.db").st_mode & 0o777) == "0o600"
