"""Property test of parse_config (DESIGN §5) on seeded hostile bodies (config_fuzz.py), and
a replay of every input the fuzzer saved in sdk/testdata/config_fuzz/ (each file a raw body)."""
import os

import config_fuzz

# shared by the five SDKs: one verdict per file
CRASHES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata",
                       "config_fuzz")
# Cases per run: a few seconds here; scripts/fuzz-sdk.sh runs the same check far longer.
N_CASES = int(os.environ.get("ROOTTRACE_CONFIG_FUZZ_CASES", "5000"))


def test_generated_hostile_bodies_keep_the_invariants():
    seen = {"invalid": 0, "valid": 0, "unknown": 0}
    for i, (body, header, expect) in enumerate(config_fuzz.cases(20261130, N_CASES)):
        try:
            config_fuzz.check(body, header, expect)
        except Exception as e:  # noqa: BLE001 - report the input with the failure
            raise AssertionError("case %d, header %r, expect %r, body %r: %s: %s" % (
                i, header, expect if isinstance(expect, str) else "valid", body[:300],
                type(e).__name__, e)) from e
        seen[expect if isinstance(expect, str) else "valid"] += 1
    # The generator reaches each outcome often (a generator stuck on one would prove little).
    assert min(seen.values()) > N_CASES // 20, seen


def test_saved_fuzz_inputs_keep_the_invariants():
    names = sorted(f for f in os.listdir(CRASHES) if f != "README.md")
    assert names, "sdk/testdata/config_fuzz/ holds at least the regression inputs"
    for name in names:
        with open(os.path.join(CRASHES, name), "rb") as f:
            body = f.read()
        try:
            config_fuzz.check(body, None, "invalid" if name.startswith("invalid-") else "unknown")
        except Exception as e:  # noqa: BLE001
            raise AssertionError("sdk/testdata/config_fuzz/%s: %s: %s" % (name, type(e).__name__, e)) from e
