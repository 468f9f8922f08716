/* ClickHouse backend, the wire: statements POSTed over ClickHouse's HTTP interface with a
 * small pool of curl handles, string literals escaped byte by byte, RowBinary rows written
 * and read, and cluster-unique ids. */
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/timeutil.h"

/* ---- HTTP ---- */

static CURL *take_handle(struct rt__ch *ch)
{
    CURL *h = NULL;
    pthread_mutex_lock(&ch->pool_lock);
    if (ch->nidle)
        h = ch->idle[--ch->nidle];
    pthread_mutex_unlock(&ch->pool_lock);
    if (h)
        curl_easy_reset(h);
    else
        h = curl_easy_init();
    return h;
}

static void give_handle(struct rt__ch *ch, CURL *h)
{
    pthread_mutex_lock(&ch->pool_lock);
    if (ch->nidle < RT__CH_POOL) {
        ch->idle[ch->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&ch->pool_lock);
    if (h)
        curl_easy_cleanup(h);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct rt_buf *b = ud;
    return rt_buf_append(b, p, size * n) ? 0 : size * n;
}

/* The message of a failed statement: ClickHouse's text, trimmed to one line. */
static int fail(const struct rt_buf *body, long status, const char *sql, struct rt_error *err)
{
    char msg[300];
    size_t n = body->len < sizeof(msg) - 1 ? body->len : sizeof(msg) - 1;
    memcpy(msg, body->data ? body->data : "", n);
    msg[n] = '\0';
    for (char *q = msg; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
    int code = strstr(msg, "Not enough space") || strstr(msg, "No space left") ? RT_EDISKFULL
                                                                               : RT_EIO;
    return rt_error_set(err, code, "ClickHouse (HTTP %ld) on \"%.60s\": %s", status, sql, msg);
}

/* rt__ch_exec with a bound on the whole statement, ms. */
static int exec_within(struct rt__ch *ch, const char *sql, const void *data, size_t n,
                       struct rt_buf *out, long timeout_ms, struct rt_error *err)
{
    CURL *h = take_handle(ch);
    if (!h)
        return rt_error_set(err, RT_ENOMEM, "cannot create a curl handle");
    struct rt_buf url, local;
    rt_buf_init(&url, 0);
    rt_buf_init(&local, RT__CH_MAX_RESPONSE);
    struct rt_buf *body = out ? out : &local;
    body->len = 0;
    int rc = rt_buf_puts(&url, ch->url);
    if (!rc && data) {
        char *q = curl_easy_escape(h, sql, 0);
        rc = q ? rt_buf_printf(&url, "&query=%s", q) : RT_ENOMEM;
        curl_free(q);
    }
    if (rc) {
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        goto out_free;
    }
    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, data ? (const char *)data : sql);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? n : strlen(sql)));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, RT__CH_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hdr);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK)
        rc = rt_error_set(err, RT_EIO, "ClickHouse at %s unreachable: %s", ch->where,
                          curl_easy_strerror(cc));
    else if (status != 200)
        rc = fail(body, status, sql, err);
out_free:
    give_handle(ch, h);
    rt_buf_cleanup(&url);
    rt_buf_cleanup(&local);
    return rc;
}

int rt__ch_exec(struct rt__ch *ch, const char *sql, const void *data, size_t n,
                struct rt_buf *out, struct rt_error *err)
{
    return exec_within(ch, sql, data, n, out, RT__CH_TIMEOUT_MS, err);
}

