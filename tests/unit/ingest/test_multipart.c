/* Tests of the multipart/form-data splitter (multipart.c) on the shape pyroscope-go's uploads
 * have (Go's mime/multipart: CRLF, quoted names, a profile part and a sample_type_config part)
 * and on every malformation it refuses. */
#include <stdio.h>
#include <string.h>

#include "rt/ingest.h"
#include "test.h"

#define CT "multipart/form-data; boundary=8f1c0de9a3"

static const char GO_BODY[] =
    "--8f1c0de9a3\r\n"
    "Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
    "Content-Type: application/octet-stream\r\n"
    "\r\n"
    "\x1f\x8b--8f1c0de9a3 is not a boundary without its CRLF\r\n"
    "--8f1c0de9a3\r\n"
    "Content-Disposition: form-data; name=\"sample_type_config\"; filename=\"c.json\"\r\n"
    "\r\n"
    "{\"cpu\":{\"units\":\"samples\"}}\r\n"
    "--8f1c0de9a3--\r\n";

static void test_parts(void)
{
    struct rt_ingest_part parts[4];
    size_t n = 0;
    struct rt_error e = {0};
    CHECK_INT(rt_ingest_multipart(CT, GO_BODY, sizeof(GO_BODY) - 1, parts, 4, &n, &e), 0);
    CHECK_INT(n, 2);
    const struct rt_ingest_part *p = rt_ingest_part_named(parts, n, "profile");
    CHECK(p != NULL);
    if (p) {
        const char want[] = "\x1f\x8b--8f1c0de9a3 is not a boundary without its CRLF";
        CHECK_INT(p->len, sizeof(want) - 1);
        CHECK(memcmp(p->data, want, sizeof(want) - 1) == 0);
        CHECK_INT(p->filename.len, 13);
        CHECK(memcmp(p->content_type.ptr, "application/octet-stream", 24) == 0);
    }
    p = rt_ingest_part_named(parts, n, "sample_type_config");
    CHECK(p && p->len == 27 && p->content_type.len == 0);
    CHECK(rt_ingest_part_named(parts, n, "prev_profile") == NULL);
    /* a quoted boundary, a preamble, and case-insensitive header names and parameters */
    const char quoted[] = "preamble\r\n--a b\r\ncontent-disposition: form-data; NAME=jfr\r\n\r\n"
                          "FLR\r\n--a b--";
    CHECK_INT(rt_ingest_multipart("Multipart/Form-Data; boundary=\"a b\"", quoted,
                                  sizeof(quoted) - 1, parts, 4, &n, &e), 0);
    CHECK(n == 1 && parts[0].name.len == 3 && parts[0].len == 3);
    /* an empty part whose headers end with the delimiter's own CRLF (a fuzz find: its length
     * came out negative) is empty */
    const char empty[] = "--b\r\nContent-Disposition: form-data; name=e\r\n\r\n--b--";
    CHECK_INT(rt_ingest_multipart("multipart/form-data; boundary=b", empty, sizeof(empty) - 1,
                                  parts, 4, &n, &e), 0);
    CHECK(n == 1 && parts[0].len == 0 && parts[0].data == (const uint8_t *)empty + 45);
    CHECK(rt_ingest_is_multipart("multipart/form-data;boundary=x"));
    CHECK(!rt_ingest_is_multipart("multipart/form-datax"));
    CHECK(!rt_ingest_is_multipart(NULL));
}

static void test_refusals(void)
{
    struct rt_ingest_part parts[2];
    size_t n = 0;
    struct rt_error e = {0};
    static const struct {
        const char *ct, *body, *msg;
    } bad[] = {
        {"multipart/form-data", "--x\r\n\r\n--x--", "boundary"},
        {"text/plain; boundary=x", "--x--", "multipart/form-data"},
        {"multipart/form-data; boundary=" /* 71 characters */
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "", "70 characters"},
        {CT, "no boundary here", "no boundary line"},
        {CT, "--8f1c0de9a3\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nabc",
         "not closed"},
        {CT, "--8f1c0de9a3\r\nContent-Type: x\r\n\r\nabc\r\n--8f1c0de9a3--", "form-data; name"},
        {CT, "--8f1c0de9a3\r\nContent-Disposition: attachment\r\n\r\nabc\r\n--8f1c0de9a3--",
         "not form-data"},
        {CT, "--8f1c0de9a3\r\nbroken header\r\n\r\nabc\r\n--8f1c0de9a3--", "without a colon"},
        {CT, "--8f1c0de9a3junk\r\n", "not followed by CRLF"},
        {CT, "--8f1c0de9a3\r\nContent-Disposition: form-data; name=\"p\"\r\n", "not closed"},
        {CT, "--8f1c0de9a3\r\nabc\r\n--8f1c0de9a3--", "no headers"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e.msg[0] = '\0';
        int rc = rt_ingest_multipart(bad[i].ct, bad[i].body, strlen(bad[i].body), parts, 2, &n,
                                     &e);
        if (rc != RT_EMALFORMED || !strstr(e.msg, bad[i].msg))
            fprintf(stderr, "case %zu: %d %s\n", i, rc, e.msg);
        CHECK_INT(rc, RT_EMALFORMED);
        CHECK(strstr(e.msg, bad[i].msg) != NULL);
    }
    /* more parts than room: RT_ETOOBIG */
    const char three[] = "--b\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n"
                         "--b\r\nContent-Disposition: form-data; name=b\r\n\r\n2\r\n"
                         "--b\r\nContent-Disposition: form-data; name=c\r\n\r\n3\r\n--b--";
    CHECK_INT(rt_ingest_multipart("multipart/form-data; boundary=b", three, sizeof(three) - 1,
                                  parts, 2, &n, &e), RT_ETOOBIG);
}

int main(void)
{
    RUN(test_parts);
    RUN(test_refusals);
    return TEST_DONE();
}
