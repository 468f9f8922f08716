/* multipart/form-data bodies (RFC 7578, RFC 2046 §5.1.1), as Pyroscope's agents send their
 * profiles to /ingest: the parts' names, file names, content types and bytes, borrowed from
 * the body. */
#include <string.h>
#include <strings.h>

#include "rt/ingest.h"

/* RFC 2046: a boundary is 1 to 70 characters. */
#define MAX_BOUNDARY 70

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* The value of parameter name (case-insensitive) in a header value such as
 * `form-data; name="profile"; filename="x"` or `multipart/form-data; boundary=abc`, quoted
 * or not, without quotes; false when absent. A quoted value ends at its closing quote
 * (backslash escapes are taken literally: Go and curl write none in these names). */
static bool header_param(struct rt_str v, const char *name, struct rt_str *out)
{
    size_t n = strlen(name), i = 0;
    while (i < v.len) {
        while (i < v.len && v.ptr[i] != ';')
            i++;
        if (i >= v.len)
            return false;
        i++;
        while (i < v.len && is_ws(v.ptr[i]))
            i++;
        if (v.len - i > n && strncasecmp(v.ptr + i, name, n) == 0 && v.ptr[i + n] == '=') {
            i += n + 1;
            if (i < v.len && v.ptr[i] == '"') {
                const char *end = memchr(v.ptr + i + 1, '"', v.len - i - 1);
                if (!end)
                    return false;
                *out = (struct rt_str){v.ptr + i + 1, (size_t)(end - v.ptr - i - 1)};
                return true;
            }
            size_t j = i;
            while (j < v.len && v.ptr[j] != ';' && !is_ws(v.ptr[j]))
                j++;
            *out = (struct rt_str){v.ptr + i, j - i};
            return true;
        }
    }
    return false;
}

bool rt_ingest_is_multipart(const char *content_type)
{
    return content_type && strncasecmp(content_type, "multipart/form-data", 19) == 0 &&
           (content_type[19] == '\0' || content_type[19] == ';' || is_ws(content_type[19]));
}

/* The first occurrence of needle (n bytes) in hay[0..len), or NULL. */
static const char *find(const char *hay, size_t len, const char *needle, size_t n)
{
    return n <= len ? memmem(hay, len, needle, n) : NULL;
}

/* Reads a part's headers from p[0..len): Content-Disposition's name and filename, and
 * Content-Type. Returns 0 or RT_EMALFORMED. */
static int part_headers(const char *p, size_t len, struct rt_ingest_part *part, size_t index,
                        struct rt_error *err)
{
    bool disposition = false;
    while (len > 0) {
        const char *eol = find(p, len, "\r\n", 2);
        size_t n = eol ? (size_t)(eol - p) : len;
        const char *colon = memchr(p, ':', n);
        if (!colon)
            return rt_error_set(err, RT_EMALFORMED,
                                "multipart part %zu has a header line without a colon", index);
        struct rt_str value = {colon + 1, n - (size_t)(colon + 1 - p)};
        while (value.len && is_ws(*value.ptr))
            value.ptr++, value.len--;
        size_t klen = (size_t)(colon - p);
        if (klen == 19 && strncasecmp(p, "Content-Disposition", 19) == 0) {
            struct rt_str v = value;
            if (v.len < 9 || strncasecmp(v.ptr, "form-data", 9) != 0)
                return rt_error_set(err, RT_EMALFORMED,
                                    "multipart part %zu is not form-data", index);
            disposition = header_param(v, "name", &part->name);
            header_param(v, "filename", &part->filename);
        } else if (klen == 12 && strncasecmp(p, "Content-Type", 12) == 0) {
            part->content_type = value;
        }
        if (!eol)
            break;
        p = eol + 2;
        len -= n + 2;
    }
    if (!disposition)
        return rt_error_set(err, RT_EMALFORMED,
                            "multipart part %zu has no Content-Disposition: form-data; name=",
                            index);
    return 0;
}

int rt_ingest_multipart(const char *content_type, const void *body, size_t len,
                        struct rt_ingest_part *parts, size_t max, size_t *nparts,
                        struct rt_error *err)
{
    struct rt_str b;
    if (!rt_ingest_is_multipart(content_type) ||
        !header_param(rt_str_from(content_type), "boundary", &b) || b.len == 0 ||
        b.len > MAX_BOUNDARY)
        return rt_error_set(err, RT_EMALFORMED,
                            "Content-Type must be multipart/form-data with a boundary of 1 to "
                            "70 characters");
    char delim[MAX_BOUNDARY + 4] = "\r\n--";
    memcpy(delim + 4, b.ptr, b.len);
    size_t dlen = b.len + 4;
    const char *s = body ? body : "", *end = s + len;
    /* the first delimiter may open the body without its CRLF (RFC 2046: a preamble before it
     * is ignored) */
    const char *at = len >= dlen - 2 && memcmp(s, delim + 2, dlen - 2) == 0
                         ? s
                         : find(s, len, delim, dlen);
    if (!at)
        return rt_error_set(err, RT_EMALFORMED, "multipart body has no boundary line");
    at += at == s ? dlen - 2 : dlen;
    size_t n = 0;
    for (;;) {
        if (end - at >= 2 && at[0] == '-' && at[1] == '-') {
            *nparts = n;
            return 0;
        }
        while (at < end && is_ws(*at)) /* transport padding */
            at++;
        if (end - at < 2 || at[0] != '\r' || at[1] != '\n')
            return rt_error_set(err, RT_EMALFORMED,
                                "multipart boundary line %zu is not followed by CRLF", n + 1);
        at += 2;
        if (n == max)
            return rt_error_set(err, RT_ETOOBIG, "multipart body has more than %zu parts", max);
        const char *hend = find(at, (size_t)(end - at), "\r\n\r\n", 4);
        const char *next = find(at, (size_t)(end - at), delim, dlen);
        if (!next)
            return rt_error_set(err, RT_EMALFORMED,
                                "multipart part %zu is not closed by a boundary (truncated "
                                "body?)", n + 1);
        struct rt_ingest_part *part = &parts[n];
        memset(part, 0, sizeof(*part));
        if (!hend || hend > next) /* a part without headers has no name either */
            return rt_error_set(err, RT_EMALFORMED,
                                "multipart part %zu has no headers (Content-Disposition: "
                                "form-data; name=...) ended by a blank line", n + 1);
        int rc = part_headers(at, (size_t)(hend - at), part, n + 1, err);
        if (rc)
            return rc;
        /* an empty part may end its headers with the delimiter's own CRLF */
        part->data = (const uint8_t *)(hend + 4 <= next ? hend + 4 : next);
        part->len = (size_t)(next - (const char *)part->data);
        n++;
        at = next + dlen;
    }
}

const struct rt_ingest_part *rt_ingest_part_named(const struct rt_ingest_part *parts, size_t n,
                                                  const char *name)
{
    size_t k = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (parts[i].name.len == k && memcmp(parts[i].name.ptr, name, k) == 0)
            return &parts[i];
    return NULL;
}
