"""Coverage-guided fuzzing of parse_config with atheris (libFuzzer): each input is a raw
config body, checked against the invariants of tests/config_fuzz.py (DESIGN §5). Run by
scripts/fuzz-sdk.sh, which passes -max_total_time, a seed corpus and
-artifact_prefix=sdk/testdata/config_fuzz/ so that a crasher lands where every
SDK's suite replays it. Usage: python3 fuzz_config.py [libFuzzer flags] [corpus dir]"""
import os
import sys

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "src")]

with atheris.instrument_imports():
    import roottrace.config  # noqa: F401  (instrumented for coverage)
    import config_fuzz


def one_input(data: bytes) -> None:
    config_fuzz.check(data)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--write-seeds":
        # Seeds: the fixed bodies and generated hostile ones (one file each).
        os.makedirs(sys.argv[2], exist_ok=True)
        for i, (body, _h, _e) in enumerate(config_fuzz.cases(1, 300)):
            with open(os.path.join(sys.argv[2], "seed-%04d" % i), "wb") as f:
                f.write(body)
        sys.exit(0)
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
