/* Error codes and error messages shared by every module (libuv's UV_ERRNO_MAP pattern). */
#ifndef RT_ERR_H
#define RT_ERR_H

/* XX(name, text). The HTTP status of each is chosen in http/ alone (rt_http_status_from_err). */
#define RT_ERR_MAP(XX)                                                    \
    XX(EINVAL, "invalid argument")                                        \
    XX(ENOMEM, "out of memory")                                           \
    XX(EMALFORMED, "malformed input")                                     \
    XX(ETOOBIG, "input exceeds a limit")                                  \
    XX(EFORMAT, "unsupported input format")                               \
    XX(ETYPE, "unsupported or contradictory profile type")                \
    XX(ENOTFOUND, "not found")                                            \
    XX(ECONFLICT, "conflict")                                             \
    XX(EDISKFULL, "disk full")                                            \
    XX(EIO, "storage or I/O error")                                       \
    XX(EAUTH, "authentication required")                                  \
    XX(EFORBIDDEN, "forbidden")                                           \
    XX(ECANCELED, "cancelled: the server is stopping")                   \
    XX(EBUSY, "busy: a bounded queue is full, retry later")

enum rt_err {
    RT_OK = 0,
#define XX(name, text) RT_##name,
    RT_ERR_FIRST_ = -100,
    RT_ERR_MAP(XX)
#undef XX
};

/* An error with its message; filled by the function that fails, read by the caller. */
struct rt_error {
    int code;       /* 0 or a negative enum rt_err */
    char msg[512];  /* human-readable reason, e.g. "sample type alloc_space/bytes is not cpu or wall" */
};

/* Text of an error code (never NULL). */
const char *rt_strerror(int code);

/* Short machine name of an error code, e.g. "malformed" (used as the API's "error" field). */
const char *rt_err_name(int code);

/* Sets err (may be NULL) to code with a printf-style message; returns code. */
int rt_error_set(struct rt_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err (may be NULL). */
void rt_error_clear(struct rt_error *err);

#endif
