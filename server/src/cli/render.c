/* Plain-text answers of `top` and `diff`, laid out like `go tool pprof -top`: aligned
 * columns with units, the profile type in the header, and the capacity line or its refusal. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* A unit for a column of nanosecond values, chosen from the largest (like pprof). */
struct unit {
    const char *name;
    double div;
    int decimals;
};

static struct unit pick_unit(double max_ns)
{
    if (max_ns >= 10e9)
        return (struct unit){"s", 1e9, 2};
    if (max_ns >= 10e6)
        return (struct unit){"ms", 1e6, 0};
    return (struct unit){"us", 1e3, 0};
}

static double num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Sample count as text: "n/a" when the answer has none (no counts, DESIGN §6). */
static const char *samples_text(json_t *o, char *buf, size_t n)
{
    json_t *v = json_object_get(o, "samples");
    if (!json_is_number(v))
        return "n/a";
    snprintf(buf, n, "%.0f", json_number_value(v));
    return buf;
}

static void fmt_value(char *out, size_t n, double ns, struct unit u)
{
    if (ns == 0)
        snprintf(out, n, "0");
    else
        snprintf(out, n, "%.*f%s", u.decimals, ns / u.div, u.name);
}

/* The service, the type with what it cannot see, and who sampled it (DESIGN §2, §12): one
 * line per producer, with the type it declared where RootTrace stored another. */
static void print_header(json_t *j)
{
    printf("Service: %s\nType: %s (%s)\n", str(j, "service"), str(j, "type"),
           str(j, "type_note"));
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "producers"), i, p) {
        printf("Producer: %s, %lld profile(s): %s", str(p, "agent"),
               (long long)json_integer_value(json_object_get(p, "profiles")), str(p, "method"));
        if (json_is_string(json_object_get(p, "declared_type")))
            printf(" (declared %s: %s)", str(p, "declared_type"), str(p, "note"));
        printf("\n");
    }
}

/* Where the CPU of an estimate comes from (DESIGN §7): the samples' figure, the OS's, and
 * which one the estimate takes. */
static void print_cpu_basis(json_t *in, const char *indent)
{
    const char *basis = str(in, "cpu_basis");
    if (json_is_number(json_object_get(in, "os_cpu_s")))
        printf("%sCPU by the samples %.6g s, by the OS %.6g s: the estimate uses %s (factor "
               "%.4g)\n",
               indent, num(in, "sampled_cpu_s"), num(in, "os_cpu_s"),
               strcmp(basis, "os") == 0        ? "the OS's figure"
               : strcmp(basis, "samples") == 0 ? "the samples' figure"
                                               : "the OS's figure where the sampler ticks on "
                                                 "wall time, the samples' elsewhere",
               num(in, "cpu_factor"));
    if (num(in, "unattributed_cpu_s") > 0)
        printf("%sof which %.6g s unattributed: the OS accounted it, no sample saw it\n", indent,
               num(in, "unattributed_cpu_s"));
    if (json_is_string(json_object_get(in, "cpu_note")))
        printf("%s%s\n", indent, str(in, "cpu_note"));
}

/* The inputs of one capacity estimate (DESIGN §7): the window, coverage, and each
 * instance's term 730 x cpu_i x alive_i / profiled_i / window, which sum to the figure. */
static void print_inputs(json_t *in, const char *indent)
{
    printf("%swindow %.6g s, CPU %.6g s, profiled %.6g s of alive %.6g s (coverage %.1f%%), "
           "%d instance(s) profiled, %d alive but unprofiled (their CPU is not included)\n",
           indent, num(in, "window_s"), num(in, "cpu_s"), num(in, "profiled_s"),
           num(in, "alive_s"), 100 * num(in, "coverage"), (int)num(in, "instances_profiled"),
           (int)num(in, "instances_unprofiled"));
    print_cpu_basis(in, indent);
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(in, "instances"), i, x) {
        if (num(x, "profiled_s") <= 0)
            continue;
        printf("%s  %-28s 730 x %.6g CPU-s x %.6g / %.6g s alive/profiled / %.6g s = %.4g\n",
               indent, *str(x, "instance") ? str(x, "instance") : "(unnamed)", num(x, "cpu_s"),
               num(x, "alive_s"),
               num(x, "profiled_s"), num(in, "window_s"), num(x, "vcpu_hours_per_month"));
    }
    if (json_is_true(json_object_get(in, "instances_truncated")))
        printf("%s  (more instances; see --json)\n", indent);
}

/* Capacity of a profile answer with its inputs, so it can be re-derived (DESIGN §7). */
static void print_capacity(json_t *cap, const char *why)
{
    if (!json_is_object(cap)) {
        printf("Capacity: not available: %s\n", why ? why : "no reason given");
        return;
    }
    printf("Capacity: %.4g vCPU-hours/month = sum over instances of 730 h/month x CPU-s x "
           "alive/profiled / window-s (an estimate at this window's rate, not a bill)\n",
           num(cap, "vcpu_hours_per_month"));
    print_inputs(json_object_get(cap, "inputs"), "  ");
}

static void print_agreement(json_t *a)
{
    if (!json_is_object(a))
        return;
    if (!json_object_get(a, "ratio")) { /* a diff: one per window */
        json_t *b = json_object_get(a, "baseline"), *c = json_object_get(a, "current");
        if (json_is_object(b) || json_is_object(c))
            printf("CPU agreement, baseline then current window:\n");
        if (json_is_object(b)) {
            printf("  ");
            print_agreement(b);
        }
        if (json_is_object(c)) {
            printf("  ");
            print_agreement(c);
        }
        return;
    }
    const char *uses = str(a, "capacity_uses");
    printf("CPU agreement (%s): sampled %.3f s, OS %.3f s, ratio %.3f; capacity uses %s%s%s\n",
           str(a, "scope"), num(a, "sampled_cpu_s"), num(a, "os_cpu_s"), num(a, "ratio"),
           strcmp(uses, "os") == 0        ? "the OS's figure"
           : strcmp(uses, "sampled") == 0 ? "the sampled figure"
                                          : "each profile's own basis",
           json_is_string(json_object_get(a, "warning")) ? ": " : "", str(a, "warning"));
}

