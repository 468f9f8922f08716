"""deploy/: what can be checked without a Docker engine (none runs on these machines).

- The image's build stage runs the README's own build commands ("Building from source").
- The runtime stage installs a Debian package for every shared library the binary needs.
- The README's Quickstart block, run as pasted (with a stand-in `docker`), writes
  deploy/compose.yaml (its build context made relative to the repository root) and a `.env`
  with a random token, keeps an existing `.env`, and calls `docker compose up -d`.
- `docker-compose config` accepts the file, publishes the server on loopback only, mounts the
  data volume and refuses to start without the token.
"""
import os
import re
import shutil
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The image's binary is the plain `make` build, whatever binary the other tests run
# (ROOTTRACE_BIN may name the ASan build, which also needs libasan).
BIN = os.path.join(REPO, "build", "roottrace")


def read(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as f:
        return f.read()


def readme_block(heading):
    """The first ```sh block after the README heading `## heading`."""
    text = read("README.md")
    at = text.index("## " + heading + "\n")
    m = re.compile(r"```sh\n(.*?)```", re.S).search(text, at)
    assert m, heading
    return m.group(1)


def dockerfile_stages():
    """[(FROM line, [instruction lines with continuations joined])] of deploy/Dockerfile; the
    FROM lines with the defaults of the build arguments declared before the first FROM."""
    stages, cur, pending, args = [], None, "", {}
    for line in read("deploy", "Dockerfile").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if line.endswith("\\"):
            continue
        ins, pending = pending, ""
        if cur is None and ins.startswith("ARG "):
            name, _, default = ins[len("ARG "):].partition("=")
            args[name.strip()] = default.strip()
        elif ins.startswith("FROM "):
            ins = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], ins)
            cur = (ins, [])
            stages.append(cur)
        else:
            cur[1].append(ins)
    return stages


def test_dockerfile_build_stage_runs_the_readme_build_commands():
    readme = [l.strip() for l in readme_block("Building from source").splitlines() if l.strip()]
    assert readme == ["scripts/install-deps.sh --build", "make"]
    build = dockerfile_stages()[0]
    runs = [i[len("RUN "):].strip() for i in build[1] if i.startswith("RUN ")]
    assert runs == readme


def test_base_images_default_to_the_published_ones():
    """The base images are build arguments (scripts/test-containers.sh names stand-ins); what
    users build from by default is Node's and Debian's published images."""
    froms = [stage[0] for stage in dockerfile_stages()]
    assert froms == ["FROM node:20-bookworm AS build", "FROM debian:bookworm-slim"], froms
    assert re.findall(r"^FROM (\S+)", read("deploy", "Dockerfile"), re.M) == [
        "${BUILD_IMAGE}", "${RUNTIME_IMAGE}"]


def test_runtime_stage_installs_every_library_the_binary_needs():
    if not os.path.exists(BIN):
        pytest.fail("build/roottrace is missing: run make")
    out = subprocess.run(["readelf", "-d", BIN], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    assert "libmicrohttpd.so.12" in needed and "libsodium.so.23" in needed, needed
    runtime = dockerfile_stages()[-1]
    assert runtime[0].startswith("FROM debian:bookworm"), runtime[0]
    apt = " ".join(i for i in runtime[1] if "apt-get install" in i)
    listed = set(re.findall(r"\b(lib[\w.+-]+|zlib1g|ca-certificates)\b", apt))
    ldd = subprocess.run(["ldd", BIN], capture_output=True, text=True, check=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    for lib in needed:
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(paths[lib])],
                               capture_output=True, text=True)
        if owner.returncode != 0:  # merged /usr: dpkg knows the /lib path
            owner = subprocess.run(["dpkg", "-S", paths[lib]], capture_output=True, text=True)
        pkg = owner.stdout.split(":")[0]
        assert pkg == "libc6" or pkg in listed, (lib, pkg, sorted(listed))


def test_runtime_stage_is_unprivileged_with_volume_healthcheck_and_all_interfaces():
    ins = dockerfile_stages()[-1][1]
    user = [i for i in ins if i.startswith("USER ")]
    assert user and user[-1].split()[1] not in ("root", "0"), user
    assert 'VOLUME ["/data"]' in ins
    health = [i for i in ins if i.startswith("HEALTHCHECK ")]
    assert health and '"roottrace", "health"' in health[0], health
    cmd = [i for i in ins if i.startswith("CMD ")][-1]
    assert '"--listen", "0.0.0.0:4040"' in cmd and '"--data", "/data"' in cmd, cmd


