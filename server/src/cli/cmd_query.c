/* `roottrace top`, `diff` and `export`: the query routes from the command line. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Copies the options named in keys (CLI spelling) into API parameters (API spelling). */
static size_t pass_opts(const struct cli *c, const char *const (*map)[2], size_t nmap,
                        struct rt_api_param *params)
{
    size_t n = 0;
    for (size_t i = 0; i < nmap; i++) {
        const char *v = rt__cli_opt(c, map[i][0], NULL);
        if (v)
            params[n++] = (struct rt_api_param){map[i][1], v};
    }
    return n;
}

/* Runs one query and prints its answer as JSON or through render. */
static int run_query(struct cli *c, const char *path, const struct rt_api_param *params,
                     size_t np, void (*render)(json_t *))
{
    struct rt_api_resp resp;
    rt__cli_call(c, "GET", path, params, np, NULL, 0, NULL, &resp);
    int rc = rt__cli_check(&resp);
    if (!rc && resp.json) {
        if (c->json)
            rt__cli_print_json(resp.json);
        else
            render(resp.json);
    }
    rt_api_resp_cleanup(&resp);
    rt__cli_cleanup(c);
    return rc;
}

int rt__cli_top(int argc, char **argv)
{
    static const char *const map[][2] = {{"service", "service"}, {"type", "type"},
                                         {"from", "from"},       {"to", "to"},
                                         {"limit", "limit"},     {"version", "version"},
                                         {"instance", "instance"}};
    struct cli c;
    if (rt__cli_parse(&c, argc, argv, "service type from to limit version instance !json"))
        return 2;
    if (!rt__cli_has(&c, "service") || !rt__cli_has(&c, "type")) {
        fprintf(stderr, "usage: roottrace top --service S --type cpu|wall [--from T --to T] "
                        "[--limit N] [--json] [--data DIR | --server URL]\n");
        return 2;
    }
    struct rt_api_param params[8];
    size_t np = pass_opts(&c, map, sizeof(map) / sizeof(map[0]), params);
    return run_query(&c, "/api/v1/profile", params, np, rt__cli_render_profile);
}

int rt__cli_diff(int argc, char **argv)
{
    static const char *const map[][2] = {
        {"service", "service"},   {"type", "type"},         {"at", "at"},
        {"window", "window_s"},   {"limit", "limit"},       {"version", "version"},
        {"instance", "instance"}, {"base-from", "base_from"}, {"base-to", "base_to"},
        {"cur-from", "cur_from"}, {"cur-to", "cur_to"},     {"base-version", "base_version"},
        {"cur-version", "cur_version"}};
    struct cli c;
    if (rt__cli_parse(&c, argc, argv,
                      "service type at window limit version instance base-from base-to "
                      "cur-from cur-to base-version cur-version issue !json"))
        return 2;
    const char *issue = rt__cli_opt(&c, "issue", NULL);
    if (!issue && (!rt__cli_has(&c, "service") || !rt__cli_has(&c, "type"))) {
        fprintf(stderr,
                "usage: roottrace diff --service S --type cpu|wall --at TIME [--window 10m]\n"
                "       roottrace diff --service S --type T --base-from T --base-to T "
                "--cur-from T --cur-to T\n"
                "       roottrace diff --issue ID [--type T] [--window 10m]\n"
                "       (each with [--json] [--data DIR | --server URL])\n");
        return 2;
    }
    struct rt_api_param params[16];
    size_t np = pass_opts(&c, map, sizeof(map) / sizeof(map[0]), params);
    char path[64];
    if (issue)
        snprintf(path, sizeof(path), "/api/v1/issues/%s/diff", issue);
    return run_query(&c, issue ? path : "/api/v1/diff", params, np, rt__cli_render_diff);
}

int rt__cli_export(int argc, char **argv)
{
    static const char *const map[][2] = {{"service", "service"}, {"type", "type"},
                                         {"from", "from"},       {"to", "to"},
                                         {"format", "format"},   {"version", "version"},
                                         {"instance", "instance"}};
    struct cli c;
    if (rt__cli_parse(&c, argc, argv, "service type from to format version instance output"))
        return 2;
    if (!rt__cli_has(&c, "service") || !rt__cli_has(&c, "type")) {
        fprintf(stderr, "usage: roottrace export --service S --type cpu|wall --from T --to T "
                        "--format pprof|folded|speedscope [--output FILE] "
                        "[--data DIR | --server URL]\n");
        return 2;
    }
    struct rt_api_param params[8];
    size_t np = pass_opts(&c, map, sizeof(map) / sizeof(map[0]), params);
    struct rt_api_resp resp;
    rt__cli_call(&c, "GET", "/api/v1/export", params, np, NULL, 0, NULL, &resp);
    int rc = rt__cli_check(&resp);
    if (!rc) {
        const char *out = rt__cli_opt(&c, "output", NULL);
        FILE *f = out ? fopen(out, "wb") : stdout;
        if (!f || fwrite(resp.raw, 1, resp.raw_len, f) != resp.raw_len) {
            fprintf(stderr, "roottrace: cannot write %s\n", out ? out : "stdout");
            rc = 1;
        }
        if (f && f != stdout)
            fclose(f);
    }
    rt_api_resp_cleanup(&resp);
    rt__cli_cleanup(&c);
    return rc;
}
