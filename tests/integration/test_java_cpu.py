"""The Java SDK's CPU profiles from JFR (issue #20, DESIGN §7): uploaded as pprof with
runtime=java, stored as cpu by the producer roottrace-java, whose capacity takes the CPU the
JVM accounted to the threads it sampled (thread_cpu_ns, summed over several threads), and
whose answers say what JFR's sampler sees."""
import pprof_build as pb

NOW = 1764460800  # 2025-11-30T00:00:00Z
S = 10**9


def upload(server, **params):
    # 10 s, 300 samples at 10 ms: 3 s sampled (JFR ticks on wall time)
    data = pb.cpu_profile({"java.lang.Thread.run;app.Main.burnHot": 250,
                           "java.lang.Thread.run;app.Main.idle": 50},
                          time_nanos=NOW * S, duration_nanos=10 * S)
    return server.upload(data, service="jsvc", runtime="java", sdk_version="0.2.0", **params)


def test_thread_cpu_of_several_threads_scales_capacity(server):
    # two threads ran 7.5 s each in 10 s of wall time: more than one thread can, which the
    # JFR producer's sum of threads may be; the process ran 16 s (GC, JIT)
    r = upload(server, thread_cpu_ns=str(15 * S), process_cpu_ns=str(16 * S))
    assert r.status == 201, r.body
    assert r.json()["type"] == "cpu" and r.json()["profiles"][0]["agent"] == "roottrace-java"
    ans = server.get("/api/v1/profile", params={"service": "jsvc", "type": "cpu",
                                                "from": NOW, "to": NOW + 10}).json()
    inputs = ans["capacity"]["inputs"]
    assert inputs["cpu_basis"] == "os"
    assert inputs["sampled_cpu_s"] == 3.0 and inputs["os_cpu_s"] == 15.0
    assert inputs["cpu_factor"] == 5.0
    assert ans["capacity"]["vcpu_hours_per_month"] == 730 * 15 / 10
    agree = ans["cpu_agreement"]
    assert agree["scope"] == "threads running Java code (JFR)"
    assert agree["capacity_uses"] == "os" and agree["os_thread_cpu_s"] == 15.0
    assert agree["ratio"] == 3.0 / 15 and agree["warning"]
    (prod,) = [p for p in ans["producers"] if p["agent"] == "roottrace-java"]
    assert "JFR" in prod["method"] and "GC and JIT threads are not seen" in prod["method"]
    assert ans["functions"][0]["name"] == "app.Main.burnHot"


def test_thread_cpu_beyond_1024_cpus_is_refused(server):
    r = upload(server, thread_cpu_ns=str(1024 * 10_250_000_000 + 1))
    assert r.status == 400, r.body
    assert "thread_cpu_ns" in r.json()["message"] and "1024 CPUs" in r.json()["message"]
    r = upload(server, thread_cpu_ns=str(1024 * 10_250_000_000))
    assert r.status == 201, r.body


def test_wall_profiles_keep_their_producer(server):
    data = pb.wall_profile({"java.lang.Thread.run;app.Main.sleep": 10}, time_nanos=NOW * S,
                           duration_nanos=10 * S)
    r = server.upload(data, service="jsvc", runtime="java")
    assert r.status == 201 and r.json()["type"] == "wall", r.body
    # one thread's bound still holds for a wall upload's thread figure: it names no threads
    r = server.upload(data, service="jsvc", runtime="java", thread_cpu_ns=str(11 * S))
    assert r.status == 400, r.body
