/* Tests of the store's metadata on SQLite or ClickHouse (ROOTTRACE_TEST_STORE; store.c,
 * sqlite_*.c, clickhouse_*.c): deploys, issues, services and instances, polls and liveness,
 * and retention. */
#include "store/sqlite/sqlite_int.h"
#include "store_fixture.h"
#include "store_scan.h"
#include "test.h"

struct deploys {
    int n;
    char text[8][96];
};

static int collect_deploy(void *ud, const struct rt_deploy *d)
{
    struct deploys *ds = ud;
    if (ds->n < 8)
        snprintf(ds->text[ds->n++], 96, "%s %s %s %lld", d->service, d->version, d->source,
                 (long long)((d->at_ns - T0) / S));
    return 0;
}

static void test_deploys(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *p1 = fixture_profile(RT_PTYPE_CPU, "svc", "a", "v1", NULL, T0, S);
    struct rt_profile *p2 = fixture_profile(RT_PTYPE_CPU, "svc", "b", "v1", NULL, T0 + 5 * S, S);
    struct rt_profile *p3 = fixture_profile(RT_PTYPE_WALL, "svc", "a", "v2", NULL, T0 + 9 * S, S);
    struct rt_profile *p4 = fixture_profile(RT_PTYPE_CPU, "other", "a", "v1", NULL, T0 + 7 * S, S);
    struct rt_profile *all[] = {p1, p2, p3, p4};
    for (int i = 0; i < 4; i++)
        CHECK_INT(fixture_put(s, all[i], NULL), 0);
    struct rt_error err = {0};
    struct rt_deploy d = {"svc", "v3", "declared", T0 + 8 * S};
    CHECK_INT(rt_store_put_deploy(s, &d, &err), 0);
    d.source = "guessed";
    CHECK_INT(rt_store_put_deploy(s, &d, &err), RT_EINVAL);

    struct deploys ds = {0};
    CHECK_INT(rt_store_scan_deploys(s, "svc", T0, T0 + 60 * S, collect_deploy, &ds, &err), 0);
    CHECK_INT(ds.n, 3);
    CHECK_STR(ds.text[0], "svc v1 observed 0");
    CHECK_STR(ds.text[1], "svc v3 declared 8");
    CHECK_STR(ds.text[2], "svc v2 observed 9");
    memset(&ds, 0, sizeof(ds));
    CHECK_INT(rt_store_scan_deploys(s, NULL, T0, T0 + 60 * S, collect_deploy, &ds, &err), 0);
    CHECK_INT(ds.n, 4);
    CHECK_STR(ds.text[1], "other v1 observed 7");
    /* half-open */
    memset(&ds, 0, sizeof(ds));
    CHECK_INT(rt_store_scan_deploys(s, "svc", T0 + 8 * S, T0 + 9 * S, collect_deploy, &ds, &err),
              0);
    CHECK_INT(ds.n, 1);
    /* a profile without a start time: the deploy is at now */
    struct rt_profile *p5 = fixture_profile(RT_PTYPE_CPU, "svc", "a", "v9", NULL, 0, S);
    CHECK_INT(fixture_put(s, p5, NULL), 0);
    memset(&ds, 0, sizeof(ds));
    CHECK_INT(rt_store_scan_deploys(s, "svc", T0 + 3600 * S, INT64_MAX, collect_deploy, &ds, &err),
              0);
    CHECK_INT(ds.n, 1);
    for (int i = 0; i < 4; i++)
        rt_profile_free(all[i]);
    rt_profile_free(p5);
    rt_store_free(s);
    fixture_rmdir(dir);
}

struct issues {
    int n;
    int64_t ids[8];
    char titles[8][32];
    int64_t started[8], created[8];
};

static int collect_issue(void *ud, const struct rt_issue *i)
{
    struct issues *is = ud;
    if (is->n < 8) {
        is->ids[is->n] = i->id;
        snprintf(is->titles[is->n], 32, "%s/%s", i->service, i->title);
        is->started[is->n] = i->started_at_ns;
        is->created[is->n++] = i->created_at_ns;
    }
    return 0;
}

