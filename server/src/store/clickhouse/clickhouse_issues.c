/* ClickHouse backend: issues (DESIGN §6, §13). An issue is one row of issues (an alert's issue
 * has an id derived from its episode's key, so that two nodes opening it at once store the
 * same row, which LIMIT 1 BY id reads once), and what happens to it afterwards is a log of
 * rows in issue_states, read back with argMax: nothing is updated in place. */
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/str.h"
#include "rt/timeutil.h"
#include "rt/u64map.h"

/* The id of an alert episode's issue: a hash of its source and key, positive. */
static int64_t alert_issue_id(const char *source, const char *key)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    uint64_t h = 0;
    if (!rt_buf_puts(&b, source) && !rt_buf_append(&b, "", 1) && !rt_buf_puts(&b, key))
        h = rt_hash(b.data, b.len);
    rt_buf_cleanup(&b);
    return (int64_t)(h >> 1) | 1;
}

int rt__ch_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                     struct rt_error *err)
{
    const char *source = i->source && *i->source ? i->source : "api";
    int64_t new_id = i->alert_key && *i->alert_key ? alert_issue_id(source, i->alert_key)
                                                  : rt__ch_new_id();
    /* its first notification before the issue: a reader that sees the issue sees it (a second
     * node opening the same issue at once records its own, as a repeat does) */
    if (i->notified_at_ns > 0 &&
        rt__ch_put_issue_state(s, new_id, RT_ISSUE_NOTIFIED, i->notified_at_ns, 0, err))
        return err->code;
    struct rt_buf b;
    rt_buf_init(&b, 0);
    bool ok = !rt__ch_w_i64(&b, new_id) && !rt__ch_w_cstr(&b, i->service) &&
              !rt__ch_w_cstr(&b, i->title) && !rt__ch_w_i64(&b, i->started_at_ns) &&
              !rt__ch_w_i64(&b, i->created_at_ns ? i->created_at_ns : rt_time_now_ns()) &&
              !rt__ch_w_cstr(&b, source) && !rt__ch_w_cstr(&b, i->alert_key ? i->alert_key : "") &&
              !rt__ch_w_cstr(&b, i->alert ? i->alert : "");
    int rc = rt__ch_insert_rows(s->be, "issues", &b, ok, err);
    rt_buf_cleanup(&b);
    if (!rc)
        *id = new_id;
    return rc;
}

int rt__ch_find_alert_issue(struct rt_store *s, const char *source, const char *alert_key,
                            int64_t *id, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_puts(&sql, "SELECT id FROM issues WHERE source = ") &&
              !rt__ch_quote_cstr(&sql, source) && !rt_buf_puts(&sql, " AND alert_key = ") &&
              !rt__ch_quote_cstr(&sql, alert_key) &&
              !rt_buf_puts(&sql, " LIMIT 1 FORMAT RowBinary");
    int rc = rt__ch_select_rows(s->be, &sql, ok, &out, err);
    *id = 0;
    if (!rc && out.len >= 8) {
        struct rt__ch_rd r;
        rt__ch_rd_init(&r, &out);
        *id = rt__ch_rd_i64(&r);
    }
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_put_issue_state(struct rt_store *s, int64_t id, enum rt_issue_state kind,
                           int64_t at_ns, int64_t ended_at_ns, struct rt_error *err)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    bool ok = !rt__ch_w_i64(&b, id) && !rt__ch_w_u8(&b, (uint8_t)kind) &&
              !rt__ch_w_i64(&b, at_ns) && !rt__ch_w_i64(&b, ended_at_ns) &&
              !rt__ch_w_i64(&b, rt__ch_new_id());
    int rc = rt__ch_insert_rows(s->be, "issue_states", &b, ok, err);
    rt_buf_cleanup(&b);
    return rc;
}

/* The states of issues read back: each issue's end (its latest state that sets one),
 * whether its alert resolved, and its alert's notifications. */
struct states {
    struct rt_u64map by_id;   /* issue id -> index */
    struct issue_state {
        int64_t ended_at_ns, notified_at_ns, notifications;
        bool resolved;
    } *v;
    size_t n, cap;
};

static int read_states(struct rt__ch *ch, int64_t id, struct states *st, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_puts(&sql, "SELECT id, argMaxIf(ended_at_ns, at_ns, kind >= 2), "
                                 "max(kind = 2), maxIf(at_ns, kind <= 2), countIf(kind <= 2) "
                                 "FROM issue_states");
    if (id >= 0)
        ok = ok && !rt_buf_printf(&sql, " WHERE id = %lld", (long long)id);
    ok = ok && !rt_buf_puts(&sql, " GROUP BY id FORMAT RowBinary");
    int rc = rt__ch_select_rows(ch, &sql, ok, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    while (!rc && rt__ch_rd_more(&r)) {
        int64_t iid = rt__ch_rd_i64(&r);
        struct issue_state x = {.ended_at_ns = rt__ch_rd_i64(&r)};
        x.resolved = rt__ch_rd_u8(&r) != 0;
        x.notified_at_ns = rt__ch_rd_i64(&r);
        x.notifications = (int64_t)rt__ch_rd_u64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("an issue states query", err);
            break;
        }
        if (rt_array_grow((void **)&st->v, &st->cap, st->n + 1, sizeof(*st->v)) ||
            rt_u64map_put(&st->by_id, (uint64_t)iid, (uint32_t)st->n)) {
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
            break;
        }
        st->v[st->n++] = x;
    }
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                       struct rt_error *err)
{
    struct states st = {0};
    rt_u64map_init(&st.by_id);
    int rc = read_states(s->be, id, &st, err);
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_puts(&sql, "SELECT id, service, title, started_at_ns, created_at_ns, "
                                 "source, alert FROM issues");
    if (id >= 0)
        ok = ok && !rt_buf_printf(&sql, " WHERE id = %lld", (long long)id);
    ok = ok && !rt_buf_puts(&sql, " ORDER BY started_at_ns DESC, id DESC LIMIT 1 BY id "
                                  "FORMAT RowBinary");
    rc = rc ? rc : rt__ch_select_rows(s->be, &sql, ok, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    bool any = false;
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        struct rt_issue is = {.id = rt__ch_rd_i64(&r)};
        size_t sv = rt__ch_strs_read(&strs, &r), title = rt__ch_strs_read(&strs, &r);
        is.started_at_ns = rt__ch_rd_i64(&r);
        is.created_at_ns = rt__ch_rd_i64(&r);
        size_t src = rt__ch_strs_read(&strs, &r), alert = rt__ch_strs_read(&strs, &r);
        if (r.bad) {
            rc = rt__ch_bad_response("an issues query", err);
            break;
        }
        any = true;
        is.service = rt__ch_strs_get(&strs, sv, false);
        is.title = rt__ch_strs_get(&strs, title, false);
        is.source = rt__ch_strs_get(&strs, src, false);
        is.alert = rt__ch_strs_get(&strs, alert, false);
        if (is.alert && !*is.alert)
            is.alert = NULL;
        uint32_t k;
        if (rt_u64map_find(&st.by_id, (uint64_t)is.id, &k)) {
            is.ended_at_ns = st.v[k].ended_at_ns;
            is.resolved = st.v[k].resolved;
            is.notified_at_ns = st.v[k].notified_at_ns;
            is.notifications = st.v[k].notifications;
        }
        rc = cb(ud, &is);
    }
    if (!rc && id >= 0 && !any)
        rc = rt_error_set(err, RT_ENOTFOUND, "no issue %lld", (long long)id);
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    rt_u64map_cleanup(&st.by_id);
    free(st.v);
    return rc;
}
