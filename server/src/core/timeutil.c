/* Clocks, RFC 3339 parsing and formatting, and durations such as "10m" (DESIGN §11). */
#include <ctype.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt/err.h"
#include "rt/timeutil.h"

int64_t rt_time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * RT_NS_PER_S + ts.tv_nsec;
}

int64_t rt_time_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * RT_NS_PER_S + ts.tv_nsec;
}

/* Reads exactly n digits at *p into *v. */
static int digits(const char **p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

/* Decimal seconds ("1764464400", "1764464400.25", "-5") to ns, exact to the nanosecond. */
static int parse_unix_seconds(const char *s, int64_t *ns)
{
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (!isdigit((unsigned char)*p))
        return RT_EINVAL;
    int64_t sec = 0, frac = 0;
    bool far = false; /* beyond the limit: told apart once the whole string is read */
    for (; isdigit((unsigned char)*p); p++)
        if (!far && (sec = sec * 10 + (*p - '0')) > RT_TIME_LIMIT_NS / RT_NS_PER_S)
            far = true;
    if (*p == '.') {
        p++;
        int64_t scale = RT_NS_PER_S / 10;
        for (; isdigit((unsigned char)*p); p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (*p)
        return RT_EINVAL;
    if (far || sec * RT_NS_PER_S + frac > RT_TIME_LIMIT_NS)
        return RT_ETOOBIG;
    int64_t v = sec * RT_NS_PER_S + frac;
    *ns = neg ? -v : v;
    return 0;
}

/* Days in month m (1-12) of year y, proleptic Gregorian: February has 29 in years divisible
 * by 4, except centuries not divisible by 400. */
static int days_in_month(int y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

int rt_time_parse(const char *s, int64_t *ns)
{
    if (!s || !*s)
        return RT_EINVAL;
    bool rfc3339 = strlen(s) > 4 && s[4] == '-';
    if (!rfc3339)
        return parse_unix_seconds(s, ns);
    const char *p = s;
    int Y, M, D, h, m, sec;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
        digits(&p, 2, &D))
        return RT_EINVAL;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return RT_EINVAL;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
        digits(&p, 2, &sec))
        return RT_EINVAL;
    /* sec 60: a leap second, checked once the offset is known (it must be 23:59:60 UTC) */
    bool leap = sec == 60;
    if (M < 1 || M > 12 || D < 1 || D > days_in_month(Y, M) || h > 23 || m > 59 || sec > 60)
        return RT_EINVAL;
    if (leap)
        sec = 59;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return RT_EINVAL;
        int64_t scale = RT_NS_PER_S / 10;
        for (; isdigit((unsigned char)*p); p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return RT_EINVAL;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return RT_EINVAL;
    }
    if (*p)
        return RT_EINVAL;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    int64_t t = (int64_t)timegm(&tm) - off;
    if (leap && ((t % 86400) + 86400) % 86400 != 86399)
        return RT_EINVAL;
    if (leap)
        frac = RT_NS_PER_S - 1; /* the last instant before the next day, fraction included */
    if (t > RT_TIME_LIMIT_NS / RT_NS_PER_S || t < -(RT_TIME_LIMIT_NS / RT_NS_PER_S))
        return RT_ETOOBIG;
    if (t * RT_NS_PER_S + frac > RT_TIME_LIMIT_NS)
        return RT_ETOOBIG;
    *ns = t * RT_NS_PER_S + frac;
    return 0;
}

char *rt_time_format(int64_t ns, char *out)
{
    int64_t sec = ns / RT_NS_PER_S, frac = ns % RT_NS_PER_S;
    if (frac < 0) {
        frac += RT_NS_PER_S;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(out, RT_TIME_BUFSZ, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac) {
        char f[16];
        snprintf(f, sizeof(f), ".%09lld", (long long)frac);
        size_t k = strlen(f);
        while (f[k - 1] == '0')
            f[--k] = '\0';
        memcpy(out + n, f, k);
        n += k;
    }
    out[n++] = 'Z';
    out[n] = '\0';
    return out;
}

int rt_duration_parse(const char *s, int64_t *ns)
{
    if (!s || !isdigit((unsigned char)*s))
        return RT_EINVAL;
    const char *p = s;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.' && isdigit((unsigned char)p[1]))
        for (p++; isdigit((unsigned char)*p);)
            p++;
    if (isdigit((unsigned char)*p) || *p == '.')
        return RT_EINVAL;
    char *end;
    double v = strtod(s, &end);
    if (end != p || !isfinite(v) || v < 0)
        return RT_EINVAL;
    double mul;
    if (!*end || !strcmp(end, "s"))
        mul = 1e9;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else if (!strcmp(end, "m"))
        mul = 60e9;
    else if (!strcmp(end, "h"))
        mul = 3600e9;
    else if (!strcmp(end, "d"))
        mul = 86400e9;
    else
        return RT_EINVAL;
    double r = v * mul;
    if (r > 9.2e18)
        return RT_EINVAL;
    *ns = (int64_t)llround(r);
    return 0;
}
