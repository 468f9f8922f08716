/* Frame rules (DESIGN §3): the shapes in which other producers write frames, brought to
 * `module.function` with no line number, and frames a runtime injects into the code it
 * interrupts. docs/agents.md has the table of shapes with a real example of each. */
#include <string.h>

#include "ingest_internal.h"

static bool has_suffix(struct rt_str s, const char *suffix)
{
    size_t n = strlen(suffix);
    return s.len >= n && memcmp(s.ptr + s.len - n, suffix, n) == 0;
}

static bool has_prefix(struct rt_str s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.len >= n && memcmp(s.ptr, prefix, n) == 0;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The last occurrence of c in s, or -1. */
static ptrdiff_t last_of(struct rt_str s, char c)
{
    for (size_t i = s.len; i-- > 0;)
        if (s.ptr[i] == c)
            return (ptrdiff_t)i;
    return -1;
}

/* s without a trailing ":<digits>" (a line number); s itself when it has none. */
static struct rt_str drop_line(struct rt_str s)
{
    size_t d = s.len;
    while (d > 0 && is_digit(s.ptr[d - 1]))
        d--;
    if (d < s.len && d >= 2 && s.ptr[d - 1] == ':')
        s.len = d - 1;
    return s;
}

/* Appends n bytes to the output cursor (which may run over p itself: a name shortened in
 * place). */
static void put(char **o, const char *p, size_t n)
{
    memmove(*o, p, n);
    *o += n;
}

/* The source languages whose file paths a frame may name. */
enum lang { LANG_NONE, LANG_PYTHON, LANG_RUBY, LANG_JS };

static enum lang lang_of(struct rt_str path)
{
    /* "<frozen site>", and code without a file: "<string>", "<stdin>" */
    if (has_suffix(path, ".py") || has_suffix(path, ".pyc") || has_suffix(path, ".pyw") ||
        (has_prefix(path, "<") && has_suffix(path, ">") && path.len > 2))
        return LANG_PYTHON;
    if (has_suffix(path, ".rb"))
        return LANG_RUBY;
    if (has_suffix(path, ".js") || has_suffix(path, ".mjs") || has_suffix(path, ".cjs") ||
        has_suffix(path, ".ts") || has_prefix(path, "node:"))
        return LANG_JS;
    return LANG_NONE;
}

/* Moves path past the last occurrence of needle (with something after it); true if found. */
static bool after_last(struct rt_str *path, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = path->len; i-- > 0;)
        if (path->len - i > n && memcmp(path->ptr + i, needle, n) == 0) {
            path->ptr += i + n;
            path->len -= i + n;
            return true;
        }
    return false;
}

/* path without leading "./" and without the extension of its last component. */
static struct rt_str bare_path(struct rt_str path)
{
    while (has_prefix(path, "./")) {
        path.ptr += 2;
        path.len -= 2;
    }
    ptrdiff_t dot = last_of(path, '.'), slash = last_of(path, '/');
    if (dot > slash && dot > 0)
        path.len = (size_t)dot;
    return path;
}

/* Writes the module a Python or Ruby source path names, the way the Python SDK names a module
 * (its __name__): after the last site-packages/ or dist-packages/ (an installed package), else
 * after lib/pythonX.Y/ (the standard library), else the file itself for an absolute path (the
 * server cannot see the application's root), else the relative path; the extension and a
 * package's /__init__ dropped, '/' made '.'. "<frozen importlib._bootstrap>" is the frozen
 * module importlib._bootstrap. */
static void write_script_module(struct rt_str path, char **o)
{
    if (has_prefix(path, "<frozen ")) {
        put(o, path.ptr + 8, path.len - 9);
        return;
    }
    bool rooted = after_last(&path, "/site-packages/") || after_last(&path, "/dist-packages/");
    for (size_t i = 0; !rooted && i + 12 < path.len; i++)
        if (memcmp(path.ptr + i, "/lib/python", 11) == 0 && is_digit(path.ptr[i + 11])) {
            size_t j = i + 11;
            while (j < path.len && path.ptr[j] != '/')
                j++;
            if (j < path.len) {
                path.ptr += j + 1;
                path.len -= j + 1;
                rooted = true;
            }
        }
    if (!rooted && path.len && path.ptr[0] == '/')
        after_last(&path, "/");
    path = bare_path(path);
    if (has_suffix(path, "/__init__"))
        path.len -= 9;
    for (size_t i = 0; i < path.len; i++)
        *(*o)++ = path.ptr[i] == '/' ? '.' : path.ptr[i];
}

/* Writes the module a JavaScript path names, as the Node SDK does (DESIGN §3): node: built-ins
 * as they are; inside node_modules from the package name on; otherwise the path without its
 * extension and a leading "./" or file:// (the server cannot see the application's root, so
 * an absolute path stays absolute). */
