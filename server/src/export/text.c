/* Text exports: folded stacks ("a;b;c <value_ns>" per line) and speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json). */
#include <stdbool.h>
#include <string.h>

#include "rt/err.h"
#include "rt/export.h"
#include "rt/str.h"

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Where a trailing number starts: the index of the blank before a last word made of digits
 * and at most one '.', as a folded reader takes it for a count; n when there is none. */
static size_t trailing_number(const char *s, size_t n)
{
    size_t i = n, dots = 0;
    while (i > 0 && (is_digit(s[i - 1]) || s[i - 1] == '.'))
        dots += s[--i] == '.';
    bool number = i < n && n - i > dots && s[i] != '.' && dots <= 1;
    return number && i > 0 && is_blank(s[i - 1]) ? i - 1 : n;
}

/* Where a trailing ":<digits>" (a line number, DESIGN §3) starts, or n. */
static size_t trailing_line(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && is_digit(s[i - 1]))
        i--;
    return i < n && i >= 2 && s[i - 1] == ':' ? i - 1 : n;
}

/* Where a trailing "_[k]" ("_[j]", "_[i]", "_[w]": perf's annotations) starts, or n. */
static size_t trailing_annotation(const char *s, size_t n)
{
    return n > 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' &&
                   strchr("kjiw", s[n - 2]) && s[n - 2]
               ? n - 4
               : n;
}

int rt_export_folded_frame(struct rt_buf *b, const char *s, size_t n)
{
    if (n == 0)
        return rt_buf_puts(b, "[empty]");
    int rc = rt_buf_reserve(b, n + 4);
    if (rc)
        return rc;
    size_t lead = 0, trail = n;
    while (lead < n && is_blank(s[lead]))
        lead++;
    while (trail > lead && is_blank(s[trail - 1]))
        trail--;
    size_t ann = trailing_annotation(s, n), line = trailing_line(s, n);
    size_t num = trailing_number(s, n);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (i == 0 && c == '#') { /* a comment line, if it starts one */
            memcpy(b->data + b->len, "\\x23", 4);
            b->len += 4;
            continue;
        }
        if (c == ';')
            c = ':';
        else if ((unsigned char)c < 0x20 || c == 0x7f)
            c = ' ';
        if (i < lead || i >= trail || i == num || i == line)
            c = '_';
        else if (i == ann)
            c = '-';
        b->data[b->len++] = c;
    }
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
            rc = rc ? rc : rt_export_folded_frame(out, p->frames.strs[f], p->frames.lens[f]);
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
