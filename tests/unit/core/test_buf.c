/* Tests of server/src/core/buf.c and intern.c: limits, growth, array growth, interning ids. */
#include <stdint.h>
#include <stdlib.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/intern.h"
#include "test.h"

static void test_buf_limit(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 10);
    CHECK_INT(rt_buf_puts(&b, "hello"), 0);
    CHECK_INT(rt_buf_printf(&b, "%d", 1234), 0);
    CHECK_STR(b.data, "hello1234");
    CHECK_INT(rt_buf_puts(&b, "xy"), RT_ETOOBIG);
    CHECK_INT(b.len, 9);
    CHECK_INT(rt_buf_puts(&b, "z"), 0);
    char *s = rt_buf_into_cstr(&b);
    CHECK_STR(s, "hello1234z");
    CHECK_INT(b.len, 0);
    free(s);
    rt_buf_cleanup(&b);
}

static void test_buf_growth(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    for (int i = 0; i < 10000; i++)
        CHECK_INT(rt_buf_append(&b, "abcd", 4), 0);
    CHECK_INT(b.len, 40000);
    CHECK(b.data[39999] == 'd' && b.data[40000] == '\0');
    rt_buf_cleanup(&b);
}

static void test_array_grow(void)
{
    int *a = NULL;
    size_t cap = 0;
    CHECK_INT(rt_array_grow((void **)&a, &cap, 0, sizeof(*a)), 0);
    CHECK(a == NULL && cap == 0);
    CHECK_INT(rt_array_grow((void **)&a, &cap, 1, sizeof(*a)), 0);
    CHECK_INT(cap, 64);
    a[63] = 7;
    CHECK_INT(rt_array_grow((void **)&a, &cap, 64, sizeof(*a)), 0);
    CHECK_INT(cap, 64);
    CHECK_INT(rt_array_grow((void **)&a, &cap, 65, sizeof(*a)), 0);
    CHECK_INT(cap, 128);
    CHECK_INT(a[63], 7);
    CHECK_INT(rt_array_grow((void **)&a, &cap, 1000, sizeof(*a)), 0);
    CHECK_INT(cap, 1024);
    /* need * elem past SIZE_MAX fails and leaves the array as it was */
    int *before = a;
    CHECK_INT(rt_array_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof(*a)), RT_ENOMEM);
    CHECK(a == before && cap == 1024);
    CHECK_INT(rt_array_grow((void **)&a, &cap, SIZE_MAX, sizeof(*a)), RT_ENOMEM);
    CHECK_INT(cap, 1024);
    free(a);
}

static void test_intern(void)
{
    struct rt_intern t;
    rt_intern_init(&t);
    uint32_t id = 99;
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "pkg.f%d", i);
        CHECK_INT(rt_intern_get(&t, rt_str_from(name), &id), 0);
        CHECK_INT(id, i);
    }
    CHECK_INT(rt_intern_get(&t, rt_str_from("pkg.f500"), &id), 0);
    CHECK_INT(id, 500);
    CHECK_INT(t.count, 1000);
    CHECK_INT(rt_intern_find(&t, rt_str_from("pkg.f999")), 999);
    CHECK_INT(rt_intern_find(&t, rt_str_from("pkg.nope")), -1);
    CHECK_STR(rt_intern_str(&t, 7), "pkg.f7");
    struct rt_str withnul = {"a\0b", 3};
    CHECK_INT(rt_intern_get(&t, withnul, &id), 0);
    CHECK_INT(id, 1000);
    CHECK_INT(t.lens[1000], 3);
    rt_intern_cleanup(&t);
}

/* A reserved table takes its strings without a rehash (the slots stay where they were),
 * keeps what it held before, is capped at RT_INTERN_RESERVE_MAX, and grows past it; fitting
 * gives back the slots a reservation did not use, and only then. */
static void test_intern_reserve(void)
{
    struct rt_intern t;
    rt_intern_init(&t);
    uint32_t id = 0;
    CHECK_INT(rt_intern_get(&t, rt_str_from("pkg.first"), &id), 0);
    CHECK_INT(rt_intern_reserve(&t, 3000), 0);
    CHECK_INT(t.nslots, 8192);
    CHECK_INT(rt_intern_find(&t, rt_str_from("pkg.first")), 0);
    uint32_t *slots = t.slots;
    char name[32];
    for (int i = 1; i < 3000; i++) {
        snprintf(name, sizeof(name), "pkg.f%d", i);
        CHECK_INT(rt_intern_get(&t, rt_str_from(name), &id), 0);
        CHECK_INT(id, i);
    }
    CHECK(t.slots == slots && t.nslots == 8192);
    CHECK_INT(rt_intern_reserve(&t, 10), 0); /* smaller than the table: left alone */
    CHECK_INT(t.nslots, 8192);
    rt_intern_fit(&t); /* 3,000 strings need 8,192 slots: nothing to give back */
    CHECK(t.slots == slots && t.nslots == 8192);
    for (int i = 3000; i < 4100; i++) { /* grows past it at 4,096 strings */
        snprintf(name, sizeof(name), "pkg.f%d", i);
        CHECK_INT(rt_intern_get(&t, rt_str_from(name), &id), 0);
    }
    CHECK_INT(t.nslots, 16384);
    CHECK_INT(rt_intern_find(&t, rt_str_from("pkg.f1234")), 1234);
    CHECK_STR(rt_intern_str(&t, 0), "pkg.first");
    rt_intern_cleanup(&t);

    rt_intern_init(&t);
    CHECK_INT(rt_intern_reserve(&t, (size_t)1 << 40), 0); /* a hostile count is capped */
    CHECK_INT(t.nslots, 65536);
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof(name), "pkg.g%d", i);
        CHECK_INT(rt_intern_get(&t, rt_str_from(name), &id), 0);
    }
    rt_intern_fit(&t); /* 40 strings: the smallest table, every string still found */
    CHECK_INT(t.nslots, 128);
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof(name), "pkg.g%d", i);
        CHECK_INT(rt_intern_find(&t, rt_str_from(name)), i);
        CHECK_INT(rt_intern_get(&t, rt_str_from(name), &id), 0);
        CHECK_INT(id, i);
    }
    CHECK_INT(t.count, 40);
    rt_intern_cleanup(&t);

    rt_intern_init(&t); /* a table exactly four times what 200 strings need: given back */
    CHECK_INT(rt_intern_reserve(&t, 1000), 0);
    CHECK_INT(t.nslots, 2048);
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "pkg.h%d", i);
        CHECK_INT(rt_intern_get(&t, rt_str_from(name), &id), 0);
    }
    rt_intern_fit(&t);
    CHECK_INT(t.nslots, 512);
    CHECK_INT(rt_intern_find(&t, rt_str_from("pkg.h199")), 199);
    rt_intern_cleanup(&t);
}

int main(void)
{
    RUN(test_buf_limit);
    RUN(test_buf_growth);
    RUN(test_array_grow);
    RUN(test_intern);
    RUN(test_intern_reserve);
    return TEST_DONE();
}
