"""Pricing: CPU-bound work. In release 2.0 compute_quote does three times the work (the
regression `make demo` finds)."""
import os

WORK = 3 if os.environ.get("DEMO_VERSION") == "2.0" else 1


def compute_quote(items):
    h = 0
    for _ in range(WORK):
        for i in range(20000):
            h = (h * 31 + items[i % len(items)]) & 0xFFFFFFFF
    return h
