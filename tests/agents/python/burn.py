"""CPU burners with known names: hot_loop gets ~3/4 of the CPU, cold_loop ~1/4."""
import time


def hot_loop(n):
    x = 1
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def cold_loop(n):
    x = 3
    for i in range(n):
        x = (x * 22695477 + 1) & 0xFFFFFFFF
    return x


def burn(seconds):
    deadline = time.time() + seconds
    acc = 0
    while time.time() < deadline:
        acc += hot_loop(30000)
        acc += cold_loop(10000)
    return acc