int rt__ch_ping(struct rt__ch *ch, struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = exec_within(ch, "SELECT 1", NULL, 0, &out, RT__CH_PING_TIMEOUT_MS, err);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_run(struct rt__ch *ch, struct rt_buf *sql, struct rt_buf *out, struct rt_error *err)
{
    if (!sql->data || !sql->len)
        return rt_error_set(err, RT_ENOMEM, "out of memory building a statement");
    return rt__ch_exec(ch, sql->data, NULL, 0, out, err);
}

struct run_job {
    struct rt__ch *ch;
    struct rt_buf *sql, *out;
    struct rt_error err;
    int rc;
    bool slot; /* run on a thread of its own: gives its ch->extra_threads slot back when done */
};

/* Runs one statement. A job on a thread of its own gives its slot back as soon as its answer
 * is in, not when the caller joins it (run_each joins in order): the slots bound the
 * statements running, and another query may start its own meanwhile. The thread then only
 * returns, so the threads alive may pass the bound by those about to end. */
static void *run_job(void *p)
{
    struct run_job *j = p;
    j->err.code = 0;
    j->err.msg[0] = '\0';
    j->rc = rt__ch_run(j->ch, j->sql, j->out, &j->err);
    if (j->slot)
        atomic_fetch_sub(&j->ch->extra_threads, 1);
    return NULL;
}

int rt__ch_run_each(struct rt__ch *ch, struct rt_buf *sql, struct rt_buf *out, size_t n,
                    int (*done)(void *ud, size_t i, struct rt_error *err), void *ud,
                    struct rt_error *err)
{
    struct run_job jobs[RT__CH_RUN_ALL_MAX];
    pthread_t tid[RT__CH_RUN_ALL_MAX];
    bool started[RT__CH_RUN_ALL_MAX] = {false};
    if (n > RT__CH_RUN_ALL_MAX)
        return rt_error_set(err, RT_EINVAL, "%zu statements at once (at most %d)", n,
                            RT__CH_RUN_ALL_MAX);
    for (size_t i = 0; i < n; i++) {
        jobs[i] = (struct run_job){.ch = ch, .sql = &sql[i], .out = &out[i], .slot = i > 0};
        /* the caller's thread runs the first; one past the bound, or that cannot be
         * started, runs there too, in its turn */
        started[i] = i > 0 && atomic_fetch_add(&ch->extra_threads, 1) < RT__CH_EXTRA_THREADS &&
                     pthread_create(&tid[i], NULL, run_job, &jobs[i]) == 0;
        if (i > 0 && !started[i]) {
            jobs[i].slot = false; /* no thread: the slot goes back now */
            atomic_fetch_sub(&ch->extra_threads, 1);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (started[i]) {
            pthread_join(tid[i], NULL);
        } else if (!rc) {
            run_job(&jobs[i]);
        } else {
            continue; /* not run: a statement before it failed */
        }
        if (!rc && jobs[i].rc) {
            rc = jobs[i].rc;
            *err = jobs[i].err;
        }
        if (!rc && done)
            rc = done(ud, i, err);
    }
    return rc;
}

int rt__ch_run_all(struct rt__ch *ch, struct rt_buf *sql, struct rt_buf *out, size_t n,
                   struct rt_error *err)
{
    return rt__ch_run_each(ch, sql, out, n, NULL, NULL, err);
}

int rt__ch_quote(struct rt_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (rt_buf_reserve(b, n * 4 + 2))
        return RT_ENOMEM;
    char *p = b->data + b->len;
    *p++ = '\'';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
            *p++ = (char)c;
        } else {
            *p++ = '\\';
            *p++ = 'x';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    *p++ = '\'';
    b->len = (size_t)(p - b->data);
    b->data[b->len] = '\0';
    return 0;
}

int rt__ch_quote_cstr(struct rt_buf *b, const char *s)
{
    return rt__ch_quote(b, s ? s : "", s ? strlen(s) : 0);
}

/* ---- RowBinary ---- */

static int put_le(struct rt_buf *b, uint64_t v, int bytes)
{
    unsigned char t[8];
    for (int i = 0; i < bytes; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    return rt_buf_append(b, t, (size_t)bytes);
}

int rt__ch_w_u8(struct rt_buf *b, uint8_t v)
{
    return put_le(b, v, 1);
}

int rt__ch_w_u32(struct rt_buf *b, uint32_t v)
{
    return put_le(b, v, 4);
}

int rt__ch_w_u64(struct rt_buf *b, uint64_t v)
{
    return put_le(b, v, 8);
}

int rt__ch_w_i64(struct rt_buf *b, int64_t v)
{
    return put_le(b, (uint64_t)v, 8);
}

int rt__ch_w_f64(struct rt_buf *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return put_le(b, bits, 8);
}

int rt__ch_w_uvarint(struct rt_buf *b, uint64_t v)
{
    if (rt_buf_reserve(b, 11))
        return RT_ENOMEM;
    rt__store_put_uvarint(b, v);
    b->data[b->len] = '\0';
    return 0;
}

int rt__ch_w_str(struct rt_buf *b, const char *s, size_t n)
{
    if (rt__ch_w_uvarint(b, n))
        return RT_ENOMEM;
    return n ? rt_buf_append(b, s, n) : 0;
}

int rt__ch_w_cstr(struct rt_buf *b, const char *s)
{
    return rt__ch_w_str(b, s ? s : "", s ? strlen(s) : 0);
}

void rt__ch_rd_init(struct rt__ch_rd *r, const struct rt_buf *b)
{
    r->p = (const unsigned char *)(b->data ? b->data : "");
    r->end = r->p + b->len;
    r->bad = false;
}

bool rt__ch_rd_more(const struct rt__ch_rd *r)
{
    return !r->bad && r->p < r->end;
}

/* n bytes at the cursor, or NULL (bad set) when fewer remain. */
static const unsigned char *take(struct rt__ch_rd *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    return p;
}

#define RT__LITTLE_ENDIAN (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

static uint64_t get_le(struct rt__ch_rd *r, int bytes)
{
    const unsigned char *p = take(r, (size_t)bytes);
    uint64_t v = 0;
    if (p && RT__LITTLE_ENDIAN)
        memcpy(&v, p, (size_t)bytes);
    else
        for (int i = 0; p && i < bytes; i++)
            v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void rt__ch_rd_le64s(struct rt__ch_rd *r, void *out, size_t n)
{
    const unsigned char *p = n <= SIZE_MAX / 8 ? take(r, n * 8) : NULL;
    if (!p) {
        r->bad = true;
        memset(out, 0, n * 8);
    } else if (RT__LITTLE_ENDIAN) {
        memcpy(out, p, n * 8);
    } else {
        unsigned char *o = out;
        for (size_t i = 0; i < n * 8; i += 8)
            for (int k = 0; k < 8; k++)
                o[i + (size_t)k] = p[i + 7 - (size_t)k];
    }
}

uint8_t rt__ch_rd_u8(struct rt__ch_rd *r)
{
    return (uint8_t)get_le(r, 1);
}

uint32_t rt__ch_rd_u32(struct rt__ch_rd *r)
{
    return (uint32_t)get_le(r, 4);
}

uint64_t rt__ch_rd_u64(struct rt__ch_rd *r)
{
    return get_le(r, 8);
}

int64_t rt__ch_rd_i64(struct rt__ch_rd *r)
{
    return (int64_t)get_le(r, 8);
}

double rt__ch_rd_f64(struct rt__ch_rd *r)
{
    uint64_t bits = get_le(r, 8);
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

uint64_t rt__ch_rd_uvarint(struct rt__ch_rd *r)
{
    uint64_t v = 0;
    if (r->bad || !rt__store_get_uvarint(&r->p, r->end, &v)) {
        r->bad = true;
        return 0;
    }
    return v;
}

const char *rt__ch_rd_str(struct rt__ch_rd *r, size_t *n)
{
    uint64_t len = rt__ch_rd_uvarint(r);
    const unsigned char *p = len <= (uint64_t)(r->end - r->p) ? take(r, (size_t)len) : NULL;
    if (!p) {
        r->bad = true;
        *n = 0;
        return "";
    }
    *n = (size_t)len;
    return (const char *)p;
}

void rt__ch_rd_fixed(struct rt__ch_rd *r, void *out, size_t n)
{
    const unsigned char *p = take(r, n);
    if (p)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

void rt__ch_strs_reset(struct rt__ch_strs *s)
{
    if (!s->buf.limit) /* zero-initialized: not yet rt_buf_init'ed (nothing allocated) */
        rt_buf_init(&s->buf, 0);
    s->buf.len = 0;
    s->n = 0;
}

size_t rt__ch_strs_read(struct rt__ch_strs *s, struct rt__ch_rd *r)
{
    size_t n;
    const char *p = rt__ch_rd_str(r, &n);
    size_t i = s->n < 16 ? s->n++ : 15;
    s->off[i] = s->buf.len;
    /* a failed append (ENOMEM) leaves an empty string, flagged as a bad read */
    if (rt_buf_append(&s->buf, p, n) || rt_buf_append(&s->buf, "", 1)) {
        r->bad = true;
        s->off[i] = SIZE_MAX;
    }
    return i;
}

const char *rt__ch_strs_get(const struct rt__ch_strs *s, size_t i, bool absent)
{
    if (absent || i >= s->n || s->off[i] == SIZE_MAX || !s->buf.data)
        return absent ? NULL : "";
    return s->buf.data + s->off[i];
}

int64_t rt__ch_seq(void)
{
    static _Atomic int64_t last;
    int64_t now = rt_time_now_ns(), prev = last;
    int64_t next;
    do
        next = now > prev ? now : prev + 1;
    while (!atomic_compare_exchange_weak(&last, &prev, next));
    return next;
}

int64_t rt__ch_new_id(void)
{
    uint64_t us = (uint64_t)(rt_time_now_ns() / 1000);
    uint64_t rnd = randombytes_uniform(1024);
    return (int64_t)(((us << 10) | rnd) & (uint64_t)INT64_MAX);
}

int rt__ch_bad_response(const char *what, struct rt_error *err)
{
    return rt_error_set(err, RT_EIO, "ClickHouse answered %s with malformed data", what);
}
