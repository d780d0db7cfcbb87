// command_history.c: `parity history add | list | show`: ingesting run directories and bench
// reports into the results history (reports/history/history.h, SQLite) and looking inside it.
// The history is what `parity compare --db` and `parity dashboard` read; docs/history.md.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/text_table.h"
#include "reports/history/history.h"

void parity_command_history_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity history add RUN_DIR|FILE.json... [--db FILE]\n"
            "       parity history list [--suite S] [--db FILE]\n"
            "       parity history show RUN_ID [--db FILE]\n"
            "\n"
            "The results history: a SQLite database of runs, so runs can be compared and drawn over time.\n"
            "\n"
            "add   ingests each argument: a run directory (its results.json), a results.json, or a bench\n"
            "      report (parity bench ... --output FILE.json). Each is one transaction: it is in the history\n"
            "      whole or not at all. A run already there (same suite, git sha, started, host and device; a\n"
            "      bench report: same device and content) is skipped with \"already in the history\". The\n"
            "      database is created when missing. Per combo it keeps status, worst tolerance ratio, timing,\n"
            "      and the loss / aux_loss / grad_norm metrics and the worst one (results.json keeps them all).\n"
            "list  prints the runs, oldest first: id, date, suite, device, git sha, combos pass / fail /\n"
            "      not supported (bench reports: their row count)\n"
            "show  prints one run: its context, then per combo its status, worst ratio, median ms and noise\n"
            "      (a bench report: per row its time and rate)\n"
            "\n"
            "  --db FILE    the database (default: $" PARITY_HISTORY_DB_ENV ", else " PARITY_HISTORY_DEFAULT_DB ")\n"
            "  --suite S    list: only runs of suite S\n"
            "\n"
            "Several writers may add at once (WAL, a busy timeout: a second writer waits). A database of a\n"
            "newer schema than this parity is refused; an older one is migrated on open.\n"
            "\n"
            "exit status: 0 ok (every argument added or already there)\n"
            "             2 usage error, or show of a run id that is not in the history\n"
            "             3 an unreadable or malformed results.json / bench report (the message names the file\n"
            "               and field; the other arguments are still added), a database that is missing (list,\n"
            "               show), not a parity history or of a newer schema, or a database failure\n");
}

typedef struct history_arguments {
    const char *subcommand, *db, *suite;
    const char **paths;
    int path_count;
} history_arguments;

