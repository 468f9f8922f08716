/* roottrace: the server and its command line. Flags and wiring only; the subcommands live
 * in server/src/cli/. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* Prints the usage to out; returns rc (0 when asked for with --help, 2 after a bad call). */
static int usage(FILE *out, int rc)
{
    fprintf(out,
            "roottrace: a self-hosted continuous profiler\n\n"
            "usage: roottrace COMMAND [options]\n\n"
            "  serve   [--data DIR | --store URI] [--listen HOST:PORT] [--retention 30d]\n"
            "          [--poll-interval 10s]\n"
            "  ingest  FILE... --service S [--type cpu|wall] [--at TIME] [--duration D]\n"
            "  top     --service S --type T [--from T --to T] [--limit N]\n"
            "  diff    --service S --type T --at TIME [--window 10m] | --issue ID\n"
            "  export  --service S --type T --from T --to T --format pprof|folded|speedscope\n"
            "  issue   create --service S --at TIME [--title T] | list\n"
            "  deploy  --service S --version V [--at TIME]\n"
            "  key     create --scope admin|read|ingest [--service S] | list | revoke ID\n"
            "  profiling on|off --service S [--type cpu|wall] [--sampling-interval-us N]\n"
            "  health  [--url URL]\n\n"
            "Every command but serve and health works on --data DIR (default ./roottrace-data),\n"
            "on --store URI (sqlite:PATH or clickhouse:http://HOST:8123/DB), or on a running\n"
            "server (--server URL, token in ROOTTRACE_TOKEN); --json prints\n"
            "the API's JSON. Times are RFC 3339 or Unix seconds; durations 90s, 10m, 1h.\n"
            "ROOTTRACE_STORE, when set and not empty, names the store as --store does.\n");
    return rc;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = {{"serve", rt__cli_serve},   {"ingest", rt__cli_ingest}, {"top", rt__cli_top},
                {"diff", rt__cli_diff},     {"export", rt__cli_export}, {"health", rt__cli_health},
                {"issue", rt__cli_issue},   {"deploy", rt__cli_deploy},
                {"key", rt__cli_key},       {"profiling", rt__cli_profiling}};
    if (rt__cli_wants_help(argc, argv))
        return usage(stdout, 0);
    if (argc < 2)
        return usage(stderr, 2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = -1;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            rc = cmds[i].run(argc - 2, argv + 2);
    curl_global_cleanup();
    return rc == -1 ? usage(stderr, 2) : rc;
}
