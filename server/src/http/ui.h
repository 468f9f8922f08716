/* The web UI's built files (ui/dist), compiled into the binary by scripts/embed-ui.py
 * (module-internal). */
#ifndef RT_HTTP_UI_H
#define RT_HTTP_UI_H

#include <stdbool.h>
#include <stddef.h>

/* One embedded file. */
struct rt__ui_asset {
    const char *path;                 /* URL path: "/index.html", "/assets/index-1a2b.js" */
    const char *content_type;         /* e.g. "text/javascript; charset=utf-8" */
    const unsigned char *data;        /* the file's bytes, static */
    size_t len;
};

/* The generated table (build/gen/ui_assets.c): every file of ui/dist, or, when the UI was
 * not built, one /index.html saying so. */
extern const struct rt__ui_asset rt__ui_assets[];
extern const size_t rt__ui_nassets;

/* The asset a GET of path serves ("/" is /index.html), or NULL. */
const struct rt__ui_asset *rt__ui_find(const char *path);

/* The headers every UI page and asset carries: a Content-Security-Policy without
 * 'unsafe-inline' (DESIGN §9), and what frames, referrers and sniffing may do. */
#define RT_UI_CSP                                                                          \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "     \
    "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; "    \
    "base-uri 'none'; form-action 'self'"

#endif
