"""Capacity against the kernel's CPU accounting, where a sampler goes wrong (DESIGN §7, issue
#12): a real workload under each CPU SDK (Node, Go, PHP with excimer's CPU timer; Java's CPU
from JFR, issue #20, alone and beside hogs on every JDK here) beside the real server, in three
conditions, each without real-time priority:

- alone on the host;
- beside a CPU hog on every core (the three SDKs' workloads at once, and a Node thread that
  blocks in Atomics.wait);
- under a CPU quota of half a core, each in a cgroup of its own (cgroup v2 cpu.max, else v1
  cpu.cfs_quota_us), at once. Each workload asks for 0.7 of a core (a 70 ms burst every
  100 ms), so the quota throttles it in every period.

In each, the service's vCPU-hours agree within 5 % with what the kernel accounted to the
threads the profiles cover (Node: the main JS thread, /proc/<pid>/task/<pid>/stat; Go and
PHP: the process, /proc/<pid>/stat), and the hot function within 10 % with the workload's
own CPU account around its calls. V8 ticks on wall time, so beside the hogs its samples
overstate the thread's CPU by far: that is checked too, so the condition is known to bite.
Each workload runs RUN_S seconds from its first profile: this file takes about 4 minutes."""
import os

import pytest

import kernel_cpu
from conftest import (HOURS_PER_MONTH, JAVA_HOMES, UPLOAD_INTERVAL_S, check_capacity,
                      java_runtime, php_problem, query, run_all)

RUN_S = 45
QUOTA_CORES = 0.5


def jobs_for(runtimes, names, label, wraps=None):
    return [(runtimes[n], f"{label}-{n}", (wraps or {}).get(n), None) for n in names]


def available(names):
    """The runtimes that can run here; PHP needs ext-excimer (pytest.skip names why)."""
    why = php_problem()
    if why and "php" in names:
        if names == ["php"]:
            pytest.skip(f"PHP accuracy: {why}")
        print(f"\nPHP left out: {why}")
        return [n for n in names if n != "php"]
    return names


@pytest.mark.parametrize("name", ["node", "go", "php"])
def test_alone(server, tmp_path, runtimes, name):
    names = available([name])
    (run,) = run_all(server, tmp_path, jobs_for(runtimes, names, "alone"), RUN_S)
    check_capacity(server, run, label="alone")


def check_process(server, run, tolerance):
    """The capacity against the kernel's CPU of the whole process, within tolerance."""
    lo, hi = run.since + UPLOAD_INTERVAL_S + 2, run.stopping - 3
    rt_vcpu = query(server, run.service, lo, hi)["capacity"]["vcpu_hours_per_month"]
    proc_vcpu = HOURS_PER_MONTH * run.sampler.over(lo, hi, kernel_cpu.PROCESS) / (hi - lo)
    print(f"  whole process: kernel {proc_vcpu:.2f} vCPU-h/month, ratio {rt_vcpu / proc_vcpu:.3f}")
    assert abs(rt_vcpu - proc_vcpu) <= tolerance * proc_vcpu, (rt_vcpu, proc_vcpu)


@pytest.mark.parametrize("version", sorted(JAVA_HOMES) or [None])
def test_java_cpu_from_jfr(server, tmp_path, java_classes, version):
    """Java's CPU from JFR (issue #20) on every JDK here (17 and 25 in CI): the hot method
    ranks first, and the vCPU-hours, which take the CPU the JVM accounted to the threads JFR
    samples, agree within 5 % with the kernel's accounting of those threads, and within 10 %
    with its accounting of the whole process (its GC, JIT, JFR and the SDK's own threads are
    the difference)."""
    assert version is not None, "no JDK >= 11 under /usr/lib/jvm"
    rt = java_runtime(version, java_classes)
    (run,) = run_all(server, tmp_path, [(rt, f"alone-{rt.name}", None, None)], RUN_S)
    ans, _ = check_capacity(server, run, label="alone")
    # and the whole process's CPU (the JVM's GC, JIT and JFR threads, the SDK's) within 10 %
    check_process(server, run, 0.10)
    top = ans["functions"][0]
    assert top["name"] == "BurnHot.burnHot", [f["name"] for f in ans["functions"][:5]]
    print(f"  {top['name']} self share {top['self_share']:.1f} %; producers "
          f"{[p['agent'] for p in ans['producers']]}")
    assert [p["agent"] for p in ans["producers"]] == ["roottrace-java"]
    assert ans["cpu_agreement"]["scope"] == "threads running Java code (JFR)"
    assert ans["cpu_agreement"]["capacity_uses"] == "os"


