/* `roottrace health`, `issue` and `deploy`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

static void issue_line(json_t *i)
{
    printf("issue %s  %s  started %s  %s\n", json_string_value(json_object_get(i, "id")),
           json_string_value(json_object_get(i, "service")),
           json_string_value(json_object_get(i, "started_at")),
           json_string_value(json_object_get(i, "title")));
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
    if (argc < 1 || rt__cli_parse(&c, argc - 1, argv + 1, "service title at !json"))
        goto usage;
    struct rt_api_resp resp;
    if (strcmp(argv[0], "list") == 0) {
        struct rt_api_param p = {"service", rt__cli_opt(&c, "service", NULL)};
        rt__cli_call(&c, "GET", "/api/v1/issues", &p, p.value ? 1 : 0, NULL, 0, NULL, &resp);
        return rt__cli_finish(&c, &resp, issue_line);
    }
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
                    "       roottrace issue list [--service S] [--json]\n"
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
