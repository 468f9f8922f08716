/* `roottrace ingest FILE... --service S [--type T] [--at TIME]`: uploads profile files
 * through the same handler as POST /api/v1/profiles, locally or to --server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt/buf.h"

#define MAX_FILE_BYTES (256u << 20)

static int read_file(const char *path, struct rt_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if ((rc = rt_buf_append(out, chunk, n)) != 0)
            break;
    if (ferror(f))
        rc = -1;
    fclose(f);
    return rc;
}

/* Is this file folded stacks (text) rather than pprof? By --format, else by its name. */
static bool is_folded(const struct cli *c, const char *path)
{
    const char *fmt = rt__cli_opt(c, "format", NULL);
    if (fmt)
        return strcmp(fmt, "folded") == 0;
    const char *dot = strrchr(path, '.');
    return dot && (strcmp(dot, ".txt") == 0 || strcmp(dot, ".folded") == 0 ||
                   strcmp(dot, ".collapsed") == 0);
}

static int ingest_one(struct cli *c, const char *path)
{
    static const char *const pass[] = {"service", "type", "instance", "version", "unit",
                                       "period_ns", "profile_id", "runtime", NULL};
    struct rt_api_param params[16];
    size_t np = 0;
    for (size_t i = 0; pass[i]; i++) {
        const char *v = rt__cli_opt(c, pass[i], NULL);
        if (v)
            params[np++] = (struct rt_api_param){pass[i], v};
    }
    const char *at = rt__cli_opt(c, "at", NULL), *dur = rt__cli_opt(c, "duration", NULL);
    if (at)
        params[np++] = (struct rt_api_param){"start", at};
    if (dur)
        params[np++] = (struct rt_api_param){"duration_s", dur};

    struct rt_buf body;
    rt_buf_init(&body, MAX_FILE_BYTES);
    if (read_file(path, &body)) {
        fprintf(stderr, "roottrace: cannot read %s\n", path);
        rt_buf_cleanup(&body);
        return 1;
    }
    struct rt_api_resp resp;
    rt__cli_call(c, "POST", "/api/v1/profiles", params, np, body.data ? body.data : "",
                 body.len, is_folded(c, path) ? "text/plain" : "application/octet-stream",
                 &resp);
    rt_buf_cleanup(&body);
    int rc = 0;
    if (resp.status >= 200 && resp.status < 300 && resp.json) {
        if (c->json)
            rt__cli_print_json(resp.json);
        else
            printf("%s: stored as profile %s (%s, %.0f samples%s)\n", path,
                   json_string_value(json_object_get(resp.json, "id")),
                   json_string_value(json_object_get(resp.json, "type")),
                   json_number_value(json_object_get(resp.json, "samples")),
                   json_is_true(json_object_get(resp.json, "duplicate")) ? ", already stored"
                                                                         : "");
    } else {
        fprintf(stderr, "%s: ", path);
        rc = rt__cli_check(&resp) ? 1 : 0;
    }
    rt_api_resp_cleanup(&resp);
    return rc;
}

int rt__cli_ingest(int argc, char **argv)
{
    struct cli c;
    if (rt__cli_parse(&c, argc, argv,
                      "service type instance version unit period_ns profile_id runtime at "
                      "duration format !json"))
        return 2;
    if (!c.npos || !rt__cli_opt(&c, "service", NULL)) {
        fprintf(stderr, "usage: roottrace ingest FILE... --service S [--type cpu|wall] "
                        "[--at TIME] [--duration 60s] [--instance I] [--version V] "
                        "[--unit samples|nanoseconds --period_ns N] [--data DIR | --server URL]\n");
        return 2;
    }
    int failed = 0;
    for (size_t i = 0; i < c.npos; i++)
        failed += ingest_one(&c, c.pos[i]);
    rt__cli_cleanup(&c);
    return failed ? 1 : 0;
}
