/* Profile types (DESIGN §2): their names, parsing, and the note on what each cannot see. */
#include <string.h>

#include "rt/profile.h"

const char *rt_ptype_name(enum rt_ptype t)
{
    return t == RT_PTYPE_WALL ? "wall" : "cpu";
}

bool rt_ptype_parse(const char *s, enum rt_ptype *t)
{
    if (!s)
        return false;
    if (strcmp(s, "cpu") == 0) {
        *t = RT_PTYPE_CPU;
        return true;
    }
    if (strcmp(s, "wall") == 0) {
        *t = RT_PTYPE_WALL;
        return true;
    }
    return false;
}

const char *rt_ptype_note(enum rt_ptype t)
{
    return t == RT_PTYPE_WALL ? "includes time blocked on I/O and locks"
                              : "excludes time spent waiting";
}
