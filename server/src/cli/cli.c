/* Argument parsing and the local/remote transport shared by the subcommands. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt/buf.h"

int rt__cli_parse(struct cli *c, int argc, char **argv, const char *const *flags)
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
        bool is_flag = false;
        for (size_t f = 0; flags && flags[f]; f++)
            is_flag |= strcmp(flags[f], key) == 0;
        c->keys[c->nkeys] = key;
        if (eq) {
            /* --key=value: keep the key's text up to '=' by copying it into argv itself. */
            argv[i][eq - argv[i]] = '\0';
            c->vals[c->nkeys] = eq + 1;
        } else if (is_flag) {
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
    c->data = rt__cli_opt(c, "data", "./roottrace-data");
    c->json = rt__cli_has(c, "json");
    return 0;
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
    rt_buf_puts(&url, path);
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
        c->store = rt_store_open(c->data, &err);
        if (!c->store) {
            fprintf(stderr, "roottrace: cannot open the store in %s: %s\n", c->data, err.msg);
            memset(resp, 0, sizeof(*resp));
            return;
        }
        rt_api_ctx_init(&c->api, c->store);
        c->api.data_dir = c->data;
    }
    struct rt_api_req req = {method, path, params, nparams, content_type, body, body_len};
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
