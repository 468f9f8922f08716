"""Inventory lookups: waiting on a (simulated) database, the wall-clock part of a request."""
import time


def lookup_stock(sku):
    time.sleep(0.004)
    return hash(sku) % 100