static void test_issues(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    int64_t id1 = 0, id2 = 0;
    struct rt_issue a = {.service = "svc", .title = "slow checkout", .started_at_ns = T0};
    struct rt_issue b = {.service = "svc", .title = "errors", .started_at_ns = T0 + 60 * S,
                         .created_at_ns = T0 + 61 * S};
    CHECK_INT(rt_store_put_issue(s, &a, &id1, &err), 0);
    CHECK_INT(rt_store_put_issue(s, &b, &id2, &err), 0);
    CHECK(id1 > 0 && id2 > id1);
    struct issues is = {0};
    CHECK_INT(rt_store_scan_issues(s, -1, collect_issue, &is, &err), 0);
    CHECK_INT(is.n, 2);
    CHECK_INT(is.ids[0], id2);
    CHECK_STR(is.titles[0], "svc/errors");
    CHECK_INT(is.created[0], T0 + 61 * S);
    CHECK(is.created[1] > T0); /* now */
    memset(&is, 0, sizeof(is));
    CHECK_INT(rt_store_scan_issues(s, id1, collect_issue, &is, &err), 0);
    CHECK_INT(is.n, 1);
    CHECK_STR(is.titles[0], "svc/slow checkout");
    CHECK_INT(is.started[0], T0);
    CHECK_INT(rt_store_scan_issues(s, id2 + 100, collect_issue, &is, &err), RT_ENOTFOUND);
    struct rt_issue bad = {.service = "svc", .started_at_ns = T0};
    CHECK_INT(rt_store_put_issue(s, &bad, &id1, &err), RT_EINVAL);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* One issue as scan_issues gives it back (with its states). */
static int one_issue(void *ud, const struct rt_issue *i)
{
    struct rt_issue *o = ud;
    *o = *i;
    o->service = o->title = o->source = o->alert = NULL; /* valid during the call only */
    return 1;
}

/* Issues from alerts (DESIGN §13): one per (source, alert_key) episode whatever the number
 * of notifications, opened by the first firing one; resolved ends it; a resolved episode with
 * no issue opens nothing; the same key from another source is another issue; an end set by
 * hand, and a reopening. On both backends. */
static void test_alert_issues(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    struct rt_issue a = {.service = "svc", .title = "HighLatency", .started_at_ns = T0,
                         .source = "alertmanager", .alert_key = "fp1|1700000000000000000",
                         .alert = "{\"fingerprint\":\"fp1\"}"};
    int64_t id = 0, again = 0, other = 0;
    bool opened = false;
    CHECK_INT(rt_store_alert_issue(s, &a, false, T0 + S, &id, &opened, &err), 0);
    CHECK(id > 0 && opened);
    /* stored with the notification that opened it (one write: no reader sees it without) */
    struct rt_issue got = {0};
    CHECK_INT(rt_store_scan_issues(s, id, one_issue, &got, &err), 1);
    CHECK_INT(got.notifications, 1);
    CHECK_INT(got.notified_at_ns, T0 + S);
    CHECK_INT(rt_store_alert_issue(s, &a, false, T0 + 2 * S, &again, &opened, &err), 0);
    CHECK(again == id && !opened);
    CHECK_INT(rt_store_scan_issues(s, id, one_issue, &got, &err), 1);
    CHECK_INT(got.notifications, 2);
    CHECK_INT(got.notified_at_ns, T0 + 2 * S);
    /* a second node opening it at the same moment: the same issue, its notification counted */
    struct rt_issue race = a;
    race.notified_at_ns = T0 + 2 * S;
    CHECK_INT(rt_store_put_issue(s, &race, &again, &err), 0);
    CHECK_INT(again, id);
    CHECK_INT(rt_store_scan_issues(s, id, one_issue, &got, &err), 1);
    CHECK_INT(got.notifications, 3);
    CHECK_INT(got.ended_at_ns, 0);
    CHECK(!got.resolved);
    /* put again under the same key (a second node): the same issue */
    CHECK_INT(rt_store_put_issue(s, &a, &again, &err), 0);
    CHECK_INT(again, id);
    /* resolved: ended at its endsAt */
    a.ended_at_ns = T0 + 60 * S;
    CHECK_INT(rt_store_alert_issue(s, &a, true, T0 + 61 * S, &again, &opened, &err), 0);
    CHECK(again == id && !opened);
    CHECK_INT(rt_store_scan_issues(s, id, one_issue, &got, &err), 1);
    CHECK_INT(got.ended_at_ns, T0 + 60 * S);
    CHECK(got.resolved);
    CHECK_INT(got.notifications, 4);
    /* a resolved episode never opens an issue; the same key from Grafana is another issue */
    struct rt_issue b = a;
    b.alert_key = "fp2|1700000000000000000";
    CHECK_INT(rt_store_alert_issue(s, &b, true, T0, &other, &opened, &err), 0);
    CHECK(other == 0 && !opened);
    b = a;
    b.source = "grafana";
    CHECK_INT(rt_store_alert_issue(s, &b, false, T0, &other, &opened, &err), 0);
    CHECK(other > 0 && other != id && opened);
    /* an end set by hand, then reopened */
    CHECK_INT(rt_store_set_issue_end(s, other, T0 + 30 * S, &err), 0);
    CHECK_INT(rt_store_scan_issues(s, other, one_issue, &got, &err), 1);
    CHECK_INT(got.ended_at_ns, T0 + 30 * S);
    CHECK(!got.resolved);
    CHECK_INT(rt_store_set_issue_end(s, other, 0, &err), 0);
    CHECK_INT(rt_store_scan_issues(s, other, one_issue, &got, &err), 1);
    CHECK_INT(got.ended_at_ns, 0);
    CHECK_INT(rt_store_set_issue_end(s, other + 12345, T0, &err), RT_ENOTFOUND);
    /* an issue opened by hand is the API's */
    struct rt_issue h = {.service = "svc", .title = "by hand", .started_at_ns = T0};
    int64_t hid = 0;
    CHECK_INT(rt_store_put_issue(s, &h, &hid, &err), 0);
    struct issues is = {0};
    CHECK_INT(rt_store_scan_issues(s, -1, collect_issue, &is, &err), 0);
    CHECK_INT(is.n, 3);
    rt_store_free(s);
    fixture_rmdir(dir);
}

struct listing {
    int n;
    char text[8][160];
};

static int collect_service(void *ud, const struct rt_service_info *v)
{
    struct listing *l = ud;
    if (l->n < 8)
        snprintf(l->text[l->n++], 160, "%s en=%d cpu=%d wall=%d up=%d", v->name,
                 v->profiling_enabled, v->has_cpu, v->has_wall, v->last_upload_ns > 0);
    return 0;
}

static int collect_instance(void *ud, const struct rt_instance_info *i)
{
    struct listing *l = ud;
    if (l->n < 8)
        snprintf(l->text[l->n++], 160, "%s/%s %s %s %s %s %s %lld", i->service, i->instance,
                 i->runtime ? i->runtime : "-", i->runtime_version ? i->runtime_version : "-",
                 i->sdk_version ? i->sdk_version : "-", i->version ? i->version : "-",
                 i->status ? i->status : "-", (long long)(i->last_seen_ns >= i->first_seen_ns));
    return 0;
}

static void test_services_instances(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    struct rt_profile *a = fixture_profile(RT_PTYPE_CPU, "api", "a1", "v1", NULL, T0, S);
    rt_profile_set_str(&a->runtime, "node");
    rt_profile_set_str(&a->runtime_version, "22.1");
    rt_profile_set_str(&a->sdk_version, "0.1.0");
    struct rt_profile *b = fixture_profile(RT_PTYPE_WALL, "api", "a1", "v2", NULL, T0 + S, S);
    struct rt_profile *c = fixture_profile(RT_PTYPE_WALL, "worker", "w1", NULL, NULL, T0, S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    CHECK_INT(fixture_put(s, b, NULL), 0); /* no runtime: the stored one stays */
    CHECK_INT(fixture_put(s, c, NULL), 0);
    CHECK_INT(rt_store_put_poll(s, "polled", "p1", T0, &err), 0);

    struct listing l = {0};
    CHECK_INT(rt_store_scan_services(s, collect_service, &l, &err), 0);
    CHECK_INT(l.n, 3);
    CHECK_STR(l.text[0], "api en=0 cpu=1 wall=1 up=1");
    CHECK_STR(l.text[1], "polled en=0 cpu=0 wall=0 up=0");
    CHECK_STR(l.text[2], "worker en=0 cpu=0 wall=1 up=1");

    memset(&l, 0, sizeof(l));
    CHECK_INT(rt_store_scan_instances(s, NULL, collect_instance, &l, &err), 0);
    CHECK_INT(l.n, 3);
    CHECK_STR(l.text[0], "api/a1 node 22.1 0.1.0 v2 - 1");
    CHECK_STR(l.text[1], "polled/p1 - - - - - 1");
    CHECK_STR(l.text[2], "worker/w1 - - - - - 1");
    memset(&l, 0, sizeof(l));
    CHECK_INT(rt_store_scan_instances(s, "worker", collect_instance, &l, &err), 0);
    CHECK_INT(l.n, 1);
    rt_profile_free(a);
    rt_profile_free(b);
    rt_profile_free(c);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_polls_liveness(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    /* i1 polls every 10 s from T0 to T0+100, then after a 60 s gap from T0+160 to T0+200 */
    for (int t = 0; t <= 100; t += 10)
        CHECK_INT(rt_store_put_poll(s, "svc", "i1", T0 + t * S, &err), 0);
    for (int t = 160; t <= 200; t += 10)
        CHECK_INT(rt_store_put_poll(s, "svc", "i1", T0 + t * S, &err), 0);
    /* i2: one poll; a late out-of-order poll joins its segment */
    CHECK_INT(rt_store_put_poll(s, "svc", "i2", T0 + 50 * S, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "svc", "i2", T0 + 40 * S, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "other", "i1", T0, &err), 0);
    if (!fixture_clickhouse()) /* ClickHouse keeps polls, not segments */
        CHECK_INT(count_rows(dir, "polls"), 4);

    struct alive a = {0};
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0, T0 + 300 * S, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 2);
    CHECK_STR(a.inst[0], "i1");
    CHECK_INT(a.first[0], T0);
    CHECK_INT(a.last[0], T0 + 200 * S);
    CHECK_STR(a.inst[1], "i2");
    CHECK_INT(a.first[1], T0 + 40 * S);
    CHECK_INT(a.last[1], T0 + 50 * S);

    /* clipped to the window: a segment straddling an edge reports the edge */
    memset(&a, 0, sizeof(a));
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 + 45 * S, T0 + 95 * S, collect_alive, &a, &err),
              0);
    CHECK_INT(a.n, 2);
    CHECK_INT(a.first[0], T0 + 45 * S);
    CHECK_INT(a.last[0], T0 + 95 * S - 1);
    CHECK_INT(a.first[1], T0 + 45 * S);
    CHECK_INT(a.last[1], T0 + 50 * S);
    /* in the gap: nobody */
    memset(&a, 0, sizeof(a));
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 + 110 * S, T0 + 150 * S, collect_alive, &a, &err),
              0);
    CHECK_INT(a.n, 0);
    /* half-open: a window ending at the first poll does not contain it */
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 - 60 * S, T0, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 0);
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 - 60 * S, T0 + 1, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 1);
    CHECK_INT(a.first[0], T0);
    CHECK_INT(a.last[0], T0);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* The stretch follows the poll interval each poll was told (roottrace serve --poll-interval,
 * 1-600 s): at 60 s, polls 60 s apart are one stretch to the window's edges. With the gap a
 * constant 30 s, i60 read 60..240 of [30, 270) and the window between two polls read nobody
 * (issue #15). */
static void test_liveness_follows_the_poll_interval(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    struct rt_poll polls[12];
    for (int k = 0; k < 6; k++) {
        /* i60 is told 60 s and polls every 60 s; i10 is told 10 s but polls every 60 s */
        polls[2 * k] = (struct rt_poll){.service = "svc", .instance = "i60",
                                        .poll_interval_s = 60, .at_ns = T0 + 60 * k * S};
        polls[2 * k + 1] = (struct rt_poll){.service = "svc", .instance = "i10",
                                            .poll_interval_s = 10, .at_ns = T0 + 60 * k * S};
    }
    CHECK_INT(rt_store_put_polls(s, polls, 12, &err), 0);
    if (!fixture_clickhouse()) /* one segment for i60, one per poll for i10 */
        CHECK_INT(count_rows(dir, "polls"), 7);

    struct alive a = {0};
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 + 30 * S, T0 + 270 * S, collect_alive, &a, &err),
              0);
    CHECK_INT(a.n, 2);
    CHECK_STR(a.inst[0], "i10");
    CHECK_INT(a.first[0], T0 + 60 * S);
    CHECK_INT(a.last[0], T0 + 240 * S);
    CHECK_STR(a.inst[1], "i60");
    CHECK_INT(a.first[1], T0 + 30 * S);
    CHECK_INT(a.last[1], T0 + 270 * S - 1);
    /* a window between two polls: i60 alive throughout, i10 not seen */
    memset(&a, 0, sizeof(a));
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 + 70 * S, T0 + 110 * S, collect_alive, &a, &err),
              0);
    CHECK_INT(a.n, 1);
    CHECK_STR(a.inst[0], "i60");
    CHECK_INT(a.first[0], T0 + 70 * S);
    CHECK_INT(a.last[0], T0 + 110 * S - 1);
    /* the rule itself: three intervals, the default for an unknown one, capped at the longest */
    CHECK_INT(rt_store_poll_gap_ns(60), 180 * S);
    CHECK_INT(rt_store_poll_gap_ns(0), 30 * S);
    CHECK_INT(rt_store_poll_gap_ns(100000), 3 * RT_POLL_INTERVAL_MAX_S * S);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_retention(void)
{
    SKIP_ON_CLICKHOUSE("ClickHouse retains by month partition (test_retention_months)");
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    for (int i = 0; i < 10; i++) {
        struct rt_profile *p = sample_profile("svc", "i", NULL, T0 + i * 10 * S, 10 * S);
        CHECK_INT(fixture_put(s, p, NULL), 0);
        rt_profile_free(p);
    }
    struct rt_profile *u = sample_profile("svc", "i", NULL, T0 + 45 * S, -1);
    CHECK_INT(fixture_put(s, u, NULL), 0);
    rt_profile_free(u);
    CHECK_INT(rt_store_put_poll(s, "svc", "i", T0, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "svc", "i", T0 + 100 * S, &err), 0);
    CHECK_INT(rt_store_profile_count(s), 11);

    int64_t deleted = -1;
    /* profiles [T0, T0+50) end at or before T0+50: 5 deleted; the unknown one at T0+45 too */
    CHECK_INT(rt_store_retain(s, T0 + 50 * S, &deleted, &err), 0);
    CHECK_INT(deleted, 6);
    CHECK_INT(rt_store_profile_count(s), 5);
    CHECK_INT(count_rows(dir, "profiles"), 5);
    CHECK_INT(count_rows(dir, "polls"), 1);
    struct got g;
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 200 * S, NULL, NULL, &g), 5);
    CHECK_INT(g.p[0].time_ns, T0 + 50 * S);
    /* stacks stay resolvable */
    CHECK(find_row(&g.p[0], "main;handle;parse") != NULL);
    CHECK_INT(rt_store_retain(s, T0 + 50 * S, NULL, &err), 0);
    CHECK_INT(rt_store_profile_count(s), 5);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_retention_batches(void)
{
    SKIP_ON_CLICKHOUSE("ClickHouse retains by month partition (test_retention_months)");
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    enum { N = RT__SQLITE_RETAIN_BATCH + 500 };
    struct rt_profile **ps = calloc(N, sizeof(*ps));
    struct rt_store_put_result *res = calloc(N, sizeof(*res));
    for (int i = 0; i < N; i++) {
        ps[i] = fixture_profile(RT_PTYPE_CPU, "svc", "i", NULL, NULL, T0 + i * S, S);
        fixture_add(ps[i], "a;b", 1, 1);
    }
    CHECK_INT(rt_store_put_profiles(s, ps, N, res, &err), 0);
    CHECK_INT(rt_store_profile_count(s), N);
    int64_t deleted = 0;
    CHECK_INT(rt_store_retain(s, T0 + (N - 100) * S, &deleted, &err), 0);
    CHECK_INT(deleted, N - 100);
    CHECK_INT(rt_store_profile_count(s), 100);
    CHECK_INT(count_rows(dir, "profiles"), 100);
    for (int i = 0; i < N; i++)
        rt_profile_free(ps[i]);
    free(ps);
    free(res);
    rt_store_free(s);
    fixture_rmdir(dir);
}

int main(void)
{
    RUN(test_deploys);
    RUN(test_issues);
    RUN(test_alert_issues);
    RUN(test_services_instances);
    RUN(test_polls_liveness);
    RUN(test_liveness_follows_the_poll_interval);
    RUN(test_retention);
    RUN(test_retention_batches);
    return TEST_DONE();
}