static void write_js_module(struct rt_str path, char **o)
{
    if (has_prefix(path, "node:")) {
        put(o, path.ptr, path.len);
        return;
    }
    if (has_prefix(path, "file://")) {
        path.ptr += 7;
        path.len -= 7;
    }
    after_last(&path, "/node_modules/");
    path = bare_path(path);
    put(o, path.ptr, path.len);
}

/* A JavaScript function name without the line and column that @datadog/pprof writes into
 * an anonymous one: "(anonymous:L#54:C#33)" is "(anonymous)". */
static struct rt_str js_function(struct rt_str fn, bool *anon)
{
    *anon = has_prefix(fn, "(anonymous:L#") && has_suffix(fn, ")");
    return fn;
}

/* Writes "module.function" for a function of a source path in language lang. */
static struct rt_str write_frame(enum lang lang, struct rt_str path, struct rt_str fn,
                                 char *scratch)
{
    char *o = scratch;
    bool anon = false;
    if (lang == LANG_JS) {
        fn = js_function(fn, &anon);
        write_js_module(path, &o);
    } else {
        write_script_module(path, &o);
    }
    *o++ = '.';
    if (anon)
        put(&o, "(anonymous)", 11);
    else
        put(&o, fn.ptr, fn.len);
    return (struct rt_str){scratch, (size_t)(o - scratch)};
}

/* py-spy and rbspy: "func (path/file.py:LINE)", or "func (path/file.py)" without line numbers.
 * A Python or Ruby path gives "module.func"; another path keeps "func (path)", its line
 * dropped. Returns false when s is not of this shape. */
static bool spy_shape(struct rt_str s, char *scratch, struct rt_str *out, unsigned *shapes)
{
    if (s.len < 5 || s.ptr[s.len - 1] != ')')
        return false;
    ptrdiff_t open = -1;
    for (size_t i = s.len - 1; i-- > 1;)
        if (s.ptr[i] == '(' && s.ptr[i - 1] == ' ') {
            open = (ptrdiff_t)i;
            break;
        } else if (s.ptr[i] == '(' || s.ptr[i] == ')') {
            return false;
        }
    if (open < 2)
        return false;
    struct rt_str fn = {s.ptr, (size_t)open - 1};
    struct rt_str loc = {s.ptr + open + 1, s.len - (size_t)open - 2};
    struct rt_str path = drop_line(loc);
    enum lang lang = lang_of(path);
    if (lang == LANG_PYTHON || lang == LANG_RUBY) {
        *out = write_frame(lang, path, fn, scratch);
        *shapes |= lang == LANG_PYTHON ? RT__SHAPE_PYSPY : RT__SHAPE_RBSPY;
        return true;
    }
    if (path.len == loc.len)
        return false;
    char *o = scratch;
    put(&o, s.ptr, (size_t)open + 1 + path.len);
    *o++ = ')';
    *out = (struct rt_str){scratch, (size_t)(o - scratch)};
    *shapes |= RT__SHAPE_LINE;
    return true;
}

/* "path:function" once a line is dropped, as austin and @datadog/pprof write them
 * ("<frozen importlib._bootstrap>:_find_and_load:1007", "./app.js:handle:12",
 * "node:internal/timers:processTimers:504"), where path is a Python or JavaScript source.
 * Returns false when s is not of this shape. */
static bool path_function_shape(struct rt_str s, char *scratch, struct rt_str *out,
                                unsigned *shapes)
{
    /* the path ends at the first ':' after its start ("node:" is part of a built-in's path) */
    size_t from = has_prefix(s, "node:") ? 5 : has_prefix(s, "file://") ? 7 : 0;
    const char *c = from < s.len ? memchr(s.ptr + from, ':', s.len - from) : NULL;
    size_t colon = c ? (size_t)(c - s.ptr) : s.len; /* most names (Go's, Java's) have none */
    if (colon == s.len || colon + 1 == s.len)
        return false;
    struct rt_str path = {s.ptr, colon};
    enum lang lang = lang_of(path);
    if (lang == LANG_NONE || lang == LANG_RUBY)
        return false;
    struct rt_str fn = {s.ptr + colon + 1, s.len - colon - 1};
    *out = write_frame(lang, path, fn, scratch);
    *shapes |= RT__SHAPE_PATH_FUNCTION;
    return true;
}

/* @datadog/pprof's frames without a script (":Garbage Collection", ":write"): the Node SDK's
 * names for them. Its garbage collection frame is V8's (garbage collector); its other
 * synthetic frames ("Non JS threads activity", "Node.js") go in parentheses as V8's special
 * frames do; a native function is (native).name. Returns false when s is not of this shape
 * (a C++ "::operator new" is not). */
