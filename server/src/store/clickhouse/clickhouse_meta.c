/* ClickHouse backend, everything beside profiles and the control plane: services and
 * instances (as append-only registrations and instance events, merged at read time), polls
 * as liveness evidence, deploys (observed ones deduplicated at read time) and issues (ids
 * unique across nodes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/timeutil.h"

int rt__ch_w_instance_event(struct rt_buf *b, const char *service, const char *instance,
                            uint8_t kind, const char *runtime, const char *runtime_version,
                            const char *sdk_version, const char *version, const char *status,
                            int64_t interval_us, int64_t poll_interval_s, int64_t at_ns)
{
    uint8_t given = (runtime ? RT__CH_GIVEN_RUNTIME : 0) |
                    (runtime_version ? RT__CH_GIVEN_RUNTIME_VERSION : 0) |
                    (sdk_version ? RT__CH_GIVEN_SDK_VERSION : 0) |
                    (version ? RT__CH_GIVEN_VERSION : 0) | (status ? RT__CH_GIVEN_STATUS : 0);
    int rc = rt__ch_w_cstr(b, service) || rt__ch_w_cstr(b, instance) || rt__ch_w_u8(b, kind) ||
             rt__ch_w_u8(b, given) || rt__ch_w_cstr(b, runtime) ||
             rt__ch_w_cstr(b, runtime_version) || rt__ch_w_cstr(b, sdk_version) ||
             rt__ch_w_cstr(b, version) || rt__ch_w_cstr(b, status) ||
             rt__ch_w_i64(b, interval_us) || rt__ch_w_i64(b, poll_interval_s) ||
             rt__ch_w_i64(b, at_ns) || rt__ch_w_i64(b, rt__ch_seq());
    return rc ? RT_ENOMEM : 0;
}

int rt__ch_w_service(struct rt_buf *b, const char *name, int64_t at_ns)
{
    return rt__ch_w_cstr(b, name) || rt__ch_w_i64(b, at_ns) ? RT_ENOMEM : 0;
}

int rt__ch_insert_rows(struct rt__ch *ch, const char *table, struct rt_buf *b, bool built,
                       struct rt_error *err)
{
    if (!built)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    char sql[96];
    snprintf(sql, sizeof(sql), "INSERT INTO %s FORMAT RowBinary", table);
    return rt__ch_exec(ch, sql, b->data, b->len, NULL, err);
}

int rt__ch_put_poll(struct rt_store *s, const char *service, const char *instance,
                    int64_t at_ns, struct rt_error *err)
{
    struct rt_poll p = {.service = service, .instance = instance, .at_ns = at_ns};
    return rt__ch_put_polls(s, &p, 1, err);
}

int rt__ch_select_rows(struct rt__ch *ch, struct rt_buf *sql, bool built, struct rt_buf *out,
                       struct rt_error *err)
{
    if (!built)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    return rt__ch_run(ch, sql, out, err);
}

int rt__ch_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                         int64_t to_ns, rt_store_liveness_cb cb, void *ud, struct rt_error *err)
{
    /* Two polls at most rt_store_poll_gap_ns(the later one's poll interval) apart are one
     * stretch, as SQLite's segments: a poll shortly before the window (after it) extends the
     * instance's evidence to its start (end). Polls are read as far out as the longest gap. */
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    long long f = from_ns, t = to_ns, margin = rt_store_poll_gap_ns(RT_POLL_INTERVAL_MAX_S);
    bool ok = !rt_buf_printf(&sql,
                             "SELECT instance, countIf(at_ns >= %lld AND at_ns < %lld), "
                             "minIf(at_ns, at_ns >= %lld AND at_ns < %lld), "
                             "maxIf(at_ns, at_ns >= %lld AND at_ns < %lld), "
                             "argMinIf(poll_interval_s, at_ns, at_ns >= %lld AND at_ns < %lld), "
                             "countIf(at_ns < %lld), maxIf(at_ns, at_ns < %lld), "
                             "countIf(at_ns >= %lld), minIf(at_ns, at_ns >= %lld), "
                             "argMinIf(poll_interval_s, at_ns, at_ns >= %lld) "
                             "FROM instance_events WHERE kind = 2 AND service = ",
                             f, t, f, t, f, t, f, t, f, f, t, t, t) &&
              !rt__ch_quote_cstr(&sql, service) &&
              !rt_buf_printf(&sql, " AND at_ns >= %lld AND at_ns < %lld GROUP BY instance "
                                   "ORDER BY instance FORMAT RowBinary",
                             f - margin, t + margin);
    int rc = rt__ch_select_rows(s->be, &sql, ok, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t inst = rt__ch_strs_read(&strs, &r);
        uint64_t nin = rt__ch_rd_u64(&r);
        int64_t first = rt__ch_rd_i64(&r), last = rt__ch_rd_i64(&r);
        int64_t first_gap = rt_store_poll_gap_ns(rt__ch_rd_i64(&r));
        uint64_t nbefore = rt__ch_rd_u64(&r);
        int64_t before = rt__ch_rd_i64(&r);
        uint64_t nafter = rt__ch_rd_u64(&r);
        int64_t after = rt__ch_rd_i64(&r);
        int64_t after_gap = rt_store_poll_gap_ns(rt__ch_rd_i64(&r));
        if (r.bad) {
            rc = rt__ch_bad_response("a liveness query", err);
            break;
        }
        if (!nin) {
            /* only polls around the window: one stretch spans it when they are close */
            if (!nbefore || !nafter || after - before > after_gap)
                continue;
            first = from_ns;
            last = to_ns - 1;
        } else {
            if (nbefore && first - before <= first_gap)
                first = from_ns;
            if (nafter && after - last <= after_gap)
                last = to_ns - 1;
        }
        struct rt_liveness l = {rt__ch_strs_get(&strs, inst, false), first, last};
        rc = cb(ud, &l);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    bool ok = !rt__ch_w_cstr(&b, d->service) && !rt__ch_w_cstr(&b, d->version) &&
              !rt__ch_w_cstr(&b, d->source) && !rt__ch_w_i64(&b, d->at_ns) &&
              !rt__ch_w_i64(&b, rt__ch_new_id());
    int rc = rt__ch_insert_rows(s->be, "deploys", &b, ok, err);
    rt_buf_cleanup(&b);
    return rc;
}

