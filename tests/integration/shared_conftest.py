"""tests/integration/conftest.py for the suites beside it (tests/accuracy, tests/cluster),
whose own conftest is also named "conftest": loaded once, under the name
integration_conftest."""
import importlib.util
import os
import sys


def integration_conftest():
    """The module of tests/integration/conftest.py (Server, same_json, ...)."""
    mod = sys.modules.get("integration_conftest")
    if mod is None:
        spec = importlib.util.spec_from_file_location(
            "integration_conftest",
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "conftest.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules["integration_conftest"] = mod
        spec.loader.exec_module(mod)
    return mod
