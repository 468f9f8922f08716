"""The web UI's sessions (DESIGN §9): POST/GET/DELETE /api/v1/session, the session cookie as a
principal on every /api/v1/ route, CSRF on cookie-authenticated mutations, and the embedded
UI's pages with their Content-Security-Policy (server/src/http/session.c, ui.c, server.c)."""
import re

from conftest import ADMIN_TOKEN

S = "/api/v1/session"


def sign_in(server, token):
    r = server.post(S, body={"token": token}, token="")
    assert r.status == 201, r.body
    cookie = r.headers["Set-Cookie"]
    return cookie.split(";")[0], r.json()["csrf_token"], cookie


def as_cookie(server, method, path, cookie, csrf=None, body=None):
    headers = {"Cookie": cookie}
    if csrf is not None:
        headers["X-CSRF-Token"] = csrf
    return server.request(method, path, body=body, headers=headers, token="")


def test_sign_in_sets_a_strict_http_only_cookie(server):
    pair, csrf, raw = sign_in(server, ADMIN_TOKEN)
    assert re.fullmatch(r"rt_session=[0-9a-f]{64}", pair)
    attrs = [a.strip() for a in raw.split(";")[1:]]
    assert "HttpOnly" in attrs and "SameSite=Strict" in attrs and "Path=/" in attrs
    max_age = int(next(a for a in attrs if a.startswith("Max-Age=")).split("=")[1])
    assert 0 < max_age <= 12 * 3600
    assert re.fullmatch(r"[0-9a-f]{64}", csrf) and csrf not in pair
    again, csrf2, _ = sign_in(server, ADMIN_TOKEN)
    assert again != pair and csrf2 != csrf  # random per session
    got = as_cookie(server, "GET", S, pair)
    assert got.status == 200 and got.json()["csrf_token"] == csrf
    assert got.json()["scope"] == "admin"


def test_only_admin_and_read_keys_sign_in(server):
    assert server.post(S, body={"token": "rt_unknown_0123456789abcdef"}, token="").status == 401
    r = server.post(S, body={"token": server.key("ingest")}, token="")
    assert r.status == 403 and r.json()["error"] == "forbidden"
    assert "Set-Cookie" not in r.headers
    assert server.post(S, body={}, token="").status == 400
    assert server.post(S, body=b"not json", token="",
                       headers={"Content-Type": "application/json"}).status == 400
    _, _, _ = sign_in(server, server.key("read"))


def test_cookie_authenticates_reads_and_needs_csrf_to_change(server):
    pair, csrf, _ = sign_in(server, ADMIN_TOKEN)
    assert as_cookie(server, "GET", "/api/v1/services", pair).status == 200
    put = "/api/v1/services/shop/profiling"
    for bad in (None, "", "0" * 64, csrf[:-1], csrf.upper() if csrf.upper() != csrf else "x"):
        r = as_cookie(server, "PUT", put, pair, bad, body={"enabled": True})
        assert r.status == 403, (bad, r.status)
        assert "X-CSRF-Token" in r.json()["message"]
    r = as_cookie(server, "POST", "/api/v1/issues", pair, None,
                  body={"service": "shop", "title": "t", "started_at": 1764460800})
    assert r.status == 403
    assert server.get("/api/v1/services").json() == []  # nothing changed
    r = as_cookie(server, "PUT", put, pair, csrf, body={"enabled": True})
    assert r.status == 200 and r.json()["profiling_enabled"] is True
    audit = server.get("/api/v1/audit").json()
    assert any(a["target"] == "shop" for a in audit)


def test_read_session_sees_everything_and_changes_nothing(server):
    pair, csrf, _ = sign_in(server, server.key("read"))
    assert as_cookie(server, "GET", "/api/v1/services", pair).status == 200
    assert as_cookie(server, "GET", "/api/v1/audit", pair).status == 200
    r = as_cookie(server, "PUT", "/api/v1/services/shop/profiling", pair, csrf,
                  body={"enabled": True})
    assert r.status == 403 and "read" in r.json()["message"]
    assert as_cookie(server, "GET", "/api/v1/keys", pair).status == 403


def test_bearer_requests_ignore_the_cookie_and_need_no_csrf(server):
    pair, _, _ = sign_in(server, ADMIN_TOKEN)
    r = server.put("/api/v1/services/shop/profiling", body={"enabled": True},
                   headers={"Cookie": pair})
    assert r.status == 200
    # a bad bearer key is refused even with a good cookie
    r = server.get("/api/v1/services", headers={"Cookie": pair}, token="rt_wrong_0123456789")
    assert r.status == 401


def test_sign_out_and_revocation_end_the_session(server):
    pair, csrf, _ = sign_in(server, ADMIN_TOKEN)
    assert as_cookie(server, "DELETE", S, pair).status == 403  # CSRF needed to sign out too
    r = as_cookie(server, "DELETE", S, pair, csrf)
    assert r.status == 200 and "Max-Age=0" in r.headers["Set-Cookie"]
    assert as_cookie(server, "GET", "/api/v1/services", pair).status == 401
    assert as_cookie(server, "GET", S, pair).status == 401
    # revoking the key ends its sessions
    made = server.post("/api/v1/keys", body={"scope": "read"}).json()
    pair, _, _ = sign_in(server, made["key"])
    assert as_cookie(server, "GET", "/api/v1/services", pair).status == 200
    assert server.delete(f"/api/v1/keys/{made['id']}").status == 200
    assert as_cookie(server, "GET", "/api/v1/services", pair).status == 401


def test_cookie_parsing(server):
    pair, _, _ = sign_in(server, ADMIN_TOKEN)
    value = pair.split("=", 1)[1]
    ok = as_cookie(server, "GET", "/api/v1/services", f"theme=dark; {pair}; other=1")
    assert ok.status == 200
    for bad in ("rt_session=" + "0" * 64, "rt_session=" + value[:-1], "x" + pair,
                "rt_session=" + value + "0", ""):
        assert as_cookie(server, "GET", "/api/v1/services", bad).status == 401, bad


CSP_REQUIRED = ("script-src 'self'", "style-src 'self'", "object-src 'none'",
                "frame-ancestors 'none'", "base-uri 'none'")


def check_ui_headers(r):
    csp = r.headers["Content-Security-Policy"]
    for part in CSP_REQUIRED:
        assert part in csp, part
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Referrer-Policy"] == "no-referrer"


def test_ui_is_embedded_with_a_strict_csp(server):
    r = server.get("/", token="")
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/html")
    check_ui_headers(r)
    page = r.body.decode()
    assert "<script>" not in page and " style=" not in page  # nothing inline
    for asset in re.findall(r'(?:src|href)="(/assets/[^"]+)"', page):
        a = server.get(asset, token="")
        assert a.status == 200, asset
        check_ui_headers(a)
        kind = "javascript" if asset.endswith(".js") else "css"
        assert kind in a.headers["Content-Type"]
    missing = server.get("/no/such/page", token="")
    assert missing.status == 404
    check_ui_headers(missing)
    assert server.get("/api/v1/nope", token="").json()["error"] == "not_found"