int rt__ch_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                        int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err)
{
    /* Two nodes may both observe a version first: observed deploys are one per (service,
     * version), at the earliest time. */
    struct rt_buf sql, out, where;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    rt_buf_init(&where, 0);
    bool ok = !rt_buf_puts(&where, "1");
    if (service)
        ok = ok && !rt_buf_puts(&where, " AND service = ") && !rt__ch_quote_cstr(&where, service);
    ok = ok && where.data &&
         !rt_buf_printf(&sql,
                        "SELECT service, version, source, at FROM ("
                        "SELECT service, version, source, at_ns AS at, seq AS sq FROM deploys "
                        "WHERE source = 'declared' AND %s UNION ALL "
                        "SELECT service, version, source, min(at_ns) AS at, min(seq) AS sq "
                        "FROM deploys WHERE source = 'observed' AND %s "
                        "GROUP BY service, version, source) WHERE at >= %lld AND at < %lld "
                        "ORDER BY at, sq FORMAT RowBinary",
                        where.data, where.data, (long long)from_ns, (long long)to_ns);
    int rc = rt__ch_select_rows(s->be, &sql, ok, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t sv = rt__ch_strs_read(&strs, &r), ver = rt__ch_strs_read(&strs, &r),
               src = rt__ch_strs_read(&strs, &r);
        int64_t at = rt__ch_rd_i64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("a deploys query", err);
            break;
        }
        struct rt_deploy d = {rt__ch_strs_get(&strs, sv, false),
                              rt__ch_strs_get(&strs, ver, false),
                              rt__ch_strs_get(&strs, src, false), at};
        rc = cb(ud, &d);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&where);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}


int rt__ch_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                         struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = rt__ch_exec(
        s->be,
        "SELECT name, en, last, cpu, wall FROM (SELECT name, en FROM "
        "(SELECT DISTINCT name FROM services) AS s ANY LEFT JOIN (SELECT name, "
        "argMax(enabled, ver) AS en FROM service_configs GROUP BY name) AS c USING name) AS sc "
        "ANY LEFT JOIN (SELECT service AS name, max(at_ns) AS last, max(type = 1) AS cpu, "
        "max(type = 2) AS wall FROM uploads GROUP BY service) AS u USING name "
        "ORDER BY name FORMAT RowBinary",
        NULL, 0, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t name = rt__ch_strs_read(&strs, &r);
        struct rt_service_info svc = {.profiling_enabled = rt__ch_rd_u8(&r) != 0};
        svc.last_upload_ns = rt__ch_rd_i64(&r);
        svc.has_cpu = rt__ch_rd_u8(&r) != 0;
        svc.has_wall = rt__ch_rd_u8(&r) != 0;
        if (r.bad) {
            rc = rt__ch_bad_response("a services query", err);
            break;
        }
        svc.name = rt__ch_strs_get(&strs, name, false);
        rc = cb(ud, &svc);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&out);
    return rc;
}

/* "argMaxIf(col, seq, bitAnd(given, bit) != 0), bitAnd(groupBitOr(given), bit) != 0": the
 * value the last write gave (as SQLite's coalesce on update), and whether any did. */
#define LATEST(col, bit)                                                                       \
    "argMaxIf(" col ", seq, bitAnd(given, " #bit ") != 0), "                                 \
    "bitAnd(groupBitOr(given), " #bit ") != 0"

int rt__ch_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                          void *ud, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_puts(&sql, "SELECT service, instance, " LATEST("runtime", 1) ", "
                                 LATEST("runtime_version", 2) ", " LATEST("sdk_version", 4)
                                 ", " LATEST("version", 8) ", " LATEST("status", 16)
                                 ", min(at_ns), max(at_ns) FROM instance_events");
    if (service)
        ok = ok && !rt_buf_puts(&sql, " WHERE service = ") && !rt__ch_quote_cstr(&sql, service);
    ok = ok && !rt_buf_puts(&sql, " GROUP BY service, instance ORDER BY service, instance "
                                  "FORMAT RowBinary");
    int rc = rt__ch_select_rows(s->be, &sql, ok, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t idx[7];
        bool given[7] = {true, true};
        idx[0] = rt__ch_strs_read(&strs, &r);
        idx[1] = rt__ch_strs_read(&strs, &r);
        for (int k = 2; k < 7; k++) {
            idx[k] = rt__ch_strs_read(&strs, &r);
            given[k] = rt__ch_rd_u8(&r) != 0;
        }
        int64_t first = rt__ch_rd_i64(&r), last = rt__ch_rd_i64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("an instances query", err);
            break;
        }
        const char *v[7];
        for (int k = 0; k < 7; k++)
            v[k] = rt__ch_strs_get(&strs, idx[k], !given[k]);
        struct rt_instance_info inst = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], first, last};
        rc = cb(ud, &inst);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}
