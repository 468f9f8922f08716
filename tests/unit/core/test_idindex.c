/* Tests of the dense id -> value index (rt/idindex.h). */
#include "rt/err.h"
#include "rt/idindex.h"
#include "test.h"

/* Ids across pages, the page edges, 0 and the largest id; absent ids in a present page, in an
 * absent page and past the last page. */
static void test_put_find(void)
{
    struct rt_idindex m;
    rt_idindex_init(&m);
    uint32_t v = 7;
    CHECK(!rt_idindex_find(&m, 0, &v));
    CHECK(!rt_idindex_find(&m, UINT32_MAX, &v));
    CHECK_INT(v, 7);
    int bad = 0;
    for (uint32_t id = 1; id < 100000; id += 3)
        bad += rt_idindex_put(&m, id, id ^ 5) != 0;
    CHECK_INT(bad, 0);
    CHECK_INT(m.npages, 32); /* 25 pages needed (ids < 102400), grown by doubling from 16 */
    for (uint32_t id = 0; id < 110000; id++) {
        bool want = id < 100000 && id % 3 == 1;
        bool got = rt_idindex_find(&m, id, &v);
        bad += got != want || (want && v != (id ^ 5));
    }
    CHECK_INT(bad, 0);
    CHECK_INT(rt_idindex_put(&m, 0, 0), 0); /* id 0 and value 0 are ids and values like any */
    CHECK(rt_idindex_find(&m, 0, &v) && v == 0);
    CHECK_INT(rt_idindex_put(&m, RT_IDINDEX_PAGE, 11), 0); /* the first id of page 1 */
    CHECK(rt_idindex_find(&m, RT_IDINDEX_PAGE, &v) && v == 11);
    CHECK_INT(rt_idindex_put(&m, RT_IDINDEX_PAGE, 12), 0); /* replaces */
    CHECK(rt_idindex_find(&m, RT_IDINDEX_PAGE, &v) && v == 12);
    CHECK(!rt_idindex_find(&m, RT_IDINDEX_PAGE - 1, &v));
    CHECK_INT(rt_idindex_put(&m, 5, UINT32_MAX), RT_EINVAL); /* the value must fit value + 1 */
    CHECK(!rt_idindex_find(&m, 5, &v));
    rt_idindex_cleanup(&m);
    CHECK(!rt_idindex_find(&m, 1, &v));
    CHECK_INT(m.npages, 0);
}

/* A high id allocates the page table up to it and one page, not every page below it. */
static void test_sparse_high_id(void)
{
    struct rt_idindex m;
    rt_idindex_init(&m);
    uint32_t v = 0;
    CHECK_INT(rt_idindex_put(&m, UINT32_MAX, 42), 0);
    CHECK_INT(m.npages, ((size_t)UINT32_MAX >> RT_IDINDEX_SHIFT) + 1);
    size_t allocated = 0;
    for (size_t p = 0; p < m.npages; p++)
        allocated += m.pages[p] != NULL;
    CHECK_INT(allocated, 1);
    CHECK(rt_idindex_find(&m, UINT32_MAX, &v) && v == 42);
    CHECK(!rt_idindex_find(&m, UINT32_MAX - 1, &v));
    CHECK(!rt_idindex_find(&m, 1, &v));
    rt_idindex_cleanup(&m);
}

int main(void)
{
    RUN(test_put_find);
    RUN(test_sparse_high_id);
    return TEST_DONE();
}
