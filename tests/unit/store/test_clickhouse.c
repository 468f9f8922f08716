/* Tests of the ClickHouse backend's wire helpers (server/src/store/clickhouse/clickhouse_http.c:
 * string literals, RowBinary, the id map, cluster-unique ids, URIs), and, on whichever backend the
 * suite runs against (ROOTTRACE_TEST_STORE), names made of awkward bytes and retention across
 * month boundaries. */
#include "rt/producer.h"
#include "store/clickhouse/clickhouse_int.h"
#include "store_fixture.h"
#include "store_scan.h"
#include "test.h"

static void test_quote(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt__ch_quote(&b, "a'b\\c\n\0\xff\x7f~", 10), 0);
    CHECK_STR(b.data, "'a\\x27b\\x5cc\\x0a\\x00\\xff\\x7f~'");
    b.len = 0;
    CHECK_INT(rt__ch_quote_cstr(&b, NULL), 0);
    CHECK_STR(b.data, "''");
    rt_buf_cleanup(&b);
}

static void test_rowbinary(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt__ch_w_u8(&b, 200), 0);
    CHECK_INT(rt__ch_w_u32(&b, 0xdeadbeef), 0);
    CHECK_INT(rt__ch_w_u64(&b, UINT64_MAX - 1), 0);
    CHECK_INT(rt__ch_w_i64(&b, INT64_MIN), 0);
    CHECK_INT(rt__ch_w_f64(&b, 0.25), 0);
    CHECK_INT(rt__ch_w_uvarint(&b, 300), 0);
    CHECK_INT(rt__ch_w_str(&b, "x\0y", 3), 0);
    CHECK_INT(rt__ch_w_cstr(&b, NULL), 0);
    CHECK_INT(b.len, 1 + 4 + 8 + 8 + 8 + 2 + 4 + 1);
    CHECK_INT((unsigned char)b.data[1], 0xef); /* little-endian */
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &b);
    CHECK_INT(rt__ch_rd_u8(&r), 200);
    CHECK(rt__ch_rd_u32(&r) == 0xdeadbeef);
    CHECK(rt__ch_rd_u64(&r) == UINT64_MAX - 1);
    CHECK(rt__ch_rd_i64(&r) == INT64_MIN);
    CHECK(rt__ch_rd_f64(&r) == 0.25);
    CHECK_INT(rt__ch_rd_uvarint(&r), 300);
    size_t n;
    const char *s = rt__ch_rd_str(&r, &n);
    CHECK(n == 3 && memcmp(s, "x\0y", 3) == 0);
    struct rt__ch_strs strs = {0};
    rt__ch_strs_reset(&strs);
    size_t i = rt__ch_strs_read(&strs, &r);
    CHECK_STR(rt__ch_strs_get(&strs, i, false), "");
    CHECK(rt__ch_strs_get(&strs, i, true) == NULL);
    CHECK(!rt__ch_rd_more(&r) && !r.bad);
    /* a short read is flagged and reads as zero from then on */
    CHECK_INT(rt__ch_rd_u32(&r), 0);
    CHECK(r.bad);
    b.len = 3; /* a string whose length runs past the end */
    b.data[0] = 10;
    rt__ch_rd_init(&r, &b);
    rt__ch_rd_str(&r, &n);
    CHECK(r.bad && n == 0);
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&b);
}

/* An array's elements read at once (rt__ch_rd_le64s), as the scan reads stacks, counts and
 * values: the values the writer wrote, then a short read flagged and zeroed. */
static void test_rowbinary_arrays(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt__ch_w_u64(&b, 0x0102030405060708ULL), 0);
    CHECK_INT(rt__ch_w_i64(&b, -2), 0);
    CHECK_INT(rt__ch_w_f64(&b, -1.5), 0);
    CHECK_INT(rt__ch_w_u8(&b, 9), 0);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &b);
    uint64_t u[2];
    double d;
    rt__ch_rd_le64s(&r, u, 2);
    rt__ch_rd_le64s(&r, &d, 1);
    CHECK(u[0] == 0x0102030405060708ULL && (int64_t)u[1] == -2 && d == -1.5 && !r.bad);
    CHECK_INT(rt__ch_rd_u8(&r), 9);
    rt__ch_rd_init(&r, &b); /* 25 bytes: three values, not four */
    uint64_t four[4] = {1, 1, 1, 1};
    rt__ch_rd_le64s(&r, four, 4);
    CHECK(r.bad && four[0] == 0 && four[3] == 0);
    rt_buf_cleanup(&b);
}

