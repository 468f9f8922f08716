/* The command line (DESIGN §10): argument parsing, the transport that answers a request
 * either in-process on --data DIR or from a running server (--server URL), and the
 * subcommands. Module-internal to cli/. */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "rt/api.h"
#include "rt/store.h"

#define CLI_MAX_ARGS 64

/* Parsed arguments of one subcommand: --key value pairs, --flags and positionals. */
struct cli {
    const char *keys[CLI_MAX_ARGS], *vals[CLI_MAX_ARGS]; /* vals[i] NULL for a bare flag */
    size_t nkeys;
    const char *pos[CLI_MAX_ARGS];
    size_t npos;
    const char *server;        /* --server URL or NULL */
    const char *data;          /* --store URI, else --data DIR (default ./roottrace-data) */
    bool json;                 /* --json: print the API's JSON */
    struct rt_store *store;    /* opened lazily for local mode */
    struct rt_control *control; /* with store, for keys and toggles in local mode */
    struct rt_api_ctx api;
};

/* Parses argv (after the subcommand name). spec lists the command's options, space
 * separated, flags (no value) marked with '!': "service type !json"; --server and --data
 * are always accepted. An unknown option is an error. Returns 0, or -1 after printing it. */
int rt__cli_parse(struct cli *c, int argc, char **argv, const char *spec);

/* Whether the whole command line (argv[0] is the program) asks for help: `help` as the
 * command, or `--help` / `-h` where an option or argument may stand. Read with the grammar
 * rt__cli_parse applies: every --option but the flags (--json) takes the next word as its
 * value, so `--version -h` is a version, not a request for help. */
bool rt__cli_wants_help(int argc, char **argv);

/* Value of --key, or def. */
const char *rt__cli_opt(const struct cli *c, const char *key, const char *def);

/* True if --key was given. */
bool rt__cli_has(const struct cli *c, const char *key);

/* Closes what the command opened. */
void rt__cli_cleanup(struct cli *c);

/* Runs one API request locally or against --server; fills resp (status 0 = transport
 * failure, with a message printed). params are NULL-terminated key/value pairs. */
void rt__cli_call(struct cli *c, const char *method, const char *path,
                  const struct rt_api_param *params, size_t nparams, const void *body,
                  size_t body_len, const char *content_type, struct rt_api_resp *resp);

/* Prints an error answer ("roottrace: <status> <message>") to stderr and returns 1; 0 for 2xx. */
int rt__cli_check(const struct rt_api_resp *resp);

/* Ends a command that printed an object or a list: JSON with --json, else line() for the
 * object or each item; then frees resp and what the command opened. Returns the exit status. */
int rt__cli_finish(struct cli *c, struct rt_api_resp *resp, void (*line)(json_t *));

/* Prints JSON pretty to stdout. */
void rt__cli_print_json(json_t *j);

/* Renderers of plain output, like `go tool pprof -top`. */
void rt__cli_render_profile(json_t *j);
void rt__cli_render_diff(json_t *j);

/* Subcommands; each returns the process exit status. */
int rt__cli_serve(int argc, char **argv);
int rt__cli_ingest(int argc, char **argv);
int rt__cli_top(int argc, char **argv);
int rt__cli_diff(int argc, char **argv);
int rt__cli_export(int argc, char **argv);
int rt__cli_health(int argc, char **argv);
int rt__cli_issue(int argc, char **argv);
int rt__cli_deploy(int argc, char **argv);
int rt__cli_key(int argc, char **argv);
int rt__cli_profiling(int argc, char **argv);

#endif