static int parse_arguments(int argc, char **argv, history_arguments *arguments) {
    arguments->db = getenv(PARITY_HISTORY_DB_ENV);
    if (!arguments->db || !arguments->db[0]) arguments->db = PARITY_HISTORY_DEFAULT_DB;
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--db")) arguments->db = value;
        else if (OPTION("--suite")) arguments->suite = value;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "parity history: unknown option '%s' (see parity history --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        } else if (!arguments->subcommand) arguments->subcommand = argv[i];
        else arguments->paths[arguments->path_count++] = argv[i];
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (!arguments->subcommand) {
        parity_command_history_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    if (arguments->suite && strcmp(arguments->subcommand, "list") != 0) {
        fprintf(stderr, "parity history: --suite is an option of list only (see parity history --help)\n");
        return PARITY_EXIT_CONFIG;
    }
    if (!arguments->db[0]) {
        fprintf(stderr, "parity history: --db needs a file name\n");
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}

static int history_add(const history_arguments *arguments) {
    if (arguments->path_count == 0) {
        fprintf(stderr, "parity history add: name at least one run directory or file (see parity history --help)\n");
        return PARITY_EXIT_CONFIG;
    }
    parity_history *history;
    parity_error *error = parity_history_open(arguments->db, true, &history);
    if (error) return parity_cli_report_error("history add", error);
    int status = PARITY_EXIT_OK;
    for (int i = 0; i < arguments->path_count; i++) {
        parity_history_added added;
        error = parity_history_add_path(history, arguments->paths[i], &added);
        if (error) {
            int code = parity_cli_report_error("history add", error);
            if (code > status) status = code;
            continue;
        }
        const char *what = added.kind == PARITY_HISTORY_BENCH ? "bench rows" : "combos";
        if (added.added) printf("added %s as run %" PRId64 " (%zu %s)\n", arguments->paths[i], added.run_id, added.rows, what);
        else printf("%s: already in the history as run %" PRId64 "; nothing added\n", arguments->paths[i], added.run_id);
    }
    parity_history_close(history);
    return status;
}

static void short_sha(const char *sha, char *out, size_t size) { snprintf(out, size, "%.12s", sha[0] ? sha : "-"); }

static int history_list(const history_arguments *arguments) {
    if (arguments->path_count) {
        fprintf(stderr, "parity history list: unexpected argument '%s' (see parity history --help)\n", arguments->paths[0]);
        return PARITY_EXIT_CONFIG;
    }
    parity_history *history;
    parity_error *error = parity_history_open(arguments->db, false, &history);
    if (error) return parity_cli_report_error("history list", error);
    parity_history_run *runs;
    size_t count;
    error = parity_history_list(history, arguments->suite, &runs, &count);
    parity_history_close(history);
    if (error) return parity_cli_report_error("history list", error);
    const char *headers[] = {"id", "date", "suite", "device", "git sha", "pass", "fail", "not supported"};
    parity_text_table *table = parity_text_table_new(8, headers);
    if (!table) {
        free(runs);
        return parity_cli_report_error("history list", PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory"));
    }
    for (size_t i = 0; !error && i < count; i++) {
        const parity_history_run *run = &runs[i];
        char id[24], sha[16], pass[24], fail[24], unsupported[48];
        snprintf(id, sizeof id, "%" PRId64, run->id);
        short_sha(run->git_sha, sha, sizeof sha);
        if (run->kind == PARITY_HISTORY_BENCH) {
            snprintf(pass, sizeof pass, "-");
            snprintf(fail, sizeof fail, "-");
            snprintf(unsupported, sizeof unsupported, "(bench: %zu rows)", run->bench_rows);
        } else {
            snprintf(pass, sizeof pass, "%zu", run->counts[PARITY_COMBO_PASS]);
            snprintf(fail, sizeof fail, "%zu", run->counts[PARITY_COMBO_FAIL] + run->counts[PARITY_COMBO_ERROR]);
            snprintf(unsupported, sizeof unsupported, "%zu", run->counts[PARITY_COMBO_NOT_SUPPORTED]);
        }
        const char *cells[] = {id, run->started, run->suite, run->device, sha, pass, fail, unsupported};
        error = parity_text_table_add_row(table, cells);
    }
    free(runs);
    if (!error) {
        if (count == 0) printf("no runs%s%s in %s\n", arguments->suite ? " of suite " : "", arguments->suite ? arguments->suite : "", arguments->db);
        else parity_text_table_print(table, stdout, parity_cli_use_color(stdout));
    }
    parity_text_table_free(table);
    return error ? parity_cli_report_error("history list", error) : PARITY_EXIT_OK;
}

static void format_ms(double ms, char *out, size_t size) {
    if (isnan(ms)) snprintf(out, size, "-");
    else snprintf(out, size, "%.4g", ms);
}

static void format_noise(double noise, char *out, size_t size) {
    if (isnan(noise)) snprintf(out, size, "-");
    else snprintf(out, size, "+/-%.1f%%", 100.0 * noise);
}

static parity_error *show_combos(parity_history *history, int64_t run_id) {
    parity_results results;
    PARITY_TRY(parity_history_load_run(history, run_id, &results));
    const parity_results_context *c = &results.context;
    printf("suite %s, git %s, started %s, finished %s\nhost %s, device %s%s%s\ncommand: %s\n\n", c->suite, c->git_sha[0] ? c->git_sha : "-",
           c->started, c->finished[0] ? c->finished : "-", c->host[0] ? c->host : "-", c->device, c->interrupted[0] ? ", interrupted by " : "",
           c->interrupted, c->command);
    const char *headers[] = {"status", "worst ratio", "worst metric", "median ms", "noise", "combo"};
    parity_text_table *table = parity_text_table_new(6, headers);
    if (!table) {
        parity_results_release(&results);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory");
    }
    parity_text_table_set_color(table, 0, parity_text_table_status_color);
    parity_error *error = NULL;
    for (size_t i = 0; !error && i < results.combo_count; i++) {
        const parity_combo_result *combo = &results.combos[i];
        // the worst metric is the one metric kept with a ':' in its name, or the largest ratio
        const parity_metric *worst = NULL;
        for (size_t m = 0; m < combo->metric_count; m++) {
            const parity_metric *metric = &combo->metrics[m];
            if (!worst || isnan(metric->ratio) || (!isnan(worst->ratio) && metric->ratio > worst->ratio)) worst = metric;
            if (isnan(worst->ratio)) break;
        }
        char ratio[32] = "-", median[32], noise[32];
        if (worst) snprintf(ratio, sizeof ratio, "%.3g", worst->ratio);
        format_ms(combo->median_ms, median, sizeof median);
        format_noise(combo->noise, noise, sizeof noise);
        const char *status = parity_combo_status_name(combo->status);
        const char *cells[] = {strcmp(status, "not_supported") == 0 ? "not supported" : status, ratio, worst ? worst->name : "-", median,
                               noise, combo->id};
        error = parity_text_table_add_row(table, cells);
    }
    if (!error) parity_text_table_print(table, stdout, parity_cli_use_color(stdout));
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(&results, counts);
    if (!error)
        printf("\n%zu combos: %zu pass, %zu fail, %zu not supported, %zu error, %zu excluded\n", results.combo_count, counts[PARITY_COMBO_PASS],
               counts[PARITY_COMBO_FAIL], counts[PARITY_COMBO_NOT_SUPPORTED], counts[PARITY_COMBO_ERROR], counts[PARITY_COMBO_EXCLUDED]);
    parity_text_table_free(table);
    parity_results_release(&results);
    return error;
}

static parity_error *show_bench(parity_history *history, const parity_history_run *run) {
    parity_history_bench_row *rows;
    size_t count;
    PARITY_TRY(parity_history_bench_rows(history, run->id, &rows, &count));
    printf("bench report on %s, dated %s\nsource: %s\n\n", run->device, run->started, run->source);
    const char *headers[] = {"op", "pass", "shape", "dtype", "backend", "median ms", "noise", "rate"};
    parity_text_table *table = parity_text_table_new(8, headers);
    parity_error *error = table ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory");
    for (size_t i = 0; !error && i < count; i++) {
        const parity_history_bench_row *row = &rows[i];
        char median[32], noise[32], rate[300];
        format_ms(row->median_ms, median, sizeof median);
        format_noise(row->noise, noise, sizeof noise);
        if (!row->ok) snprintf(rate, sizeof rate, "%s", row->status);
        else if (row->teraflops > 0) snprintf(rate, sizeof rate, "%.1f TFLOP/s", row->teraflops);
        else snprintf(rate, sizeof rate, "%.0f GB/s", row->gigabytes_per_second);
        const char *cells[] = {row->op, row->pass, row->shape, row->dtype, row->backend, median, noise, rate};
        error = parity_text_table_add_row(table, cells);
    }
    if (!error) parity_text_table_print(table, stdout, parity_cli_use_color(stdout));
    parity_text_table_free(table);
    free(rows);
    return error;
}

static int history_show(const history_arguments *arguments) {
    if (arguments->path_count != 1) {
        fprintf(stderr, "parity history show: name one run id (see parity history list)\n");
        return PARITY_EXIT_CONFIG;
    }
    char *end;
    errno = 0;
    long long id = strtoll(arguments->paths[0], &end, 10);
    if (errno || *end || end == arguments->paths[0] || id < 1) {
        fprintf(stderr, "parity history show: '%s' is not a run id (a positive number, see parity history list)\n", arguments->paths[0]);
        return PARITY_EXIT_CONFIG;
    }
    parity_history *history;
    parity_error *error = parity_history_open(arguments->db, false, &history);
    if (error) return parity_cli_report_error("history show", error);
    parity_history_run run;
    error = parity_history_get_run(history, id, &run);
    if (!error) printf("run %lld of %s\n", id, arguments->db);
    if (!error) error = run.kind == PARITY_HISTORY_BENCH ? show_bench(history, &run) : show_combos(history, id);
    parity_history_close(history);
    return error ? parity_cli_report_error("history show", error) : PARITY_EXIT_OK;
}

int parity_command_history(int argc, char **argv) {
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths) return parity_cli_report_error("history", PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory"));
    history_arguments arguments = {.paths = paths};
    int status = parse_arguments(argc, argv, &arguments);
    if (status == PARITY_EXIT_OK) {
        if (strcmp(arguments.subcommand, "add") == 0) status = history_add(&arguments);
        else if (strcmp(arguments.subcommand, "list") == 0) status = history_list(&arguments);
        else if (strcmp(arguments.subcommand, "show") == 0) status = history_show(&arguments);
        else {
            fprintf(stderr, "parity history: unknown subcommand '%s' (add, list or show; see parity history --help)\n", arguments.subcommand);
            status = PARITY_EXIT_CONFIG;
        }
    }
    free(paths);
    return status;
}
