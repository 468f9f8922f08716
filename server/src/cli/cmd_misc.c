/* `roottrace health`, `issue` and `deploy`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt/timeutil.h"

int rt__cli_health(int argc, char **argv)
{
    struct cli c;
    if (rt__cli_parse(&c, argc, argv, "url !json"))
        return 2;
    c.server = rt__cli_opt(&c, "url", c.server ? c.server : "http://127.0.0.1:4040");
    struct rt_api_resp resp;
    rt__cli_call(&c, "GET", "/healthz", NULL, 0, NULL, 0, NULL, &resp);
    int rc = resp.status == 200 ? 0 : 1;
    printf("%s: %s\n", c.server, rc ? "unhealthy" : "ok");
    rt_api_resp_cleanup(&resp);
    return rc;
}

/* "issue 3  checkout  started T [ended T]  [alertmanager: HighLatency firing]  title". */
static void issue_line(json_t *i)
{
    const char *ended = json_string_value(json_object_get(i, "ended_at"));
    const char *source = json_string_value(json_object_get(i, "source"));
    json_t *alert = json_object_get(i, "alert");
    printf("issue %s  %s  started %s", json_string_value(json_object_get(i, "id")),
           json_string_value(json_object_get(i, "service")),
           json_string_value(json_object_get(i, "started_at")));
    if (ended)
        printf("  ended %s", ended);
    if (json_is_object(alert))
        printf("  [opened by %s alert %s, %s, %lld notification(s)]", source,
               json_string_value(json_object_get(alert, "fingerprint")),
               json_string_value(json_object_get(alert, "status")),
               (long long)json_integer_value(json_object_get(alert, "notifications")));
    printf("  %s\n", json_string_value(json_object_get(i, "title")));
    const char *url = json_is_object(alert)
                          ? json_string_value(json_object_get(alert, "generator_url"))
                          : NULL;
    if (url)
        printf("    alert source: %s\n", url);
}

/* show ID, end ID [--at TIME | --reopen]. */
static int issue_one(struct cli *c, const char *verb)
{
    char path[96];
    struct rt_api_resp resp;
    snprintf(path, sizeof(path), "/api/v1/issues/%.40s", c->pos[0]);
    if (strcmp(verb, "show") == 0) {
        rt__cli_call(c, "GET", path, NULL, 0, NULL, 0, NULL, &resp);
        return rt__cli_finish(c, &resp, issue_line);
    }
    /* the end: --at TIME, else now (Unix seconds); --reopen: none */
    json_t *b = json_object();
    json_object_set_new(b, "ended_at",
                        rt__cli_has(c, "reopen") ? json_null()
                        : rt__cli_has(c, "at")   ? json_string(rt__cli_opt(c, "at", NULL))
                                                 : json_integer(rt_time_now_ns() / RT_NS_PER_S));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    rt__cli_call(c, "PATCH", path, NULL, 0, body, body ? strlen(body) : 0, "application/json",
                 &resp);
    free(body);
    return rt__cli_finish(c, &resp, issue_line);
}

static void deploy_line(json_t *d)
{
    printf("deploy %s  %s  at %s  (%s)\n", json_string_value(json_object_get(d, "service")),
           json_string_value(json_object_get(d, "version")),
           json_string_value(json_object_get(d, "at")),
           json_string_value(json_object_get(d, "source")));
}

/* Builds {"service", key: value...} from options; "at"-like values stay strings. */
static char *body_of(const struct cli *c, const char *const *keys, const char *const *api)
{
    json_t *o = json_object();
    for (size_t i = 0; keys[i]; i++) {
        const char *v = rt__cli_opt(c, keys[i], NULL);
        if (v)
            json_object_set_new(o, api[i], json_string(v));
    }
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

int rt__cli_issue(int argc, char **argv)
{
    struct cli c;
    if (argc < 1 || rt__cli_parse(&c, argc - 1, argv + 1, "service title at state !reopen !json"))
        goto usage;
    struct rt_api_resp resp;
    if (strcmp(argv[0], "list") == 0) {
        struct rt_api_param p[2];
        size_t n = 0;
        if (rt__cli_has(&c, "service"))
            p[n++] = (struct rt_api_param){"service", rt__cli_opt(&c, "service", NULL)};
        if (rt__cli_has(&c, "state"))
            p[n++] = (struct rt_api_param){"state", rt__cli_opt(&c, "state", NULL)};
        rt__cli_call(&c, "GET", "/api/v1/issues", p, n, NULL, 0, NULL, &resp);
        return rt__cli_finish(&c, &resp, issue_line);
    }
    if ((strcmp(argv[0], "show") == 0 || strcmp(argv[0], "end") == 0) && c.npos == 1)
        return issue_one(&c, argv[0]);
    if (strcmp(argv[0], "create") == 0 && rt__cli_has(&c, "service") && rt__cli_has(&c, "at")) {
        static const char *const keys[] = {"service", "title", "at", NULL};
        static const char *const api[] = {"service", "title", "started_at", NULL};
        char *body = body_of(&c, keys, api);
        rt__cli_call(&c, "POST", "/api/v1/issues", NULL, 0, body, strlen(body),
                     "application/json", &resp);
        free(body);
        return rt__cli_finish(&c, &resp, issue_line);
    }
usage:
    fprintf(stderr, "usage: roottrace issue create --service S --at TIME [--title T] [--json]\n"
                    "       roottrace issue list [--service S] [--state open|ended] [--json]\n"
                    "       roottrace issue show ID [--json]\n"
                    "       roottrace issue end ID [--at TIME | --reopen] [--json]\n"
                    "       (each with [--data DIR | --server URL])\n");
    return 2;
}

int rt__cli_deploy(int argc, char **argv)
{
    struct cli c;
    if (rt__cli_parse(&c, argc, argv, "service version at !json"))
        return 2;
    if (!rt__cli_has(&c, "service") || !rt__cli_has(&c, "version")) {
        fprintf(stderr, "usage: roottrace deploy --service S --version V [--at TIME] [--json] "
                        "[--data DIR | --server URL]\n");
        return 2;
    }
    static const char *const keys[] = {"service", "version", "at", NULL};
    char *body = body_of(&c, keys, keys);
    struct rt_api_resp resp;
    rt__cli_call(&c, "POST", "/api/v1/deploys", NULL, 0, body, strlen(body), "application/json",
                 &resp);
    free(body);
    return rt__cli_finish(&c, &resp, deploy_line);
}
