// command_compare.c: `parity compare BASE NEW`: the run-to-run comparison of two runs' results.json
// (reports/compare/compare.h): a terminal table of every combo with something to report, most severe
// first, and the verdict line; optionally the same as Markdown (a CI comment) and JSON (every combo),
// each written atomically. Exit 1 on a new failure or a time regression beyond threshold and noise.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/text_table.h"
#include "ops/core/file.h"
#include "reports/compare/compare.h"
#include "reports/compare/compare_format.h"
#include "reports/compare/compare_json.h"
#include "reports/compare/compare_markdown.h"
#include "reports/history/history.h"
#include "reports/render.h"

void parity_command_compare_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity compare BASE NEW [--threshold 10%%] [--noise-factor 3] [--ratio-drift 0.25]\n"
            "                      [--markdown FILE] [--json FILE] [--all]\n"
            "       parity compare [--db FILE] --baseline last:N NEW [options as above]\n"
            "\n"
            "Compares two runs combo by combo (matched by combo id). BASE and NEW are run directories holding\n"
            "results.json (as `parity run` writes them), or results.json files. With --baseline (or --db),\n"
            "BASE is the results history's baseline instead (docs/history.md): per combo the median time of\n"
            "the last N runs of NEW's suite on NEW's device, the largest noise among them, and the latest\n"
            "run's statuses and ratios. Compare before `parity history add NEW`: a NEW already in the history\n"
            "is part of its own baseline.\n"
            "\n"
            "Reported per combo: status changes (new failures first: NEW fail/error where BASE was not\n"
            "failing, or a new combo that fails; then fixed, support changes to or from not supported /\n"
            "excluded, combos in one run only), the worst tolerance ratio BASE -> NEW with its metric (flagged\n"
            "when it grows by more than the ratio drift or crosses 1), and the time change against its noise\n"
            "band.\n"
            "\n"
            "Time rule: with r = NEW median / BASE median and each run's noise n (median absolute deviation /\n"
            "median of its samples), the band is max(threshold, k * sqrt(n_base^2 + n_new^2)); r - 1 beyond\n"
            "it is a regression, 1/r - 1 beyond it a speed-up, anything else the same. Combos untimed in\n"
            "either run have no time verdict. Whole runs move: with 8 or more combos timed in both runs, r is\n"
            "taken relative to the runs' median ratio, the robust spread of the ratios joins the noise, and\n"
            "the median ratio itself is judged once against the threshold (a run-wide regression).\n"
            "docs/compare.md says why.\n"
            "\n"
            "options:\n"
            "  --threshold T      relative change a time verdict needs at least: 10%% or 0.1 (default 10%%)\n"
            "  --noise-factor K   k above (default 3)\n"
            "  --ratio-drift D    growth of the worst tolerance ratio that is flagged (default 0.25)\n"
            "  --markdown FILE    also write the comparison as Markdown (verdict line first), for CI comments\n"
            "  --json FILE        also write every combo's verdicts as JSON\n"
            "  --all              list every combo in the table, not only those with something to report\n"
            "  --baseline last:N  BASE from the results history: the median of its last N runs (1..64)\n"
            "  --db FILE          the history (default: $" PARITY_HISTORY_DB_ENV ", else " PARITY_HISTORY_DEFAULT_DB ");\n"
            "                     alone it means --baseline last:5\n"
            "\n"
            "exit status: 0 no new failure and no time regression (fixed combos, speed-ups, support changes\n"
            "               and missing combos are reported only)\n"
            "             1 a new failure or a time regression\n"
            "             2 usage error\n"
            "             3 BASE or NEW results.json missing or malformed (the message names the file and\n"
            "               field), a duplicate combo id, --markdown / --json cannot be written, or (--db)\n"
            "               no history database, not a parity history, or no run of NEW's suite and device\n");
}

typedef struct compare_arguments {
    const char *base, *new_run, *markdown, *json;
    bool all;
    bool from_history;  // --db: BASE is the history's baseline of NEW's suite and device
    const char *db;     // --db's file (or the default)
    int baseline_runs;  // --baseline last:N
    char base_label[1200];
    parity_compare_options options;
} compare_arguments;

// "10%" (percent) or "0.1" (a fraction); a bare number >= 1 is refused as ambiguous.
static bool parse_relative(const char *text, bool percent_allowed, double *out) {
    char *end;
    double value = strtod(text, &end);
    if (end == text) return false;
    if (percent_allowed && *end == '%') {
        value /= 100;
        end++;
    } else if (percent_allowed && value >= 1) return false;
    if (*end || !isfinite(value) || value < 0) return false;
    *out = value;
    return true;
}