static bool scriptless_shape(struct rt_str s, char *scratch, struct rt_str *out,
                             unsigned *shapes)
{
    if (s.len < 2 || s.ptr[0] != ':' || s.ptr[1] == ':' || memchr(s.ptr + 1, ':', s.len - 1))
        return false;
    struct rt_str fn = {s.ptr + 1, s.len - 1};
    static const char *const synthetic[] = {"Non JS threads activity", "Node.js", "(program)",
                                            "(idle)", "(root)"};
    char *o = scratch;
    if (fn.len == 18 && memcmp(fn.ptr, "Garbage Collection", 18) == 0) {
        put(&o, "(garbage collector)", 19);
    } else {
        bool special = false;
        for (size_t i = 0; i < sizeof(synthetic) / sizeof(synthetic[0]); i++)
            special |= strlen(synthetic[i]) == fn.len && memcmp(synthetic[i], fn.ptr, fn.len) == 0;
        if (special && fn.ptr[0] == '(') {
            put(&o, fn.ptr, fn.len);
        } else if (special) {
            *o++ = '(';
            put(&o, fn.ptr, fn.len);
            *o++ = ')';
        } else {
            put(&o, "(native).", 9);
            put(&o, fn.ptr, fn.len);
        }
    }
    *out = (struct rt_str){scratch, (size_t)(o - scratch)};
    *shapes |= RT__SHAPE_PATH_FUNCTION;
    return true;
}

/* perf and stackcollapse's "func+0x1f": an offset into the function. */
static struct rt_str drop_offset(struct rt_str s, unsigned *shapes)
{
    size_t d = s.len;
    while (d > 0 && ((s.ptr[d - 1] >= '0' && s.ptr[d - 1] <= '9') ||
                     (s.ptr[d - 1] >= 'a' && s.ptr[d - 1] <= 'f')))
        d--;
    if (d < s.len && d >= 4 && s.ptr[d - 1] == 'x' && s.ptr[d - 2] == '0' && s.ptr[d - 3] == '+') {
        s.len = d - 3;
        *shapes |= RT__SHAPE_OFFSET;
    }
    return s;
}

struct rt_str rt__frame_java_lambda(struct rt_str in, char *scratch, unsigned *shapes)
{
    static const char lambda[] = "$$Lambda";
    /* memchr first: most names hold no '$', and it is much cheaper than memmem */
    const char *dollar = in.len >= sizeof(lambda) ? memchr(in.ptr, '$', in.len) : NULL;
    const char *p = dollar ? memmem(dollar, in.len - (size_t)(dollar - in.ptr), lambda,
                                    sizeof(lambda) - 1)
                           : NULL;
    if (!p)
        return in;
    size_t head = (size_t)(p - in.ptr) + sizeof(lambda) - 1;
    ptrdiff_t dot = last_of(in, '.');
    if (dot < (ptrdiff_t)head || (size_t)dot + 1 == in.len)
        return in;
    if ((size_t)dot == head) /* "X$$Lambda.run": nothing to drop */
        return in;
    char *o = scratch;
    put(&o, in.ptr, head);
    put(&o, in.ptr + dot, in.len - (size_t)dot);
    *shapes |= RT__SHAPE_LAMBDA;
    return (struct rt_str){scratch, (size_t)(o - scratch)};
}

struct rt_str rt__frame_normalize(struct rt_str in, char *scratch, unsigned *shapes)
{
    struct rt_str s = rt_ingest_normalize_folded_frame(in), out;
    if (s.len < in.len && !has_suffix(in, "]"))
        *shapes |= RT__SHAPE_LINE;
    if (spy_shape(s, scratch, &out, shapes) || path_function_shape(s, scratch, &out, shapes) ||
        scriptless_shape(s, scratch, &out, shapes))
        return out;
    return rt__frame_java_lambda(drop_offset(s, shapes), scratch, shapes);
}

struct rt_str rt__frame_with_file(struct rt_str fn, struct rt_str file, char *scratch)
{
    if (!file.len)
        return fn;
    enum lang lang = lang_of(file);
    if (lang != LANG_NONE)
        return write_frame(lang, file, fn, scratch);
    ptrdiff_t slash = last_of(file, '/');
    struct rt_str base = {file.ptr + slash + 1, file.len - (size_t)(slash + 1)};
    ptrdiff_t dot = last_of(base, '.');
    if (dot > 0)
        base.len = (size_t)dot;
    char *o = scratch;
    put(&o, base.ptr, base.len);
    *o++ = '.';
    put(&o, fn.ptr, fn.len);
    return (struct rt_str){scratch, (size_t)(o - scratch)};
}

/* Go's asynchronous preemption (Go 1.14+) makes a goroutine that runs too long call
 * runtime.asyncPreempt from wherever its signal landed. A SIGPROF delivered at the same
 * kernel exit as the preemption signal finds the PC on asyncPreempt's first instructions
 * (golang/go#59045: "most of time is doing runtime.asyncPreempt (preempt_amd64.s:7 PUSHQ
 * BP)"), so under contention part of a hot loop's samples read as the runtime's. Such a sample
 * belongs to the frame it interrupted (docs/decisions.md, "Go's preemption frame"). */
bool rt__frame_is_injected_leaf(struct rt_str name)
{
    static const char preempt[] = "runtime.asyncPreempt";
    return name.len == sizeof(preempt) - 1 && memcmp(name.ptr, preempt, name.len) == 0;
}
