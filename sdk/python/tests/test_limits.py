"""The Python SDK's compiled bounds against the one table every SDK is checked against
(sdk/testdata/limits.json, DESIGN §5): a bound changed here and not there, or there and not
here, fails this test."""
import json
import os

from roottrace.config import DEFAULT_LIMITS

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "limits.json")


def test_compiled_bounds_are_the_shared_table():
    with open(TABLE) as f:
        table = json.load(f)
    got = {name: getattr(DEFAULT_LIMITS, name) for name in table["shared"]}
    assert got == table["shared"]
    assert DEFAULT_LIMITS.sampling_interval_min_us == table["sampling_interval_min_us"]["python"]
