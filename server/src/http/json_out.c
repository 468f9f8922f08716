/* The API's JSON text (json_out.h): the walk of a jansson tree, numbers and strings written by
 * rt/json_text.h. */
#include <stdbool.h>

#include "rt/err.h"
#include "rt/json_text.h"
#include "json_out.h"

static int out_value(const json_t *j, const char *tail, size_t tail_len, struct rt_buf *out)
{
    int rc;
    if (!j)
        return RT_EINVAL;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        if ((rc = rt_buf_append(out, "{", 1)))
            return rc;
        bool first = true;
        for (void *it = json_object_iter((json_t *)j); it;
             it = json_object_iter_next((json_t *)j, it)) {
            if (!first && (rc = rt_buf_append(out, ",", 1)))
                return rc;
            first = false;
            if ((rc = rt_json_text_string(out, json_object_iter_key(it),
                                          json_object_iter_key_len(it))) ||
                (rc = rt_buf_append(out, ":", 1)) ||
                (rc = out_value(json_object_iter_value(it), NULL, 0, out)))
                return rc;
        }
        if (tail_len && ((!first && (rc = rt_buf_append(out, ",", 1))) ||
                         (rc = rt_buf_append(out, tail, tail_len))))
            return rc;
        return rt_buf_append(out, "}", 1);
    }
    case JSON_ARRAY: {
        if ((rc = rt_buf_append(out, "[", 1)))
            return rc;
        size_t n = json_array_size(j);
        for (size_t i = 0; i < n; i++)
            if ((i && (rc = rt_buf_append(out, ",", 1))) ||
                (rc = out_value(json_array_get(j, i), NULL, 0, out)))
                return rc;
        return rt_buf_append(out, "]", 1);
    }
    case JSON_STRING:
        return rt_json_text_string(out, json_string_value(j), json_string_length(j));
    case JSON_INTEGER: {
        return rt_json_text_int(out, (int64_t)json_integer_value(j));
    }
    case JSON_REAL:
        return rt_json_text_real(out, json_real_value(j));
    case JSON_TRUE:
        return rt_buf_append(out, "true", 4);
    case JSON_FALSE:
        return rt_buf_append(out, "false", 5);
    case JSON_NULL:
        return rt_buf_append(out, "null", 4);
    }
    return RT_EINVAL;
}

int rt_json_out(const json_t *j, const char *tail, size_t tail_len, struct rt_buf *out)
{
    return out_value(j, tail, tail_len, out);
}