static int parse_arguments(int argc, char **argv, compare_arguments *arguments) {
    arguments->options = parity_compare_default_options();
    const char *positionals[3] = {NULL, NULL, NULL};
    int positional_count = 0;
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--threshold")) {
            if (value && !parse_relative(value, true, &arguments->options.threshold)) {
                fprintf(stderr, "parity compare: --threshold '%s' (write a percentage like 10%% or a fraction like 0.1)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--noise-factor")) {
            if (value && !parse_relative(value, false, &arguments->options.noise_factor)) {
                fprintf(stderr, "parity compare: --noise-factor '%s' (a number >= 0)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--ratio-drift")) {
            if (value && !parse_relative(value, false, &arguments->options.ratio_drift)) {
                fprintf(stderr, "parity compare: --ratio-drift '%s' (a number >= 0)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--markdown")) arguments->markdown = value;
        else if (OPTION("--json")) arguments->json = value;
        else if (strcmp(argv[i], "--all") == 0) arguments->all = true;
        else if (OPTION("--db")) {
            arguments->from_history = true;
            arguments->db = value;
        } else if (OPTION("--baseline")) {
            arguments->from_history = true;
            char *end = NULL;
            long runs = value && strncmp(value, "last:", 5) == 0 ? strtol(value + 5, &end, 10) : 0;
            if (value && (!end || *end || end == value + 5 || runs < 1 || runs > 64)) {
                fprintf(stderr, "parity compare: --baseline '%s' (write last:N, N from 1 to 64)\n", value);
                return PARITY_EXIT_CONFIG;
            }
            if (value) arguments->baseline_runs = (int)runs;
        }
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "parity compare: unknown option '%s' (see parity compare --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        } else if (positional_count < 3) positionals[positional_count++] = argv[i];
        else {
            fprintf(stderr, "parity compare: two runs, BASE and NEW; got a third, '%s' (see parity compare --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (positional_count == 3 || (arguments->from_history && positional_count > 1)) {
        if (arguments->from_history)
            fprintf(stderr, "parity compare: with --baseline / --db, one run (NEW): the history is BASE\n");
        else
            fprintf(stderr, "parity compare: two runs, BASE and NEW; got a third, '%s' (see parity compare --help)\n",
                    positionals[2]);
        return PARITY_EXIT_CONFIG;
    }
    if (arguments->from_history) { // one run: NEW
        arguments->new_run = positional_count ? positionals[0] : NULL;
        if (!arguments->db) arguments->db = getenv(PARITY_HISTORY_DB_ENV);
        if (!arguments->db || !arguments->db[0]) arguments->db = PARITY_HISTORY_DEFAULT_DB;
        if (!arguments->baseline_runs) arguments->baseline_runs = 5;
    } else {
        arguments->base = positional_count > 0 ? positionals[0] : NULL;
        arguments->new_run = positional_count > 1 ? positionals[1] : NULL;
    }
    if (!arguments->new_run) {
        parity_command_compare_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}

// A run directory's results.json, or the file itself.
static parity_error *read_run(const char *run, parity_results *out) {
    struct stat info;
    char path[4200];
    if (stat(run, &info) == 0 && S_ISDIR(info.st_mode)) snprintf(path, sizeof path, "%s/%s", run, PARITY_REPORT_RESULTS_JSON);
    else snprintf(path, sizeof path, "%s", run);
    return parity_results_read_json(path, out);
}

static const char *verdict_color(const char *cell) {
    if (strstr(cell, "NEW FAILURE") || strstr(cell, "SLOWER")) return "\033[31m";
    if (strstr(cell, "fixed") || strstr(cell, "faster")) return "\033[32m";
    return "\033[33m";
}

static const parity_comparison *sorting; // for qsort: rank, then the comparison's order

static int by_rank(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int rank_x = parity_combo_comparison_rank(&sorting->combos[x]), rank_y = parity_combo_comparison_rank(&sorting->combos[y]);
    if (rank_x != rank_y) return rank_x - rank_y;
    return (x > y) - (x < y);
}

static void print_context(const char *which, const char *label, const parity_results_context *context) {
    printf("%s %s: suite %s, git %.12s, %s, %s\n", which, label, context->suite[0] ? context->suite : "?",
           context->git_sha[0] ? context->git_sha : "?", context->device[0] ? context->device : "?",
           context->started[0] ? context->started : "?");
}

static parity_error *print_table(const parity_comparison *comparison, bool all) {
    size_t *order = malloc((comparison->combo_count ? comparison->combo_count : 1) * sizeof *order), count = 0;
    if (!order) return PARITY_ERROR(PARITY_ERROR_MEMORY, "compare: out of memory");
    for (size_t i = 0; i < comparison->combo_count; i++)
        if (all || parity_combo_comparison_notable(&comparison->combos[i])) order[count++] = i;
    sorting = comparison;
    qsort(order, count, sizeof *order, by_rank);
    sorting = NULL;
    static const char *const headers[] = {"combo", "status", "time", "change", "band (noise base, new)", "worst ratio", "verdict"};
    parity_text_table *table = parity_text_table_new(7, headers);
    parity_error *error = table ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "compare: out of memory");
    for (size_t row = 0; !error && row < count; row++) {
        const parity_combo_comparison *combo = &comparison->combos[order[row]];
        char status[64], time[96], change[32], band[96], ratio[320], verdict[128];
        const char *cells[] = {combo->id,
                               parity_compare_format_status(combo, status, sizeof status),
                               parity_compare_format_time(combo, time, sizeof time),
                               parity_compare_format_change(combo, change, sizeof change),
                               parity_compare_format_band(combo, band, sizeof band),
                               parity_compare_format_ratio(combo, ratio, sizeof ratio),
                               parity_compare_format_verdict(combo, verdict, sizeof verdict)};
        error = parity_text_table_add_row(table, cells);
    }
    if (!error && count) {
        parity_text_table_set_color(table, 6, verdict_color);
        parity_text_table_print(table, stdout, parity_cli_use_color(stdout));
    }
    parity_text_table_free(table);
    free(order);
    return error;
}

static parity_error *write_outputs(const compare_arguments *arguments, const parity_comparison *comparison) {
    if (arguments->markdown) {
        PARITY_TRY(parity_make_parent_directories(arguments->markdown));
        PARITY_TRY(parity_compare_write_markdown(arguments->markdown, comparison, arguments->base, arguments->new_run));
    }
    if (arguments->json) {
        PARITY_TRY(parity_make_parent_directories(arguments->json));
        PARITY_TRY(parity_compare_write_json(arguments->json, comparison, arguments->base, arguments->new_run));
    }
    return NULL;
}

int parity_command_compare(int argc, char **argv) {
    compare_arguments arguments = {0};
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;
    parity_results base = {0}, new_results = {0};
    parity_comparison comparison = {0};
    parity_error *error = read_run(arguments.new_run, &new_results);
    if (!error && arguments.from_history) {
        error = parity_history_baseline(arguments.db, new_results.context.suite, new_results.context.device,
                                        arguments.baseline_runs, &base);
        if (error)
            error = parity_error_wrap(error, __FILE__, __LINE__, "the baseline of suite '%s' on '%s' in %s",
                                      new_results.context.suite, new_results.context.device, arguments.db);
        snprintf(arguments.base_label, sizeof arguments.base_label, "%s (last %d runs)", arguments.db, arguments.baseline_runs);
        arguments.base = arguments.base_label;
    } else if (!error) {
        error = read_run(arguments.base, &base);
    }
    if (!error) error = parity_compare_results(&base, &new_results, &arguments.options, &comparison);
    parity_results_release(&base);
    parity_results_release(&new_results);
    if (!error) error = write_outputs(&arguments, &comparison);
    if (!error) {
        print_context("BASE", arguments.base, &comparison.base_context);
        print_context("NEW ", arguments.new_run, &comparison.new_context);
        if (strcmp(comparison.base_context.device, comparison.new_context.device) != 0)
            printf("note: the runs' devices differ ('%s' vs '%s'): times compare across machines\n", comparison.base_context.device,
                   comparison.new_context.device);
        if (comparison.run.verdict != PARITY_TIME_UNTIMED)
            printf("the run moved by %+.1f%% at the median of %zu combos timed in both (spread %.1f%%); combos are judged "
                   "beyond that\n",
                   100 * comparison.run.change, comparison.run.timed, 100 * comparison.run.spread);
        if (comparison.new_context.interrupted[0])
            printf("note: NEW was interrupted (%s): combos it did not reach are missing from it\n", comparison.new_context.interrupted);
        error = print_table(&comparison, arguments.all);
    }
    if (error) {
        parity_comparison_release(&comparison);
        return parity_cli_report_error("compare", error);
    }
    if (!arguments.all && comparison.counts.unchanged && comparison.counts.unchanged < comparison.counts.combos)
        printf("%zu combos with nothing to report (--all lists them)\n", comparison.counts.unchanged);
    if (arguments.markdown) printf("wrote %s\n", arguments.markdown);
    if (arguments.json) printf("wrote %s\n", arguments.json);
    char verdict[1024];
    printf("%s\n", parity_comparison_verdict(&comparison, verdict, sizeof verdict));
    status = parity_comparison_failed(&comparison) ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK;
    parity_comparison_release(&comparison);
    return status;
}
