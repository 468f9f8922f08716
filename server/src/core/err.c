/* Error codes' names and texts, and setting an error with its message. */
#include <stdarg.h>
#include <stdio.h>

#include "rt/err.h"

const char *rt_strerror(int code)
{
    switch (code) {
    case RT_OK:
        return "success";
#define XX(name, text)                                                                     \
    case RT_##name:                                                                        \
        return text;
        RT_ERR_MAP(XX)
#undef XX
    default:
        return "unknown error";
    }
}

const char *rt_err_name(int code)
{
    switch (code) {
    case RT_OK: return "ok";
    case RT_EINVAL: return "invalid_argument";
    case RT_ENOMEM: return "out_of_memory";
    case RT_EMALFORMED: return "malformed";
    case RT_ETOOBIG: return "too_large";
    case RT_EFORMAT: return "unsupported_format";
    case RT_ETYPE: return "unsupported_type";
    case RT_ENOTFOUND: return "not_found";
    case RT_ECONFLICT: return "conflict";
    case RT_EDISKFULL: return "disk_full";
    case RT_EIO: return "storage_error";
    case RT_EAUTH: return "unauthorized";
    case RT_EFORBIDDEN: return "forbidden";
    case RT_ECANCELED: return "unavailable";
    case RT_EBUSY: return "busy";
    default: return "error";
    }
}

int rt_error_set(struct rt_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

void rt_error_clear(struct rt_error *err)
{
    if (!err)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}
