/* `roottrace key` and `roottrace profiling`: API keys and the per-service toggle, through
 * the same handlers as /api/v1/keys and PUT /api/v1/services/{name}/profiling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *s_or(json_t *o, const char *k, const char *def)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : def;
}

static void key_line(json_t *k)
{
    printf("key %s  %-6s  service %s  name %s  created %s%s%s\n", s_or(k, "id", "?"),
           s_or(k, "scope", "?"), s_or(k, "service", "*"), s_or(k, "name", "-"),
           s_or(k, "created_at", "?"), json_is_string(json_object_get(k, "revoked_at"))
                                           ? "  revoked "
                                           : "",
           s_or(k, "revoked_at", ""));
    const char *secret = s_or(k, "key", NULL);
    if (secret)
        printf("\n    %s\n\nThe key is shown once; it is stored only as a hash.\n", secret);
}

int rt__cli_key(int argc, char **argv)
{
    struct cli c;
    struct rt_api_resp resp;
    if (argc < 1 || rt__cli_parse(&c, argc - 1, argv + 1, "scope service name !json"))
        goto usage;
    if (strcmp(argv[0], "list") == 0) {
        rt__cli_call(&c, "GET", "/api/v1/keys", NULL, 0, NULL, 0, NULL, &resp);
        return rt__cli_finish(&c, &resp, key_line);
    }
    if (strcmp(argv[0], "create") == 0 && rt__cli_has(&c, "scope")) {
        json_t *o = json_pack("{s:s}", "scope", rt__cli_opt(&c, "scope", ""));
        if (rt__cli_has(&c, "service"))
            json_object_set_new(o, "service", json_string(rt__cli_opt(&c, "service", "")));
        if (rt__cli_has(&c, "name"))
            json_object_set_new(o, "name", json_string(rt__cli_opt(&c, "name", "")));
        char *body = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        rt__cli_call(&c, "POST", "/api/v1/keys", NULL, 0, body, strlen(body),
                     "application/json", &resp);
        free(body);
        return rt__cli_finish(&c, &resp, key_line);
    }
    if (strcmp(argv[0], "revoke") == 0 && c.npos == 1) {
        char path[96];
        snprintf(path, sizeof(path), "/api/v1/keys/%.40s", c.pos[0]);
        rt__cli_call(&c, "DELETE", path, NULL, 0, NULL, 0, NULL, &resp);
        int rc = rt__cli_check(&resp);
        if (!rc)
            printf("key %s revoked\n", c.pos[0]);
        rt_api_resp_cleanup(&resp);
        rt__cli_cleanup(&c);
        return rc;
    }
usage:
    fprintf(stderr, "usage: roottrace key create --scope admin|read|ingest [--service S] "
                    "[--name N] [--json]\n"
                    "       roottrace key list [--json]\n"
                    "       roottrace key revoke ID\n"
                    "       (each with [--data DIR | --server URL])\n");
    return 2;
}

static void profiling_line(json_t *o)
{
    printf("service %s: profiling %s\n", s_or(o, "name", "?"),
           json_is_true(json_object_get(o, "profiling_enabled")) ? "on" : "off");
}

int rt__cli_profiling(int argc, char **argv)
{
    struct cli c;
    if (argc < 1 || (strcmp(argv[0], "on") && strcmp(argv[0], "off")) ||
        rt__cli_parse(&c, argc - 1, argv + 1,
                      "service type sampling-interval-us upload-interval-s !json") ||
        !rt__cli_has(&c, "service")) {
        fprintf(stderr, "usage: roottrace profiling on|off --service S [--type cpu|wall] "
                        "[--sampling-interval-us N] [--upload-interval-s N] [--json] "
                        "[--data DIR | --server URL]\n");
        return 2;
    }
    json_t *o = json_pack("{s:b}", "enabled", strcmp(argv[0], "on") == 0);
    if (rt__cli_has(&c, "type"))
        json_object_set_new(o, "type", json_string(rt__cli_opt(&c, "type", "")));
    if (rt__cli_has(&c, "sampling-interval-us"))
        json_object_set_new(o, "sampling_interval_us",
                            json_integer(atoll(rt__cli_opt(&c, "sampling-interval-us", "0"))));
    if (rt__cli_has(&c, "upload-interval-s"))
        json_object_set_new(o, "upload_interval_s",
                            json_integer(atoll(rt__cli_opt(&c, "upload-interval-s", "0"))));
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char path[300];
    snprintf(path, sizeof(path), "/api/v1/services/%.200s/profiling",
             rt__cli_opt(&c, "service", ""));
    struct rt_api_resp resp;
    rt__cli_call(&c, "PUT", path, NULL, 0, body, strlen(body), "application/json", &resp);
    free(body);
    return rt__cli_finish(&c, &resp, profiling_line);
}
