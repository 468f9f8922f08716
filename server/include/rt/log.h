/* Logging to stderr, one line per event, with a UTC timestamp and a level. */
#ifndef RT_LOG_H
#define RT_LOG_H

enum rt_log_level { RT_LOG_DEBUG, RT_LOG_INFO, RT_LOG_WARN, RT_LOG_ERROR };

/* Lines below this level are dropped (default RT_LOG_INFO). */
void rt_log_set_level(enum rt_log_level level);

void rt_log(enum rt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