void rt__cli_render_profile(json_t *j)
{
    json_t *fns = json_object_get(j, "functions");
    double total = num(j, "value_ns");
    struct unit u = pick_unit(total);
    char tot[32];
    fmt_value(tot, sizeof(tot), total, u);
    print_header(j);
    char smp[32];
    printf("Window: %s to %s\nProfiles: %d, samples: %s, total: %s\n", str(j, "from"),
           str(j, "to"), (int)num(j, "profiles"), samples_text(j, smp, sizeof(smp)), tot);
    print_capacity(json_object_get(j, "capacity"), str(j, "capacity_unavailable"));
    print_agreement(json_object_get(j, "cpu_agreement"));
    bool cpu = json_is_object(json_object_get(j, "capacity"));
    printf("%10s %7s %7s %10s %7s %s %s\n", "flat", "flat%", "sum%", "cum", "cum%",
           cpu ? " vCPU-h/mo" : "", "function");
    double sum = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fns, i, f) {
        char flat[32], cum[32], cap[32] = "";
        fmt_value(flat, sizeof(flat), num(f, "self_ns"), u);
        fmt_value(cum, sizeof(cum), num(f, "total_ns"), u);
        sum += num(f, "self_share");
        if (cpu)
            snprintf(cap, sizeof(cap), " %10.4g", num(f, "vcpu_hours_per_month"));
        printf("%10s %6.2f%% %6.2f%% %10s %6.2f%%%s  %s\n", flat, num(f, "self_share"), sum, cum,
               num(f, "total_share"), cap, str(f, "name"));
    }
    if (json_is_true(json_object_get(j, "truncated")))
        printf("(list truncated; use --limit)\n");
}

static void print_window(const char *label, json_t *w)
{
    char smp[32];
    printf("%-9s [%s, %s)  profiles %d  samples %s  total %.3f s\n", label, str(w, "from"),
           str(w, "to"), (int)num(w, "profiles"), samples_text(w, smp, sizeof(smp)),
           num(w, "value_ns") / 1e9);
}

static void print_diff_capacity(json_t *j)
{
    json_t *cap = json_object_get(j, "capacity");
    if (!json_is_object(cap)) {
        printf("Capacity: not available: %s\n", str(j, "capacity_unavailable"));
        return;
    }
    json_t *v = json_object_get(cap, "vcpu_hours_per_month");
    json_t *in = json_object_get(cap, "inputs");
    printf("Capacity: baseline %.4g -> current %.4g vCPU-hours/month (sum over instances of "
           "730 h/month x CPU-s x alive/profiled / window-s)\n",
           num(v, "base"), num(v, "cur"));
    const char *names[2] = {"base", "cur"};
    for (int k = 0; k < 2; k++) {
        json_t *x = json_object_get(in, names[k]);
        if (!json_is_object(x))
            continue;
        printf("  %s:\n", k ? "current" : "baseline");
        print_inputs(x, "    ");
    }
}

static const char *sig_text(json_t *f)
{
    json_t *s = json_object_get(f, "significant");
    return json_is_true(s) ? "yes" : json_is_false(s) ? "no" : "n/a";
}

void rt__cli_render_diff(json_t *j)
{
    json_t *issue = json_object_get(j, "issue");
    if (json_is_object(issue))
        printf("Issue %s: %s (started %s)\n", str(issue, "id"), str(issue, "title"),
               str(issue, "started_at"));
    print_header(j);
    print_window("Baseline", json_object_get(j, "baseline"));
    print_window("Current", json_object_get(j, "current"));
    size_t i;
    json_t *d, *w;
    json_array_foreach(json_object_get(j, "deploys"), i, d)
        printf("Deploy:   %s at %s (%s)\n", str(d, "version"), str(d, "at"), str(d, "source"));
    json_array_foreach(json_object_get(json_object_get(j, "quality"), "warnings"), i, w)
        printf("Warning:  %s\n", json_string_value(w));
    const char *why = str(j, "significance_unavailable");
    if (*why)
        printf("Significance: not available: %s\n", why);
    print_diff_capacity(j);
    print_agreement(json_object_get(j, "cpu_agreement"));
    bool cpu = json_is_object(json_object_get(j, "capacity"));
    printf("%8s %7s %7s %9s %9s %4s%s  %s\n", "delta_pp", "base%", "cur%", "base_smp", "cur_smp",
           "sig", cpu ? "  vCPU-h/mo base -> cur" : "", "function");
    json_t *f;
    json_array_foreach(json_object_get(j, "functions"), i, f) {
        char cap[64] = "";
        if (cpu) {
            json_t *v = json_object_get(f, "vcpu_hours_per_month");
            snprintf(cap, sizeof(cap), "  %10.4g -> %-10.4g", num(v, "base"), num(v, "cur"));
        }
        printf("%+8.2f %7.2f %7.2f %9.0f %9.0f %4s%s  %s%s\n", num(f, "delta_pp"),
               num(f, "base_share"), num(f, "cur_share"), num(f, "base_samples"),
               num(f, "cur_samples"), sig_text(f), cap, str(f, "name"),
               json_is_true(json_object_get(f, "new")) ? " (new)" : "");
    }
    if (json_is_true(json_object_get(j, "truncated")))
        printf("(list truncated; use --limit)\n");
}