@pytest.mark.parametrize("version", sorted(JAVA_HOMES) or [None])
def test_java_cpu_from_jfr_beside_hogs(server, tmp_path, java_classes, version):
    """JFR's sampler ticks on wall time: beside two CPU hogs a core the workload's main
    thread waits for a core, JFR charges it a full period anyway, and the capacity still
    agrees with the kernel because it takes the threads' CPU from the JVM (DESIGN §7)."""
    assert version is not None, "no JDK >= 11 under /usr/lib/jvm"
    rt = java_runtime(version, java_classes)
    # two hogs a core: the workload's thread gets well under the 0.7 of a core it asks for
    with kernel_cpu.hogs(2 * (os.cpu_count() or 1)):
        (run,) = run_all(server, tmp_path, [(rt, f"hogs-{rt.name}", None, None)], RUN_S)
    ans, _ = check_capacity(server, run, label=f"{2 * (os.cpu_count() or 1)} hogs")
    assert ans["functions"][0]["name"] == "BurnHot.burnHot"
    inputs = ans["capacity"]["inputs"]
    assert ans["cpu_agreement"]["capacity_uses"] == "os"
    # Capacity takes the threads' CPU, not the samples. How far JFR's samples are off beside
    # the hogs varies from run to run (1.03-1.61 times the threads' CPU; the JVM's thread kept
    # 0.58-0.63 of a core with two or three hogs a core), so it is printed, not required:
    # an earlier bound of 1.1 failed a CI run at 1.08. Equal to the last digit: the server
    # charges a scaled profile its OS figure as is (a CI run once saw 8.49327534498735
    # against 8.49327534498734, when it multiplied the samples by os / sampled).
    assert inputs["cpu_s"] == inputs["os_cpu_s"], inputs
    print(f"  sampled {inputs['sampled_cpu_s']:.2f} s against the threads' "
          f"{inputs['os_cpu_s']:.2f} s (ratio {ans['cpu_agreement']['ratio']:.2f})")


def test_beside_a_hog_on_every_core(server, tmp_path, runtimes):
    names = available(["node", "go", "php"])
    node = runtimes["node"]
    jobs = jobs_for(runtimes, names, "hogs") + [(node, "hogs-blocked", None, "block_half.js")]
    with kernel_cpu.hogs():
        runs = run_all(server, tmp_path, jobs, RUN_S)
    for run in runs[:-1]:
        ans, os_vcpu = check_capacity(server, run, label=f"{os.cpu_count()} hogs")
        if run.runtime.name == "node":
            # the condition bites: V8 charged the waits for a core as CPU
            inputs = ans["capacity"]["inputs"]
            assert inputs["sampled_cpu_s"] > 1.1 * inputs["os_cpu_s"], inputs
            assert ans["cpu_agreement"]["warning"], ans["cpu_agreement"]
            assert ans["cpu_agreement"]["capacity_uses"] == "os"
    check_blocked(server, runs[-1])