@pytest.fixture
def quickstart(tmp_path):
    """Runs the README's Quickstart block in a copy-free directory with a stand-in `docker`
    that records its arguments. Returns (run, dir, calls file)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "docker-calls"
    (fake / "docker").write_text('#!/bin/sh\necho "$*" >> "%s"\n' % calls)
    (fake / "docker").chmod(0o755)
    work = tmp_path / "clone"
    work.mkdir()
    block = readme_block("Quickstart with Docker Compose")
    env = dict(os.environ, PATH="%s:%s" % (fake, os.environ["PATH"]))

    def run():
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r

    return run, work, calls


def test_quickstart_writes_the_deploy_compose_file_and_a_random_token(quickstart):
    run, work, calls = quickstart
    run()
    written = (work / "compose.yaml").read_text()
    deploy = read("deploy", "compose.yaml")
    assert "context: ..\n" in deploy
    assert written == deploy.replace("context: ..\n", "context: .\n")
    env = (work / ".env").read_text()
    m = re.fullmatch(r"ROOTTRACE_BOOTSTRAP_TOKEN=(rt_[0-9a-f]{48})\n", env)
    assert m, env
    assert calls.read_text() == "compose up -d\n"
    # Pasted again: the compose file is rewritten, the token is kept.
    run()
    assert (work / ".env").read_text() == env
    # Another clone gets another token.
    (work / ".env").unlink()
    run()
    assert (work / ".env").read_text() != env


def compose_config(workdir, env_file_text):
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.fail("docker-compose is missing: scripts/install-deps.sh installs it")
    if env_file_text is None:
        (workdir / ".env").unlink(missing_ok=True)
    else:
        (workdir / ".env").write_text(env_file_text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOTTRACE_")}
    return subprocess.run([exe, "-f", str(workdir / "compose.yaml"), "config"], cwd=workdir,
                          env=env, capture_output=True, text=True, timeout=60)


def test_compose_file_validates_publishes_on_loopback_and_needs_the_token(tmp_path):
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    shutil.copy(os.path.join(REPO, "deploy", "compose.yaml"), deploy / "compose.yaml")
    r = compose_config(deploy, "ROOTTRACE_BOOTSTRAP_TOKEN=rt_test_0123\n")
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)
    svc = cfg["services"]["roottrace"]
    assert svc["environment"]["ROOTTRACE_BOOTSTRAP_TOKEN"] == "rt_test_0123"
    assert svc["build"]["dockerfile"] == "deploy/Dockerfile"
    assert os.path.realpath(svc["build"]["context"]) == os.path.realpath(tmp_path)
    assert [p.split(":")[0] for p in svc["ports"]] == ["127.0.0.1"], svc["ports"]
    assert any(v.startswith("roottrace-data:/data") for v in svc["volumes"]), svc["volumes"]
    r = compose_config(deploy, None)
    assert r.returncode != 0 and "write it in .env" in (r.stderr + r.stdout)


def test_compose_clickhouse_profile_points_roottrace_at_clickhouse(tmp_path):
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    shutil.copy(os.path.join(REPO, "deploy", "compose.yaml"), deploy / "compose.yaml")
    store = "clickhouse:http://clickhouse:8123/roottrace?user=roottrace&password=s3cret"
    r = compose_config(deploy, "ROOTTRACE_BOOTSTRAP_TOKEN=rt_x_0123\nCOMPOSE_PROFILES=clickhouse\n"
                               "CLICKHOUSE_PASSWORD=s3cret\nROOTTRACE_STORE=%s\n" % store)
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)
    rt, ch = cfg["services"]["roottrace"], cfg["services"]["clickhouse"]
    assert rt["environment"]["ROOTTRACE_STORE"] == store
    assert ch["profiles"] == ["clickhouse"]
    # The URI's host, database, user and password are the ClickHouse service's.
    m = re.fullmatch(r"clickhouse:http://(\w+):8123/(\w+)\?user=(\w+)&password=(\w+)", store)
    assert m.group(1) == "clickhouse"
    assert (m.group(2), m.group(3), m.group(4)) == (ch["environment"]["CLICKHOUSE_DB"],
                                                    ch["environment"]["CLICKHOUSE_USER"],
                                                    ch["environment"]["CLICKHOUSE_PASSWORD"])
    assert not ch.get("ports"), "ClickHouse is not published on the host"
    # Without the ClickHouse lines the server keeps SQLite: ROOTTRACE_STORE is empty.
    r = compose_config(deploy, "ROOTTRACE_BOOTSTRAP_TOKEN=rt_x_0123\n")
    assert yaml.safe_load(r.stdout)["services"]["roottrace"]["environment"]["ROOTTRACE_STORE"] == ""


def test_roottrace_store_environment_names_the_store_and_empty_means_data(tmp_path):
    """The image's command passes --data /data; Compose's ROOTTRACE_STORE overrides it when
    set, and an empty one (SQLite mode) leaves --data in charge."""
    db = tmp_path / "elsewhere" / "rt.db"
    env = dict(os.environ, ROOTTRACE_STORE="sqlite:%s" % db)
    r = subprocess.run([BIN, "issue", "create", "--service", "s", "--at", "1700000000",
                        "--data", str(tmp_path / "data"), "--json"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert db.exists() and not (tmp_path / "data").exists()
    env["ROOTTRACE_STORE"] = ""
    r = subprocess.run([BIN, "issue", "create", "--service", "s", "--at", "1700000000",
                        "--data", str(tmp_path / "data"), "--json"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "data" / "roottrace.db").exists()
