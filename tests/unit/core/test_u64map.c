/* Tests of the 64-bit -> 32-bit hash map (rt/u64map.h). */
#include "rt/u64map.h"
#include "test.h"

static void test_put_find_grow(void)
{
    struct rt_u64map m;
    rt_u64map_init(&m);
    uint32_t v = 7;
    CHECK(!rt_u64map_find(&m, 1, &v));
    for (uint64_t k = 0; k < 100000; k++)
        CHECK_INT(rt_u64map_put(&m, k * 0x100000001ULL, (uint32_t)(k ^ 5)), 0);
    CHECK_INT(m.n, 100000);
    int bad = 0;
    for (uint64_t k = 0; k < 100000; k++)
        bad += !rt_u64map_find(&m, k * 0x100000001ULL, &v) || v != (uint32_t)(k ^ 5);
    CHECK_INT(bad, 0);
    CHECK(!rt_u64map_find(&m, 3, &v));
    CHECK(rt_u64map_find(&m, 0, &v) && v == 5); /* key 0 is a key like any other */
    rt_u64map_cleanup(&m);
    CHECK(!rt_u64map_find(&m, 0, &v));
}

int main(void)
{
    RUN(test_put_find_grow);
    return TEST_DONE();
}
