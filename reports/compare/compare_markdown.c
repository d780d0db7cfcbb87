// compare_markdown.c: the Markdown of compare_markdown.h.
#include "reports/compare/compare_markdown.h"

#include <stdbool.h>
#include <stdio.h>

#include "ops/core/file.h"
#include "reports/compare/compare_format.h"

typedef bool (*section_filter)(const parity_combo_comparison *combo);

static bool is_new_failure(const parity_combo_comparison *c) { return c->status_change == PARITY_STATUS_NEW_FAILURE; }
static bool is_regression(const parity_combo_comparison *c) { return c->time.verdict == PARITY_TIME_REGRESSION; }
static bool is_fixed(const parity_combo_comparison *c) { return c->status_change == PARITY_STATUS_FIXED; }
static bool is_status_move(const parity_combo_comparison *c) {
    return c->status_change == PARITY_STATUS_SUPPORT_CHANGED || c->status_change == PARITY_STATUS_FAILURE_CHANGED;
}
static bool is_one_run(const parity_combo_comparison *c) {
    return c->status_change == PARITY_STATUS_ONLY_BASE || c->status_change == PARITY_STATUS_ONLY_NEW;
}
static bool is_speedup(const parity_combo_comparison *c) { return c->time.verdict == PARITY_TIME_SPEEDUP; }
static bool is_drift(const parity_combo_comparison *c) { return c->ratio_drift; }

enum { COLUMNS_STATUS, COLUMNS_TIME, COLUMNS_RATIO };

typedef struct section {
    const char *title;
    section_filter filter;
    int columns;
} section;

static const section sections[] = {
    {"New failures", is_new_failure, COLUMNS_STATUS},
    {"Time regressions", is_regression, COLUMNS_TIME},
    {"Fixed", is_fixed, COLUMNS_STATUS},
    {"Support and failure changes", is_status_move, COLUMNS_STATUS},
    {"In one run only", is_one_run, COLUMNS_STATUS},
    {"Speed-ups", is_speedup, COLUMNS_TIME},
    {"Tolerance ratio drift", is_drift, COLUMNS_RATIO},
};

static void run_line(parity_text *text, const char *which, const char *label, const parity_results_context *context) {
    parity_text_appendf(text, "- %s: ", which);
    parity_text_append_markdown_code(text, label);
    parity_text_append(text, " (suite ");
    parity_text_append_markdown_cell(text, context->suite[0] ? context->suite : "?");
    parity_text_appendf(text, ", git %.12s, ", context->git_sha[0] ? context->git_sha : "?");
    parity_text_append_markdown_cell(text, context->device[0] ? context->device : "?");
    parity_text_appendf(text, ", %s)\n", context->started[0] ? context->started : "?");
}

static void header_row(parity_text *text, int columns) {
    if (columns == COLUMNS_TIME) parity_text_append(text, "| combo | time | change | band (noise base, new) | status |\n|---|---|---|---|---|\n");
    else if (columns == COLUMNS_RATIO) parity_text_append(text, "| combo | worst ratio (metric) | status |\n|---|---|---|\n");
    else parity_text_append(text, "| combo | status | worst ratio (metric) | reason |\n|---|---|---|---|\n");
}

static void row(parity_text *text, const parity_combo_comparison *combo, int columns) {
    char a[512], b[512], c[512];
    parity_text_append(text, "| ");
    parity_text_append_markdown_code(text, combo->id);
    if (columns == COLUMNS_TIME) {
        parity_text_appendf(text, " | %s | %s | ", parity_compare_format_time(combo, a, sizeof a),
                            parity_compare_format_change(combo, b, sizeof b));
        parity_text_append_markdown_cell(text, parity_compare_format_band(combo, c, sizeof c));
        parity_text_append(text, " | ");
        parity_text_append_markdown_cell(text, parity_compare_format_status(combo, a, sizeof a));
    } else if (columns == COLUMNS_RATIO) {
        parity_text_append(text, " | ");
        parity_text_append_markdown_cell(text, parity_compare_format_ratio(combo, a, sizeof a));
        parity_text_append(text, " | ");
        parity_text_append_markdown_cell(text, parity_compare_format_status(combo, b, sizeof b));
    } else {
        parity_text_append(text, " | ");
        parity_text_append_markdown_cell(text, parity_compare_format_status(combo, a, sizeof a));
        parity_text_append(text, " | ");
        parity_text_append_markdown_cell(text, parity_compare_format_ratio(combo, b, sizeof b));
        parity_text_append(text, " | ");
        parity_text_append_markdown_cell(text, combo->reason[0] ? combo->reason : "-");
    }
    parity_text_append(text, " |\n");
}

void parity_compare_markdown(parity_text *text, const parity_comparison *comparison, const char *base_label,
                             const char *new_label) {
    char verdict[1024];
    parity_text_appendf(text, "**parity compare: %s**\n\n", parity_comparison_verdict(comparison, verdict, sizeof verdict));
    run_line(text, "BASE", base_label, &comparison->base_context);
    run_line(text, "NEW", new_label, &comparison->new_context);
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
        size_t matches = 0;
        for (size_t i = 0; i < comparison->combo_count; i++) matches += sections[s].filter(&comparison->combos[i]);
        if (!matches) continue;
        parity_text_appendf(text, "\n### %s (%zu)\n\n", sections[s].title, matches);
        header_row(text, sections[s].columns);
        size_t shown = 0;
        for (size_t i = 0; i < comparison->combo_count && shown < PARITY_COMPARE_MARKDOWN_MAX_ROWS; i++)
            if (sections[s].filter(&comparison->combos[i])) {
                row(text, &comparison->combos[i], sections[s].columns);
                shown++;
            }
        if (shown < matches) parity_text_appendf(text, "\n... and %zu more (see the JSON output)\n", matches - shown);
    }
    const parity_compare_options *options = &comparison->options;
    if (comparison->run.verdict != PARITY_TIME_UNTIMED)
        parity_text_appendf(text,
                            "\nThe run moved by %+.1f%% at the median of its %zu combos timed in both runs (spread %.1f%%): "
                            "each combo is judged on its change beyond that, the median change once for the whole run.\n",
                            100 * comparison->run.change, comparison->run.timed, 100 * comparison->run.spread);
    parity_text_appendf(text,
                        "\nRule: a time change counts when it leaves max(%.0f%%, %g x sqrt(noise_base^2 + noise_new^2 + "
                        "spread^2)) (noise = MAD / median of each run's samples, spread = the run's, docs/compare.md); a "
                        "worst tolerance ratio drifts when it grows by more than %g or crosses 1. %zu of %zu combos timed "
                        "in both runs; %zu with nothing to report.\n",
                        100 * options->threshold, options->noise_factor, options->ratio_drift, comparison->counts.timed,
                        comparison->counts.combos, comparison->counts.unchanged);
}

parity_error *parity_compare_write_markdown(const char *path, const parity_comparison *comparison, const char *base_label,
                                            const char *new_label) {
    parity_text text = {0};
    parity_compare_markdown(&text, comparison, base_label, new_label);
    parity_error *error = parity_text_check(&text, path);
    if (!error) error = parity_write_file_atomic(path, text.data, text.length, true);
    parity_text_free(&text);
    return error;
}