static void test_idmap(void)
{
    struct rt_u64map m;
    rt_u64map_init(&m);
    CHECK_INT(rt__ch_idmap_get(&m, 42), 0);
    for (uint32_t i = 1; i <= 20000; i++)
        CHECK_INT(rt_u64map_put(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL, i), 0);
    int wrong = 0;
    for (uint32_t i = 1; i <= 20000; i++)
        wrong += rt__ch_idmap_get(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL) != i;
    CHECK_INT(wrong, 0);
    CHECK_INT(rt__ch_idmap_get(&m, 7), 0);
    rt_u64map_cleanup(&m);
}

static void test_ids(void)
{
    int64_t prev = 0;
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t id = rt__ch_new_id(), seq = rt__ch_seq();
        bad += id <= 0 || seq <= prev;
        prev = seq;
    }
    CHECK_INT(bad, 0);
}

static void test_uris(void)
{
    struct rt_error err = {0};
    CHECK(rt_store_open("clickhouse:", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    CHECK(rt_store_open("clickhouse:http://127.0.0.1:1", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    CHECK(rt_store_open("clickhouse:http://127.0.0.1:1/bad-name", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    CHECK(rt_store_open("clickhouse:ftp://127.0.0.1:1/db", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    /* nothing listens on port 1 */
    CHECK(rt_store_open("clickhouse:http://127.0.0.1:1/db", &err) == NULL);
    CHECK_INT(err.code, RT_EIO);
    CHECK(strstr(err.msg, "unreachable") != NULL);
    /* the message names the server, never the settings' password */
    CHECK(rt_store_open("clickhouse:http://127.0.0.1:1/db?user=u&password=s3cret", &err) == NULL);
    CHECK_INT(err.code, RT_EIO);
    CHECK(strstr(err.msg, "http://127.0.0.1:1") != NULL && strstr(err.msg, "s3cret") == NULL);
    CHECK(rt_store_open("clickhouse:http://127.0.0.1:1/db?cluster=bad-name", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    CHECK(strstr(err.msg, "cluster name") != NULL);
    char red[128];
    rt_store_uri_redacted("clickhouse:http://h:1/db?user=u&password=s3&x=1", red, sizeof(red));
    CHECK_STR(red, "clickhouse:http://h:1/db?user=u&password=***&x=1");
    rt_store_uri_redacted("clickhouse:http://h/db?password=", red, sizeof(red));
    CHECK_STR(red, "clickhouse:http://h/db?password=***");
    rt_store_uri_redacted("clickhouse:http://h/db?password=abcdef", red, 30);
    CHECK_STR(red, "clickhouse:http://h/db?passwo");
    /* the user-info's password, and any case of password= (ClickHouse takes both) */
    CHECK(rt_store_open("clickhouse:http://rt:s3cret@127.0.0.1:1/db?PASSWORD=s4&cluster=",
                        &err) == NULL);
    CHECK(strstr(err.msg, "s3cret") == NULL && strstr(err.msg, "s4") == NULL);
    CHECK(strstr(err.msg, "cluster name") != NULL);
    CHECK(rt_store_open("clickhouse:http://rt:s3cret@127.0.0.1:1/db", &err) == NULL);
    CHECK_INT(err.code, RT_EIO);
    CHECK(strstr(err.msg, "ClickHouse at http://127.0.0.1:1 ") != NULL);
    rt_store_uri_redacted("clickhouse:http://rt:s3@h:1/db?a=1&Password=s4", red, sizeof(red));
    CHECK_STR(red, "clickhouse:http://rt:***@h:1/db?a=1&Password=***");
    rt_store_uri_redacted("clickhouse:http://rt@h:1/db", red, sizeof(red));
    CHECK_STR(red, "clickhouse:http://rt@h:1/db");
    /* ClickHouse's own databases are not roottrace's */
    CHECK(rt_store_open("clickhouse:http://127.0.0.1:1/System", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    CHECK(strstr(err.msg, "ClickHouse's own database") != NULL);
    rt_store_uri_redacted("/data/dir", red, sizeof(red));
    CHECK_STR(red, "/data/dir");
    CHECK(rt_store_uri_is_remote("clickhouse:http://h/db"));
    CHECK(!rt_store_uri_is_remote("sqlite:/x") && !rt_store_uri_is_remote(NULL));
}

/* Names come from profiled programs: quotes, backslashes, control bytes, invalid UTF-8. */
static void test_odd_names(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    CHECK(rt_store_is_shared(s) == (fixture_clickhouse() != NULL));
    const char *svc = "sh'op\\ \"x\"", *inst = "i\t1\n", *ver = "v'1\xff", *pid = "p'\\id";
    struct rt_profile *p = fixture_profile(RT_PTYPE_CPU, svc, inst, ver, pid, T0, 10 * S);
    fixture_add(p, "ma'in;ha\\ndle\x01;caf\xc3\xa9.\xff;x\ty", 3, 30);
    fixture_add(p, "ma'in;%s'; DROP TABLE profiles; --", 1, 10);
    struct rt_store_put_result r1, r2;
    CHECK_INT(fixture_put(s, p, &r1), 0);
    CHECK_INT(fixture_put(s, p, &r2), 0);
    CHECK(!r1.duplicate && r2.duplicate && r1.id == r2.id);
    struct rt_profile *plain = sample_profile("plain", "i-1", "p-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, plain, NULL), 0);
    rt_profile_free(plain);
    CHECK_INT(count_rows(dir, "frames"), 7 + 5);
    CHECK_INT(count_rows(dir, "stacks"), 2 + 3);
    rt_store_free(s);
    s = open_dir(dir); /* a fresh dictionary: names come back from the store */
    struct got g;
    CHECK_INT(scan(s, svc, RT_PTYPE_CPU, T0, T0 + 10 * S, ver, inst, &g), 1);
    CHECK_STR(g.p[0].instance, inst);
    CHECK_STR(g.p[0].version, ver);
    CHECK_STR(g.p[0].profile_id, pid);
    CHECK(find_row(&g.p[0], "ma'in;ha\\ndle\x01;caf\xc3\xa9.\xff;x\ty") != NULL);
    CHECK(find_row(&g.p[0], "ma'in;%s'; DROP TABLE profiles; --") != NULL);
    CHECK_INT(rt_store_profile_count(s), 2);
    rt_profile_free(p);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* Retention on both backends where they agree: whole months that ended before the cutoff
 * (ClickHouse drops month partitions; SQLite deletes row by row). */
static void test_retention_months(void)
{
    const int64_t oct = 1759276800LL * S, nov = 1761955200LL * S; /* 2025-10-01, 2025-11-01 */
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    for (int i = 0; i < 6; i++) {
        struct rt_profile *p = fixture_profile(RT_PTYPE_CPU, "svc", "i", NULL, NULL,
                                               (i < 4 ? oct : nov) + i * 3600 * S, 60 * S);
        fixture_add(p, "a;b", 1, 1);
        CHECK_INT(fixture_put(s, p, NULL), 0);
        rt_profile_free(p);
    }
    struct rt_error err = {0};
    CHECK_INT(rt_store_put_poll(s, "svc", "i", oct, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "svc", "i", nov + S, &err), 0);
    int64_t deleted = 0;
    CHECK_INT(rt_store_retain(s, nov, &deleted, &err), 0);
    CHECK_INT(deleted, 4);
    CHECK_INT(rt_store_profile_count(s), 2);
    struct got g;
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, oct, nov + 86400 * S, NULL, NULL, &g), 2);
    struct alive a = {0};
    CHECK_INT(rt_store_scan_liveness(s, "svc", oct - S, nov + 2 * S, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 1);
    CHECK_INT(a.first[0], nov + S);
    CHECK_INT(rt_store_retain(s, nov, &deleted, &err), 0);
    CHECK_INT(deleted, 0);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* ---- rt_store_scan_window against sums computed here from rt_store_scan's rows ---- */

struct sums {
    struct rt_store *s;
    int64_t from, to;
    int profiles;
    double weight, samples, value;  /* sums over profiles */
    double st_s[8], st_v[8];        /* by stack, indexed by the stack's leaf name's first byte */
    double il[4][8];                /* (instance digit, leaf) -> value */
    double s2[8];                   /* leaf -> sum of x^2 / n */
    int s2_calls[8];                /* leaf -> leaf_s2 callbacks */
};

static double weight_of(const struct rt_profile_meta *m, int64_t from, int64_t to)
{
    if (m->duration_ns <= 0)
        return m->time_ns >= from && m->time_ns < to ? 1.0 : 0.0;
    int64_t lo = m->time_ns > from ? m->time_ns : from;
    int64_t end = m->time_ns + m->duration_ns, hi = end < to ? end : to;
    return hi > lo ? (double)(hi - lo) / (double)m->duration_ns : 0.0;
}

/* The leaf of a stack as a small index: its name's first letter - 'a'. */
static int leaf_of(struct rt_store *s, uint32_t stack_id)
{
    uint32_t frames[RT_MAX_STACK_DEPTH + 1];
    size_t depth;
    if (rt_store_stack(s, stack_id, frames, RT_MAX_STACK_DEPTH + 1, &depth) || !depth)
        return 7;
    const char *name = fixture_frame_name(s, frames[depth - 1]);
    return name && name[0] >= 'a' && name[0] < 'h' ? name[0] - 'a' : 7;
}

static int sum_rows(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                    size_t n)
{
    struct sums *x = ud;
    double w = weight_of(m, x->from, x->to), tot = 0, self[8] = {0};
    if (!(w > 0))
        return 0;
    x->profiles++;
    x->weight += w;
    for (size_t i = 0; i < n; i++) {
        int leaf = leaf_of(x->s, rows[i].stack_id);
        tot += rows[i].samples * w;
        x->value += (double)rows[i].value_ns * w;
        x->st_s[leaf] += rows[i].samples * w;
        x->st_v[leaf] += (double)rows[i].value_ns * w;
        x->il[m->instance[0] - '0'][leaf] += (double)rows[i].value_ns * w * m->cpu_scale;
        self[leaf] += rows[i].samples * w;
    }
    x->samples += tot;
    for (int l = 0; l < 8 && tot > 0; l++)
        x->s2[l] += self[l] * self[l] / tot;
    return 0;
}

static int w_profile(void *ud, const struct rt_profile_meta *m, double w, double n, double v)
{
    struct sums *x = ud;
    x->profiles++;
    x->weight += w;
    x->samples += n;
    x->value += v;
    return 0;
}

static int w_stack(void *ud, uint32_t id, double samples, double value)
{
    struct sums *x = ud;
    int leaf = leaf_of(x->s, id);
    x->st_s[leaf] += samples;
    x->st_v[leaf] += value;
    return 0;
}

static int w_instance_leaf(void *ud, const char *instance, uint32_t frame, double value)
{
    struct sums *x = ud;
    const char *name = fixture_frame_name(x->s, frame);
    x->il[instance[0] - '0'][name && name[0] >= 'a' && name[0] < 'h' ? name[0] - 'a' : 7] +=
        value;
    return 0;
}

static int w_leaf_s2(void *ud, uint32_t frame, double s2)
{
    struct sums *x = ud;
    const char *name = fixture_frame_name(x->s, frame);
    int leaf = name && name[0] >= 'a' && name[0] < 'h' ? name[0] - 'a' : 7;
    x->s2[leaf] += s2;
    x->s2_calls[leaf]++;
    return 0;
}

static void test_window_sums(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    for (int k = 0; k < 9; k++) {
        char inst[4];
        snprintf(inst, sizeof(inst), "%d", k % 3);
        struct rt_profile *p = fixture_profile(RT_PTYPE_CPU, "svc", inst, NULL, NULL,
                                               T0 + k * 7 * S, k == 4 ? 0 : 10 * S);
        fixture_add(p, "m;b", 1 + k, 100 * (1 + k));
        fixture_add(p, "m;c", 0.5 * k, 3);
        fixture_add(p, "m;b;d", k % 2, 7);
        fixture_add(p, "m;e", 0, 0); /* neither samples nor value: left out */
        fixture_add(p, "m;f", 0, 5); /* value alone: x = 0 in every profile, still a leaf */
        p->cpu_scale = 0.25 * (k + 1); /* capacity's share of (instance, leaf) is scaled */
        CHECK_INT(fixture_put(s, p, NULL), 0);
        rt_profile_free(p);
    }
    struct rt_store_filter f = {"svc", RT_PTYPE_CPU, T0 + 3 * S, T0 + 41 * S, NULL, NULL};
    struct rt_store_window_cb cb = {w_profile, w_stack, w_instance_leaf, w_leaf_s2};
    struct sums want = {.s = s, .from = f.from_ns, .to = f.to_ns}, got = want;
    if (!rt_store_aggregates(s)) {
        CHECK_INT(rt_store_scan_window(s, &f, &cb, &got, &err), RT_EINVAL);
        rt_store_free(s);
        fixture_rmdir(dir);
        return;
    }
    CHECK_INT(rt_store_scan(s, &f, sum_rows, &want, &err), 0);
    CHECK_INT(rt_store_scan_window(s, &f, &cb, &got, &err), 0);
    CHECK_INT(got.profiles, want.profiles);
    CHECK(want.profiles == 6); /* 0, 7, .., 35 s overlap [3, 41) (28 s, no length, weighs 1) */
    CHECK_NEAR(got.weight, want.weight, 1e-12);
    CHECK_NEAR(got.samples, want.samples, 1e-12);
    CHECK_NEAR(got.value, want.value, 1e-12);
    for (int l = 0; l < 8; l++) {
        CHECK_NEAR(got.st_s[l], want.st_s[l], 1e-12);
        CHECK_NEAR(got.st_v[l], want.st_v[l], 1e-12);
        CHECK_NEAR(got.s2[l], want.s2[l], 1e-12);
        for (int i = 0; i < 3; i++)
            CHECK_NEAR(got.il[i][l], want.il[i][l], 1e-12);
    }
    CHECK(got.s2[1] > 0 && got.il[2][1] > 0);
    /* one leaf_s2 per leaf with samples or value in the window, f (all x = 0) included */
    CHECK_INT(got.s2_calls[1] + got.s2_calls[2] + got.s2_calls[3], 3);
    CHECK_INT(got.s2_calls[5], 1);
    CHECK_INT(got.s2_calls[4], 0);
    CHECK(got.s2[5] == 0 && got.il[0][5] > 0);
    /* every callback is needed */
    struct rt_store_window_cb stop = cb;
    stop.stack = NULL;
    CHECK_INT(rt_store_scan_window(s, &f, &stop, &got, &err), RT_EINVAL);
    rt_store_free(s);
    fixture_rmdir(dir);
}

struct slot_wait {
    struct rt__ch *ch;
    int left; /* the slots still taken when statement 0's answer was taken */
};

/* At statement 0's answer, waits (up to 10 s) for the other statement's slot to come back. */
static int wait_slot_back(void *ud, size_t i, struct rt_error *err)
{
    struct slot_wait *u = ud;
    (void)err;
    for (int t = 0; i == 0 && t < 1000 && atomic_load(&u->ch->extra_threads) != 0; t++)
        usleep(10000);
    if (i == 0)
        u->left = atomic_load(&u->ch->extra_threads);
    return 0;
}

/* rt__ch_run_each: a statement on a thread of its own gives the store's thread slot back when
 * its answer is in, not when the caller reaches it in order: statement 1 (SELECT 1) ends
 * while statement 0 (a second's sleep, on the caller's thread) runs, and its slot is free at
 * statement 0's answer, before statement 1 is joined. Every slot is back at the end. */
static void test_run_each_slots(void)
{
    if (!fixture_clickhouse()) {
        fprintf(stderr, "skip %s on sqlite: ClickHouse's statements at once\n", __func__);
        return;
    }
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt__ch *ch = s->be;
    struct rt_buf sql[2], out[2];
    const char *q[2] = {"SELECT sleep(1)", "SELECT 1"};
    for (int i = 0; i < 2; i++) {
        rt_buf_init(&sql[i], 0);
        rt_buf_init(&out[i], 1 << 20);
        CHECK_INT(rt_buf_puts(&sql[i], q[i]), 0);
    }
    struct slot_wait u = {ch, -1};
    struct rt_error err = {0};
    CHECK_INT(atomic_load(&ch->extra_threads), 0);
    CHECK_INT(rt__ch_run_each(ch, sql, out, 2, wait_slot_back, &u, &err), 0);
    CHECK_INT(u.left, 0);
    CHECK_INT(atomic_load(&ch->extra_threads), 0);
    CHECK_STR(out[1].data, "1\n");
    for (int i = 0; i < 2; i++) {
        rt_buf_cleanup(&sql[i]);
        rt_buf_cleanup(&out[i]);
    }
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* Schema v1 -> v6 (v2: producer, cpu_scale; v3: content_hash; v4: declared_type; v5: the
 * issues' source, alert_key and alert, and the table issue_states; v6: the tables rollups and
 * rollup_deferrals): a database whose profiles and issues tables lack those columns, holding a
 * row written before them, migrates at open; the old row reads as an unknown producer with a
 * factor of 1 and no declared type, and a new upload stores its own.
 * Opening again migrates nothing (the columns are looked for before each ALTER: 18.16 has no
 * IF NOT EXISTS). */
static void test_migration_v1(void)
{
    if (!fixture_clickhouse() || fixture_cluster()) {
        fprintf(stderr, "skip %s on %s: one ClickHouse server's schema migration\n", __func__,
                fixture_clickhouse() ? "a cluster (created at the current version)" : "sqlite");
        return;
    }
    char *dir = fixture_tmpdir();
    rt_store_free(open_dir(dir));
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE profiles DROP COLUMN producer"), 0);
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE profiles DROP COLUMN cpu_scale"), 0);
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE profiles DROP COLUMN content_hash"), 0);
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE profiles DROP COLUMN declared_type"), 0);
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE issues DROP COLUMN source"), 0);
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE issues DROP COLUMN alert_key"), 0);
    CHECK_INT(fixture_ch_int(dir, "ALTER TABLE issues DROP COLUMN alert"), 0);
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE issue_states"), 0);
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE rollups"), 0);
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE rollup_deferrals"), 0);
    CHECK_INT(fixture_ch_int(dir, "TRUNCATE TABLE schema_version"), 0);
    CHECK_INT(fixture_ch_int(dir, "INSERT INTO schema_version VALUES (1, 0)"), 0);
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO profiles (id, dedup, service, type, instance, time_ns, duration_ns, "
             "end_ns, value_ns, thread_cpu_ns, process_cpu_ns, has_counts) VALUES (7, '#7', "
             "'old', 1, 'a', %lld, %lld, %lld, 5, 9, -1, 1)",
             (long long)T0, (long long)(10 * S), (long long)(T0 + 10 * S));
    CHECK_INT(fixture_ch_int(dir, sql), 0);
    struct rt_store *s = open_dir(dir);
    CHECK_INT(fixture_ch_int(dir, "SELECT max(version) FROM schema_version"), 6);
    struct got g;
    CHECK_INT(scan(s, "old", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 1);
    CHECK_STR(g.p[0].producer, "");
    CHECK_NEAR(g.p[0].cpu_scale, 1, 0);
    CHECK_INT(g.p[0].declared_type, 0);
    CHECK_INT(g.p[0].thread_cpu_ns, 9);
    struct rt_profile *p = fixture_profile(RT_PTYPE_CPU, "old", "a", NULL, NULL, T0 + 10 * S, S);
    fixture_add(p, "main;work", 1, 10);
    p->producer = rt_producer_of_upload("node", RT_PTYPE_CPU);
    p->cpu_scale = 0.5;
    p->declared_type = RT_PTYPE_WALL;
    CHECK_INT(fixture_put(s, p, NULL), 0);
    rt_profile_free(p);
    rt_store_free(s);
    s = open_dir(dir);
    CHECK_INT(fixture_ch_int(dir, "SELECT count() FROM schema_version"), 6);
    CHECK_INT(fixture_ch_int(dir, "SELECT count() FROM system.columns WHERE database = "
                                  "currentDatabase() AND table = 'issues' AND name IN "
                                  "('source', 'alert_key', 'alert')"), 3);
    CHECK_INT(fixture_ch_int(dir, "SELECT count() FROM system.tables WHERE database = "
                                  "currentDatabase() AND name = 'issue_states'"), 1);
    CHECK_INT(fixture_ch_int(dir, "SELECT count() FROM system.tables WHERE database = "
                                  "currentDatabase() AND name IN ('rollups', "
                                  "'rollup_deferrals')"), 2);
    CHECK_INT(scan(s, "old", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 2);
    CHECK_STR(g.p[1].producer, "roottrace-node");
    CHECK_NEAR(g.p[1].cpu_scale, 0.5, 0);
    CHECK_INT(g.p[1].declared_type, RT_PTYPE_WALL);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* Start-up refuses what it cannot run on, before any DDL: a schema from a newer roottrace,
 * a cluster the server does not know, a cluster database opened as one server's. */
static void test_startup_refusals(void)
{
    if (!fixture_clickhouse()) {
        fprintf(stderr, "skip %s on sqlite: ClickHouse's start-up checks\n", __func__);
        return;
    }
    char *dir = fixture_tmpdir(), uri[600];
    struct rt_error err = {0};
    rt_store_free(open_dir(dir));
    CHECK_INT(fixture_ch_int(dir, "INSERT INTO schema_version VALUES (99, 0)"), 0);
    fixture_uri(dir, uri, sizeof(uri));
    CHECK(rt_store_open(uri, &err) == NULL);
    CHECK_INT(err.code, RT_EIO);
    CHECK(strstr(err.msg, "schema version 99 is newer") != NULL);
    /* and nothing was changed: the same refusal again */
    CHECK(rt_store_open(uri, &err) == NULL);
    CHECK(strstr(err.msg, "schema version 99 is newer") != NULL);
    CHECK_INT(fixture_ch_int(dir, "SELECT max(version) FROM schema_version"), 99);
    if (!fixture_cluster()) {
        char with[700];
        snprintf(with, sizeof(with), "%s?cluster=roottrace", uri);
        CHECK(rt_store_open(with, &err) == NULL);
        CHECK_INT(err.code, RT_EINVAL);
        CHECK(strstr(err.msg, "remote_servers") != NULL);
    }
    fixture_rmdir(dir);
}

/* A database roottrace has not versioned is taken only when it holds nothing but roottrace's
 * own tables (a first start cut short resumes); another program's tables are never altered
 * and nothing is created beside them (a new user's review). */
static void test_foreign_tables_refused(void)
{
    if (!fixture_clickhouse() || fixture_cluster()) {
        fprintf(stderr, "skip %s on %s: drops tables of one server's database\n", __func__,
                fixture_clickhouse() ? "a cluster" : "sqlite");
        return;
    }
    char *dir = fixture_tmpdir(), uri[600];
    struct rt_error err = {0};
    rt_store_free(open_dir(dir));
    fixture_uri(dir, uri, sizeof(uri));
    /* roottrace's tables and no version: the migration resumes */
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE schema_version"), 0);
    struct rt_store *s = rt_store_open(uri, &err);
    CHECK(s != NULL);
    rt_store_free(s);
    CHECK_INT(fixture_ch_int(dir, "SELECT max(version) FROM schema_version"), 6);
    /* a table of another program's */
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE schema_version"), 0);
    CHECK_INT(fixture_ch_int(dir, "CREATE TABLE orders (id UInt64) ENGINE = MergeTree ORDER BY id"),
              0);
    CHECK(rt_store_open(uri, &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    CHECK(strstr(err.msg, "holds tables that roottrace did not create") != NULL);
    CHECK_INT(fixture_ch_int(dir, "SELECT count() FROM system.tables WHERE database = "
                                  "currentDatabase() AND name = 'schema_version'"), 0);
    /* a profiles table of another program's: not altered */
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE orders"), 0);
    CHECK_INT(fixture_ch_int(dir, "DROP TABLE profiles"), 0);
    CHECK_INT(fixture_ch_int(dir, "CREATE TABLE profiles (id UInt64, name String) ENGINE = "
                                  "MergeTree ORDER BY id"), 0);
    CHECK(rt_store_open(uri, &err) == NULL);
    CHECK(strstr(err.msg, "a table profiles (without roottrace's columns)") != NULL);
    CHECK_INT(fixture_ch_int(dir, "SELECT count() FROM system.columns WHERE database = "
                                  "currentDatabase() AND table = 'profiles'"), 2);
    fixture_rmdir(dir);
}

int main(void)
{
    RUN(test_quote);
    RUN(test_rowbinary);
    RUN(test_rowbinary_arrays);
    RUN(test_idmap);
    RUN(test_ids);
    RUN(test_uris);
    RUN(test_odd_names);
    RUN(test_retention_months);
    RUN(test_window_sums);
    RUN(test_run_each_slots);
    RUN(test_migration_v1);
    RUN(test_startup_refusals);
    RUN(test_foreign_tables_refused);
    return TEST_DONE();
}
