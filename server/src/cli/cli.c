/* Argument parsing and the local/remote transport shared by the subcommands. */
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "rt/buf.h"

/* Finds name in spec ("service type !json": '!' marks a flag without a value). Returns 1 for
 * an option with a value, 2 for a flag, 0 if spec does not name it. */
static int spec_kind(const char *spec, const char *name, size_t len)
{
    for (const char *p = spec; *p;) {
        p += strspn(p, " ");
        bool flag = *p == '!';
        p += flag;
        size_t n = strcspn(p, " ");
        if (n == len && strncmp(p, name, len) == 0)
            return flag ? 2 : 1;
        p += n;
    }
    return 0;
}

int rt__cli_parse(struct cli *c, int argc, char **argv, const char *spec)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (c->npos == CLI_MAX_ARGS)
                return -1;
            c->pos[c->npos++] = a;
            continue;
        }
        if (c->nkeys == CLI_MAX_ARGS)
            return -1;
        const char *key = a + 2, *eq = strchr(key, '=');
        size_t klen = eq ? (size_t)(eq - key) : strlen(key);
        int kind = spec_kind("server data store", key, klen);
        if (!kind)
            kind = spec_kind(spec ? spec : "", key, klen);
        if (!kind) {
            fprintf(stderr, "roottrace: unknown option --%.*s; this command takes", (int)klen,
                    key);
            for (const char *p = spec ? spec : ""; *p;) {
                p += strspn(p, " !");
                size_t n = strcspn(p, " ");
                if (n)
                    fprintf(stderr, " --%.*s", (int)n, p);
                p += n;
            }
            fprintf(stderr, " --server --data --store\n");
            return -1;
        }
        c->keys[c->nkeys] = key;
        if (eq) {
            /* --key=value: end the key's text at '=' in argv itself. */
            argv[i][eq - argv[i]] = '\0';
            c->vals[c->nkeys] = eq + 1;
        } else if (kind == 2) {
            c->vals[c->nkeys] = NULL;
        } else if (i + 1 < argc) {
            c->vals[c->nkeys] = argv[++i];
        } else {
            fprintf(stderr, "roottrace: --%s needs a value\n", key);
            return -1;
        }
        c->nkeys++;
    }
    c->server = rt__cli_opt(c, "server", NULL);
    /* --store URI (sqlite:PATH, clickhouse:http://HOST:PORT/DB) names the store itself; a
     * non-empty ROOTTRACE_STORE does the same when --store is absent (Compose sets it) */
    const char *env_store = getenv("ROOTTRACE_STORE");
    if (env_store && !*env_store)
        env_store = NULL;
    c->data = rt__cli_opt(c, "store", env_store ? env_store
                                                : rt__cli_opt(c, "data", "./roottrace-data"));
    c->json = rt__cli_has(c, "json");
    return 0;
}

bool rt__cli_wants_help(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "help") == 0)
        return true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return true;
        /* "--key value": skip the value, as rt__cli_parse takes it */
        if (strncmp(a, "--", 2) == 0 && a[2] && !strchr(a, '=') && strcmp(a, "--json") != 0)
            i++;
    }
    return false;
}

const char *rt__cli_opt(const struct cli *c, const char *key, const char *def)
{
    for (size_t i = 0; i < c->nkeys; i++)
        if (strcmp(c->keys[i], key) == 0)
            return c->vals[i] ? c->vals[i] : def;
    return def;
}

bool rt__cli_has(const struct cli *c, const char *key)
{
    for (size_t i = 0; i < c->nkeys; i++)
        if (strcmp(c->keys[i], key) == 0)
            return true;
    return false;
}

void rt__cli_cleanup(struct cli *c)
{
    rt_control_free(c->control);
    c->control = NULL;
    rt_store_free(c->store);
    c->store = NULL;
}

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
    return rt_buf_append(ud, ptr, size * n) == 0 ? size * n : 0;
}

/* Appends "?k=v&..." (URL-escaped) to url. */
static void append_query(CURL *curl, struct rt_buf *url, const struct rt_api_param *params,
                         size_t nparams)
{
    for (size_t i = 0; i < nparams; i++) {
        char *k = curl_easy_escape(curl, params[i].key, 0);
        char *v = curl_easy_escape(curl, params[i].value, 0);
        rt_buf_printf(url, "%c%s=%s", i ? '&' : '?', k, v);
        curl_free(k);
        curl_free(v);
    }
}