def check_blocked(server, run):
    """A main thread blocked half the time in Atomics.wait: V8 samples it as running (the
    factor reads about 1/25), so the answer keeps the warning and both figures, and the
    capacity still takes the kernel's (DESIGN §7, "far from 1")."""
    lo, hi = run.since + UPLOAD_INTERVAL_S + 2, run.stopping - 3
    ans = query(server, run.service, lo, hi)
    agreement, inputs = ans["cpu_agreement"], ans["capacity"]["inputs"]
    os_s = run.sampler.over(lo, hi, kernel_cpu.THREAD)
    os_vcpu = HOURS_PER_MONTH * os_s / (hi - lo)
    print(f"\n[blocked] cpu_agreement {agreement}\n  capacity "
          f"{ans['capacity']['vcpu_hours_per_month']:.3f} vCPU-h/month, kernel "
          f"{os_vcpu:.3f}; inputs cpu {inputs['cpu_s']:.3f} s, sampled "
          f"{inputs['sampled_cpu_s']:.3f} s")
    assert agreement["ratio"] > 3, agreement
    assert agreement["warning"] and "OS's figure" in agreement["warning"], agreement
    assert agreement["sampled_cpu_s"] > 0 and agreement["os_cpu_s"] > 0, agreement
    assert inputs["cpu_s"] == pytest.approx(inputs["os_cpu_s"], rel=1e-9)
    # the kernel's own figure for the thread: small, and what capacity says (the thread
    # burns little CPU, so allow its 10 ms ticks on top of 5 %)
    rt_vcpu = ans["capacity"]["vcpu_hours_per_month"]
    slack = HOURS_PER_MONTH * 0.02 / (hi - lo)
    assert abs(rt_vcpu - os_vcpu) <= 0.05 * os_vcpu + slack, (rt_vcpu, os_vcpu)


def quota_bit(q, name, before):
    """Whether q's quota bit over a run (before: q's counters when it began), and the line
    that says so: the workload asks for ~0.7 of a CPU in 70 ms bursts, more than the quota
    gives, so the quota bit when the cgroup used about all of it over the periods it ran, and
    ran out in a good share of them (how many depends on how the bursts fall across period
    edges: CI read 116 of 454 for Go, 365 of 454 for Node)."""
    used0, throttled0, periods0 = before
    throttled, periods = q.throttled_periods()
    throttled, periods, used = throttled - throttled0, periods - periods0, q.usage_s() - used0
    used_rate = used / (max(periods, 1) * q.PERIOD_US / 1e6)
    print(f"\n[quota {name}] cgroup v{q.version}: used {used:.2f} s ({used_rate:.3f} of a CPU "
          f"over the periods it ran), throttled in {throttled} of {periods} periods")
    return used_rate > 0.85 * QUOTA_CORES and throttled > 0.1 * periods, \
        f"used {used_rate:.3f} of a CPU under a {QUOTA_CORES} quota, throttled in " \
        f"{throttled} of {periods} periods: it did not bite"


def counters(q):
    return (q.usage_s(),) + q.throttled_periods()


def test_under_a_cpu_quota(server, tmp_path, runtimes):
    why = kernel_cpu.CpuQuota.available()
    if why:
        pytest.skip(f"CPU quota: {why}")
    names = available(["node", "go", "php"])
    quotas = {n: kernel_cpu.CpuQuota(f"roottrace-accuracy-{os.getpid()}-{n}", QUOTA_CORES)
              for n in names}
    for q in quotas.values():
        q.__enter__()
    try:
        before = {n: counters(q) for n, q in quotas.items()}
        runs = run_all(server, tmp_path,
                       jobs_for(runtimes, names, "quota", {n: q.wrap for n, q in quotas.items()}),
                       RUN_S)
        for run in runs:
            n = run.runtime.name
            bit, why = quota_bit(quotas[n], n, before[n])
            if not bit:
                # The three at once ask for 1.5 CPUs of a 2-core host beside the server: a
                # host busy with anything else leaves a cgroup less than its quota (a run
                # beside a fuzzer read 0.385 of a CPU). Then the condition was not made, so
                # that runtime runs again alone, where it must bite.
                print(f"  {why}: {n} runs again alone")
                b = counters(quotas[n])
                run = run_all(server, tmp_path, [(runtimes[n], f"quota-alone-{n}",
                                                  quotas[n].wrap, None)], RUN_S)[0]
                bit, why = quota_bit(quotas[n], f"{n}, alone", b)
            assert bit, why
            check_capacity(server, run, label=f"quota {QUOTA_CORES} core")
    finally:
        for q in quotas.values():
            q.__exit__(None, None, None)
