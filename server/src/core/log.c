/* One-line log records on stderr with a UTC timestamp and level. */
#include <stdarg.h>
#include <stdio.h>

#include "rt/log.h"
#include "rt/timeutil.h"

static enum rt_log_level min_level = RT_LOG_INFO;

void rt_log_set_level(enum rt_log_level level)
{
    min_level = level;
}

void rt_log(enum rt_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < min_level)
        return;
    char ts[RT_TIME_BUFSZ], line[2048];
    rt_time_format(rt_time_now_ns() / 1000000 * 1000000, ts);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s %s\n", ts, names[level], line);
}
