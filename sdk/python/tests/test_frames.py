"""Frame naming (DESIGN §3): module from f_globals["__name__"], co_qualname on 3.11+,
no line numbers; stacks root first, clamped at the leaf side; SDK threads left out."""
import sys
import threading

import pytest

from roottrace import sampler as smp
from roottrace.sampler import TRUNCATED, Aggregate, Sampler, Walker, frame_name

QUALNAME = sys.version_info >= (3, 11)
MOD = __name__


def here():
    return frame_name(sys._getframe(1))


def plain_function():
    return here()


class Cart:
    def total(self):
        return here()

    class Line:
        def price(self):
            return here()

    @staticmethod
    def static():
        return here()

    @classmethod
    def klass(cls):
        return here()


def outer():
    def inner():
        return here()
    return inner()


def class_in_function():
    class Local:
        def m(self):
            return here()
    return Local().m()


@pytest.mark.skipif(not QUALNAME, reason="co_qualname needs Python 3.11")
@pytest.mark.parametrize("call,expected", [
    (plain_function, "plain_function"),
    (lambda: Cart().total(), "Cart.total"),
    (lambda: Cart.Line().price(), "Cart.Line.price"),
    (Cart.static, "Cart.static"),
    (Cart.klass, "Cart.klass"),
    (outer, "outer.<locals>.inner"),
    (class_in_function, "class_in_function.<locals>.Local.m"),
])
def test_qualname(call, expected):
    assert call() == MOD + "." + expected


def test_lambda():
    f = lambda: here()  # noqa: E731
    assert f() == MOD + (".test_lambda.<locals>.<lambda>" if QUALNAME else ".<lambda>")


def test_module_name_comes_from_globals():
    src = ("import sys\n"
           "class Cart:\n"
           "    def total(self):\n"
           "        return name(sys._getframe(0))\n")
    g = {"__name__": "shop.checkout", "name": frame_name}
    exec(compile(src, "/srv/shop/checkout.py", "exec"), g)
    expected = "shop.checkout.Cart.total" if QUALNAME else "shop.checkout.total"
    assert g["Cart"]().total() == expected


def test_module_level_code_and_missing_module_name():
    g = {"name": frame_name, "sys": sys}
    exec("r = name(sys._getframe(0))", g)
    assert g["r"] == "<unknown>.<module>"
    g = {"__name__": "__main__", "name": frame_name, "sys": sys}
    exec("r = name(sys._getframe(0))", g)
    assert g["r"] == "__main__.<module>"


def test_before_311_there_is_no_class(monkeypatch):
    monkeypatch.setattr(smp, "_HAS_QUALNAME", False)
    assert Cart().total() == MOD + ".total"
    assert outer() == MOD + ".inner"


def test_no_line_numbers_and_cache_is_per_code_object():
    w = Walker()

    def f(n):
        if n:
            return f(n - 1)
        return w.stack(sys._getframe(0), 256)

    st = f(3)
    assert st[:4] == (MOD + (".test_no_line_numbers_and_cache_is_per_code_object.<locals>.f"
                             if QUALNAME else ".f"),) * 4
    assert all(":" not in name.split(".")[-1] for name in st)


class Blocked:
    """A thread blocked in a named function under `depth` recursive frames."""

    def __init__(self, depth=0):
        self.go = threading.Event()
        self.ready = threading.Event()
        self.depth = depth
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()
        self.ready.wait(5)

    def run(self):
        self.recurse(self.depth)

    def recurse(self, n):
        if n:
            return self.recurse(n - 1)
        return self.park()

    def park(self):
        self.ready.set()
        self.go.wait(30)

    def close(self):
        self.go.set()
        self.t.join(5)


def is_parked(stack):
    return any(f.endswith(".park") for f in stack)


def stacks_of(agg):
    return {tuple(s[0]): s for s in agg.samples()}


def test_sample_stacks_root_first_and_weighted():
    b = Blocked()
    try:
        s = Sampler(100, 15)
        agg = Aggregate()
        s.sample(agg, 20_000_000, set(), 256)
        s.sample(agg, 30_000_000, set(), 256)
        mine = [st for st in stacks_of(agg).values() if is_parked(st[0])]
        assert len(mine) == 1
        stack, count, value = mine[0]
        assert (count, value) == (2, 50_000_000)
        # Root first; Python frames only: the leaf is the Python code that called into C.
        q = QUALNAME
        assert stack == [
            "threading.Thread._bootstrap" if q else "threading._bootstrap",
            "threading.Thread._bootstrap_inner" if q else "threading._bootstrap_inner",
            "threading.Thread.run" if q else "threading.run",
            MOD + (".Blocked.run" if q else ".run"),
            MOD + (".Blocked.recurse" if q else ".recurse"),
            MOD + (".Blocked.park" if q else ".park"),
            "threading.Event.wait" if q else "threading.wait",
            "threading.Condition.wait" if q else "threading.wait",
        ]
    finally:
        b.close()


def test_excluded_threads_are_left_out():
    b = Blocked()
    try:
        agg = Aggregate()
        Sampler(100, 15).sample(agg, 1, {b.t.ident}, 256)
        assert not any(is_parked(st[0]) for st in agg.samples())
        agg = Aggregate()
        Sampler(100, 15).sample(agg, 1, set(), 256)
        assert any(is_parked(st[0]) for st in agg.samples())
    finally:
        b.close()


def test_depth_clamped_keeping_leaf_side():
    b = Blocked(depth=400)
    try:
        agg = Aggregate()
        Sampler(100, 15).sample(agg, 1, set(), 256)
        mine = [st for st in agg.samples() if is_parked(st[0])]
        assert len(mine) == 1
        stack = mine[0][0]
        assert len(stack) == 256
        assert stack[0] == TRUNCATED
        assert stack[-1] == "threading.Condition.wait" if QUALNAME else "threading.wait"
        assert stack[-3].endswith(".park") and stack[-4].endswith(".recurse")
        assert all(f.endswith(".recurse") for f in stack[1:-3])
    finally:
        b.close()


def test_shallow_stack_not_marked():
    agg = Aggregate()
    Sampler(100, 15).sample(agg, 1, set(), 256)
    assert all(TRUNCATED not in st[0] for st in agg.samples())
