/* Looks up the web UI's embedded files (ui.h) for the static routes of server.c. */
#include <string.h>

#include "ui.h"

const struct rt__ui_asset *rt__ui_find(const char *path)
{
    if (strcmp(path, "/") == 0)
        path = "/index.html";
    for (size_t i = 0; i < rt__ui_nassets; i++)
        if (strcmp(rt__ui_assets[i].path, path) == 0)
            return &rt__ui_assets[i];
    return NULL;
}
