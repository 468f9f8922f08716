/* Reading a whole test input file, shared by the ingest tests. */
#ifndef RT_TEST_SLURP_H
#define RT_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of the file at path (malloc'd, caller frees) and their count in *n; NULL, with a
 * message on stderr, when the file cannot be read. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!b) {
        fprintf(stderr, "cannot read %s\n", path);
        fclose(f);
        return NULL;
    }
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

#endif
