/* Text exports: folded stacks ("a;b;c <value_ns>" per line) and speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json). */
#include <string.h>

#include "rt/err.h"
#include "rt/export.h"
#include "rt/str.h"

/* Appends a frame name for a folded line: ';' would split it and a newline end the line. */
static int put_folded_frame(struct rt_buf *b, const char *s, size_t n)
{
    int rc = rt_buf_reserve(b, n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        b->data[b->len + i] = c == ';' ? ':' : (c == '\n' || c == '\r') ? ' ' : c;
    }
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int rt_export_folded(const struct rt_profile *p, struct rt_buf *out)
{
    int rc = 0;
    for (size_t i = 0; i < p->nstacks && rc == 0; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        if (s->value_ns == 0)
            continue;
        for (uint32_t k = 0; k < s->depth && rc == 0; k++) {
            uint32_t f = p->frame_ids[s->off + k];
            if (k)
                rc = rt_buf_append(out, ";", 1);
            rc = rc ? rc : put_folded_frame(out, p->frames.strs[f], p->frames.lens[f]);
        }
        rc = rc ? rc : rt_buf_printf(out, " %lld\n", (long long)s->value_ns);
    }
    return rc;
}

/* Appends s as a JSON string; invalid UTF-8 becomes U+FFFD. */
static int put_json_str(struct rt_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    int rc = rt_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n && rc == 0;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            rc = rt_buf_append(b, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            rc = rt_buf_printf(b, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            rc = rt_buf_append(b, &s[i], 1);
            i++;
        } else {
            size_t len = rt_utf8_seq_len(s + i, n - i);
            rc = len ? rt_buf_append(b, s + i, len) : rt_buf_puts(b, "\\ufffd");
            i += len ? len : 1;
        }
    }
    return rc ? rc : rt_buf_append(b, "\"", 1);
}

int rt_export_speedscope(const struct rt_profile *p, const char *name, struct rt_buf *out)
{
    const char *nm = name ? name : "profile";
    int rc = rt_buf_puts(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                              "\"shared\":{\"frames\":[");
    for (uint32_t f = 0; f < p->frames.count && rc == 0; f++) {
        rc = rt_buf_puts(out, f ? ",{\"name\":" : "{\"name\":");
        rc = rc ? rc : put_json_str(out, p->frames.strs[f], p->frames.lens[f]);
        rc = rc ? rc : rt_buf_append(out, "}", 1);
    }
    rc = rc ? rc : rt_buf_puts(out, "]},\"profiles\":[{\"type\":\"sampled\",\"name\":");
    rc = rc ? rc : put_json_str(out, nm, strlen(nm));
    rc = rc ? rc : rt_buf_printf(out, ",\"unit\":\"nanoseconds\",\"startValue\":0,"
                                      "\"endValue\":%lld,\"samples\":[",
                                 (long long)p->value_ns);
    for (size_t i = 0; i < p->nstacks && rc == 0; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        rc = rt_buf_puts(out, i ? ",[" : "[");
        for (uint32_t k = 0; k < s->depth && rc == 0; k++)
            rc = rt_buf_printf(out, k ? ",%u" : "%u", p->frame_ids[s->off + k]);
        rc = rc ? rc : rt_buf_append(out, "]", 1);
    }
    rc = rc ? rc : rt_buf_puts(out, "],\"weights\":[");
    for (size_t i = 0; i < p->nstacks && rc == 0; i++)
        rc = rt_buf_printf(out, i ? ",%lld" : "%lld", (long long)p->stacks[i].value_ns);
    rc = rc ? rc : rt_buf_puts(out, "]}],\"name\":");
    rc = rc ? rc : put_json_str(out, nm, strlen(nm));
    return rc ? rc : rt_buf_puts(out, ",\"activeProfileIndex\":0,\"exporter\":\"roottrace\"}");
}
