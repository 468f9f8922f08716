"""Pricing: CPU-bound work. In release 2.0 compute_quote does three times the work (the
regression `make demo` finds). Each round is ~10 ms of Python, twice the interpreter's
5 ms switch interval: at 20,000 rounds (~2 ms) the wall-clock sampler never saw it and
charged its time to the next socket write (docs/sdk/python.md, "the GIL bias")."""
import os

WORK = 3 if os.environ.get("DEMO_VERSION") == "2.0" else 1


def compute_quote(items):
    h = 0
    for _ in range(WORK):
        for i in range(150000):
            h = (h * 31 + items[i % len(items)]) & 0xFFFFFFFF
    return h