static void call_remote(struct cli *c, const char *method, const char *path,
                        const struct rt_api_param *params, size_t nparams, const void *body,
                        size_t body_len, const char *content_type, struct rt_api_resp *resp)
{
    CURL *curl = curl_easy_init();
    struct rt_buf url, out;
    struct curl_slist *hdrs = NULL;
    char hdr[512];
    rt_buf_init(&url, 0);
    rt_buf_init(&out, 512u << 20);
    size_t blen = strlen(c->server);
    rt_buf_append(&url, c->server, blen && c->server[blen - 1] == '/' ? blen - 1 : blen);
    /* The path's segments may hold service names: escape all but the separators. */
    for (const char *p = path; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isalnum(ch) || strchr("/._~-", ch))
            rt_buf_append(&url, p, 1);
        else
            rt_buf_printf(&url, "%%%02X", ch);
    }
    append_query(curl, &url, params, nparams);
    const char *token = getenv("ROOTTRACE_TOKEN");
    if (token && *token) {
        snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, hdr);
    }
    if (content_type) {
        snprintf(hdr, sizeof(hdr), "Content-Type: %s", content_type);
        hdrs = curl_slist_append(hdrs, hdr);
    }
    curl_easy_setopt(curl, CURLOPT_URL, url.data);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 300L);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    CURLcode cc = curl_easy_perform(curl);
    memset(resp, 0, sizeof(*resp));
    if (cc != CURLE_OK) {
        fprintf(stderr, "roottrace: %s: %s\n", url.data, curl_easy_strerror(cc));
    } else {
        long status = 0;
        char *ctype = NULL;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ctype);
        resp->status = (int)status;
        /* Keep the bytes as they came (export writes them) and the parsed JSON beside them. */
        if (ctype && strncmp(ctype, "application/json", 16) == 0)
            resp->json = json_loadb(out.data ? out.data : "", out.len, 0, NULL);
        resp->raw_len = out.len;
        resp->raw = rt_buf_into_cstr(&out);
    }
    rt_buf_cleanup(&out);
    rt_buf_cleanup(&url);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);
}

void rt__cli_call(struct cli *c, const char *method, const char *path,
                  const struct rt_api_param *params, size_t nparams, const void *body,
                  size_t body_len, const char *content_type, struct rt_api_resp *resp)
{
    if (c->server) {
        call_remote(c, method, path, params, nparams, body, body_len, content_type, resp);
        return;
    }
    if (!c->store) {
        struct rt_error err = {0};
        struct stat st;
        if (strcmp(method, "GET") == 0 && !rt_store_uri_is_remote(c->data) &&
            stat(c->data, &st) != 0) {
            fprintf(stderr, "roottrace: no data directory at %s: pass --data DIR (where the "
                            "server keeps its data) or --server URL\n", c->data);
            memset(resp, 0, sizeof(*resp));
            return;
        }
        c->store = rt_store_open(c->data, &err);
        if (!c->store) {
            char where[1024];
            rt_store_uri_redacted(c->data, where, sizeof(where));
            fprintf(stderr, "roottrace: cannot open the store in %s: %s\n", where, err.msg);
            memset(resp, 0, sizeof(*resp));
            return;
        }
        c->control = rt_control_new(c->store, 10, &err);
        if (!c->control) {
            fprintf(stderr, "roottrace: %s\n", err.msg);
            memset(resp, 0, sizeof(*resp));
            return;
        }
        rt_api_ctx_init(&c->api, c->store, c->control);
        c->api.data_dir = rt_store_uri_is_remote(c->data) ? NULL : c->data;
        c->api.trusted = true;
    }
    struct rt_api_req req = {.method = method, .path = path, .params = params,
                             .nparams = nparams, .content_type = content_type, .body = body,
                             .body_len = body_len, .no_hold = true};
    rt_api_dispatch(&c->api, &req, resp);
}

int rt__cli_check(const struct rt_api_resp *resp)
{
    if (resp->status >= 200 && resp->status < 300)
        return 0;
    if (resp->status == 0)
        return 1;
    const char *msg = resp->json ? json_string_value(json_object_get(resp->json, "message"))
                                 : resp->raw;
    fprintf(stderr, "roottrace: %d %s\n", resp->status, msg ? msg : "(no message)");
    return 1;
}

void rt__cli_print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s)
        puts(s);
    free(s);
}

int rt__cli_finish(struct cli *c, struct rt_api_resp *resp, void (*line)(json_t *))
{
    int rc = rt__cli_check(resp);
    if (!rc && resp->json) {
        if (c->json) {
            rt__cli_print_json(resp->json);
        } else if (json_is_array(resp->json)) {
            size_t i;
            json_t *v;
            json_array_foreach(resp->json, i, v) line(v);
        } else {
            line(resp->json);
        }
    }
    rt_api_resp_cleanup(resp);
    rt__cli_cleanup(c);
    return rc;
}
