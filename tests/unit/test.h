/* Minimal unit-test harness: TEST() functions registered by hand in main(), CHECK macros
 * that record failures without aborting, and the closing line "N passed, N failed". */
#ifndef RT_TEST_H
#define RT_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int rt_test_failures;  /* failed checks in the current test */
static int rt_test_passed;    /* tests with no failed check */
static int rt_test_failed;    /* tests with at least one failed check */

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);   \
            rt_test_failures++;                                                        \
        }                                                                              \
    } while (0)

#define CHECK_INT(a, b)                                                                \
    do {                                                                               \
        long long va_ = (long long)(a), vb_ = (long long)(b);                          \
        if (va_ != vb_) {                                                              \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, \
                    va_, vb_);                                                         \
            rt_test_failures++;                                                        \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        const char *sa_ = (a), *sb_ = (b);                                             \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                   \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, \
                    #a, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");                   \
            rt_test_failures++;                                                        \
        }                                                                              \
    } while (0)

/* Relative tolerance check: |a - b| <= rel * max(|a|, |b|), exact when both are 0. */
#define CHECK_NEAR(a, b, rel)                                                          \
    do {                                                                               \
        double da_ = (a), db_ = (b);                                                   \
        double m_ = fabs(da_) > fabs(db_) ? fabs(da_) : fabs(db_);                     \
        if (!(fabs(da_ - db_) <= (rel) * m_)) {                                        \
            fprintf(stderr, "%s:%d: %s == %.17g, expected %.17g\n", __FILE__, __LINE__, \
                    #a, da_, db_);                                                     \
            rt_test_failures++;                                                        \
        }                                                                              \
    } while (0)

#define RUN(fn)                                                                        \
    do {                                                                               \
        rt_test_failures = 0;                                                          \
        fn();                                                                          \
        if (rt_test_failures) {                                                        \
            fprintf(stderr, "FAIL %s\n", #fn);                                         \
            rt_test_failed++;                                                          \
        } else {                                                                       \
            rt_test_passed++;                                                          \
        }                                                                              \
    } while (0)

#define TEST_DONE()                                                                    \
    (printf("%d passed, %d failed\n", rt_test_passed, rt_test_failed), rt_test_failed ? 1 : 0)

/* Path of a file under ../shared/data (tests run from the repository root). */
#define SHARED_DATA(rel) ("../shared/data/" rel)

#endif
