// test_compare.c: `parity compare` and its library (reports/compare/): crafted pairs of runs built
// from results_sample.h, one table row per situation (a 20% slowdown over 2% noise is a regression,
// over 15% noise per run it is not, 5% is under the threshold, a new failure fails the comparison, a
// fixed failure, a missing combo, a new combo and a support change are reported only, identical runs
// say "no change"), the time rule's symmetry, bad inputs, the Markdown and JSON writers, and the CLI
// on two run directories written with parity_results_write_json.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "assert_ok.h"
#include "cli_runner.h"
#include "ops/core/file.h"
#include "reports/compare/compare.h"
#include "reports/report_analysis.h"
#include "reports/compare/compare_json.h"
#include "reports/compare/compare_markdown.h"
#include "reports/results.h"
#include "results_sample.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define TIMED "qwen3_tiny/attn=sdpa,ce=eager/bf16/cpu"

// ---- crafting runs ----

static parity_combo_result *find_combo(parity_results *results, const char *id) {
    for (size_t i = 0; i < results->combo_count; i++)
        if (strcmp(results->combos[i].id, id) == 0) return &results->combos[i];
    cr_assert_fail("no combo %s in the sample", id);
    return NULL;
}

// Seven samples around `median` whose median absolute deviation / median is exactly `noise`.
static void set_timing(parity_results *results, const char *id, double median, double noise) {
    parity_combo_result *combo = find_combo(results, id);
    const double offsets[7] = {-1, -1, 0, 0, 0, 1, 1};
    double samples[7];
    for (int s = 0; s < 7; s++) samples[s] = median * (1 + noise * offsets[s]);
    cr_assert_null(parity_combo_set_samples(combo, samples, 7));
    combo->median_ms = median;
    combo->noise = noise;
}

static void remove_combo(parity_results *results, const char *id) {
    parity_combo_result *combo = find_combo(results, id);
    free(combo->metrics);
    free(combo->samples_ms);
    size_t index = (size_t)(combo - results->combos);
    memmove(combo, combo + 1, (results->combo_count - index - 1) * sizeof *combo);
    results->combo_count--;
}

static void scale_ratios(parity_combo_result *combo, double factor) {
    for (size_t i = 0; i < combo->metric_count; i++) combo->metrics[i].ratio *= factor;
}

static void slower_20_low_noise(parity_results *base, parity_results *new_run) {
    set_timing(base, TIMED, 10.0, 0.02);
    set_timing(new_run, TIMED, 12.0, 0.02);
}
static void slower_20_high_noise(parity_results *base, parity_results *new_run) {
    set_timing(base, TIMED, 10.0, 0.15);
    set_timing(new_run, TIMED, 12.0, 0.15);
}
static void slower_5_quiet(parity_results *base, parity_results *new_run) {
    set_timing(base, TIMED, 10.0, 0.001);
    set_timing(new_run, TIMED, 10.5, 0.001);
}
static void faster_20(parity_results *base, parity_results *new_run) {
    set_timing(base, TIMED, 12.0, 0.02);
    set_timing(new_run, TIMED, 10.0, 0.02);
}
static void noise_from_samples(parity_results *base, parity_results *new_run) { // noise unrecorded: the samples' MAD
    set_timing(base, TIMED, 10.0, 0.15);
    set_timing(new_run, TIMED, 12.0, 0.15);
    find_combo(base, TIMED)->noise = NAN;
    find_combo(new_run, TIMED)->noise = NAN;
}
static void untimed_in_new(parity_results *base, parity_results *new_run) {
    set_timing(base, TIMED, 10.0, 0.02);
    find_combo(new_run, TIMED)->median_ms = NAN;
}
static void new_failure(parity_results *base, parity_results *new_run) {
    parity_combo_result *combo = find_combo(new_run, TIMED);
    combo->status = PARITY_COMBO_FAIL;
    snprintf(combo->reason, sizeof combo->reason, "loss: error 2.0x its tolerance");
    scale_ratios(combo, 10);
}
static void new_error(parity_results *base, parity_results *new_run) {
    find_combo(new_run, "qwen3_tiny/attn=flash_attention_3,ce=eager/bf16/cpu")->status = PARITY_COMBO_ERROR;
}
static void fixed(parity_results *base, parity_results *new_run) {
    parity_combo_result *combo = find_combo(new_run, SAMPLE_FAILING_COMBO);
    combo->status = PARITY_COMBO_PASS;
    combo->reason[0] = '\0';
    scale_ratios(combo, 0.1);
}
static void missing_from_new(parity_results *base, parity_results *new_run) { remove_combo(new_run, TIMED); }
static void only_in_new(parity_results *base, parity_results *new_run) { remove_combo(base, TIMED); }
static void failing_only_in_new(parity_results *base, parity_results *new_run) { remove_combo(base, SAMPLE_FAILING_COMBO); }
static void lost_support(parity_results *base, parity_results *new_run) {
    parity_combo_result *combo = find_combo(new_run, TIMED);
    combo->status = PARITY_COMBO_NOT_SUPPORTED;
    combo->metric_count = 0;
    combo->median_ms = NAN;
}
static void ratio_grows(parity_results *base, parity_results *new_run) { // 0.21-ish -> 0.63-ish, still passing
    scale_ratios(find_combo(new_run, TIMED), 3);
}
static void ratio_grows_a_little(parity_results *base, parity_results *new_run) { scale_ratios(find_combo(new_run, TIMED), 1.5); }
static void identical(parity_results *base, parity_results *new_run) {}

typedef struct compare_case {
    const char *label;
    void (*craft)(parity_results *base, parity_results *new_run);
    double threshold;                // 0: the default
    const char *id;                  // the combo the row is about
    parity_status_change change;
    parity_time_verdict time;
    bool drift;
    bool failed;                     // the comparison fails (exit 1)
    const char *verdict;             // the verdict line starts with this
} compare_case;

static const compare_case compare_cases[] = {
    {"20% slower, 2% noise each", slower_20_low_noise, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_REGRESSION, false, true,
     "REGRESSION: 1 slower"},
    {"20% slower, 15% noise each", slower_20_high_noise, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, false, false, "no change"},
    {"5% slower, quiet", slower_5_quiet, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, false, false, "no change"},
    {"20% slower under a 25% threshold", slower_20_low_noise, 0.25, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, false, false,
     "no change"},
    {"20% faster, 2% noise each", faster_20, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SPEEDUP, false, false, "OK: 1 faster"},
    {"noise from the samples", noise_from_samples, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, false, false, "no change"},
    {"untimed in NEW", untimed_in_new, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_UNTIMED, false, false, "no change"},
    {"pass -> fail", new_failure, 0, TIMED, PARITY_STATUS_NEW_FAILURE, PARITY_TIME_SAME, true, true, "REGRESSION: 1 new failure"},
    {"not supported -> error", new_error, 0, "qwen3_tiny/attn=flash_attention_3,ce=eager/bf16/cpu", PARITY_STATUS_NEW_FAILURE,
     PARITY_TIME_UNTIMED, false, true, "REGRESSION: 1 new failure"},
    {"fail -> pass", fixed, 0, SAMPLE_FAILING_COMBO, PARITY_STATUS_FIXED, PARITY_TIME_SAME, false, false, "OK: 1 fixed"},
    {"missing from NEW", missing_from_new, 0, TIMED, PARITY_STATUS_ONLY_BASE, PARITY_TIME_UNTIMED, false, false,
     "OK: 1 missing from NEW"},
    {"only in NEW, passing", only_in_new, 0, TIMED, PARITY_STATUS_ONLY_NEW, PARITY_TIME_UNTIMED, false, false, "OK: 1 only in NEW"},
    {"only in NEW, failing", failing_only_in_new, 0, SAMPLE_FAILING_COMBO, PARITY_STATUS_NEW_FAILURE, PARITY_TIME_UNTIMED, false, true,
     "REGRESSION: 1 new failure"},
    {"pass -> not supported", lost_support, 0, TIMED, PARITY_STATUS_SUPPORT_CHANGED, PARITY_TIME_UNTIMED, false, false,
     "OK: 1 support change"},
    {"worst ratio x3", ratio_grows, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, true, false, "OK: 1 tolerance ratio drift"},
    {"worst ratio x1.5", ratio_grows_a_little, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, false, false, "no change"},
    {"identical runs", identical, 0, TIMED, PARITY_STATUS_SAME, PARITY_TIME_SAME, false, false, "no change (12 combos)"},
};

static const parity_combo_comparison *find_entry(const parity_comparison *comparison, const char *id) {
    for (size_t i = 0; i < comparison->combo_count; i++)
        if (strcmp(comparison->combos[i].id, id) == 0) return &comparison->combos[i];
    return NULL;
}

static void compare_crafted(const compare_case *row, parity_results *base, parity_results *new_run, parity_comparison *comparison) {
    sample_results_build(base);
    sample_results_build(new_run);
    row->craft(base, new_run);
    parity_compare_options options = parity_compare_default_options();
    if (row->threshold > 0) options.threshold = row->threshold;
    assert_ok(parity_compare_results(base, new_run, &options, comparison), row->label);
}

Test(compare, crafted_pairs_get_their_verdicts) {
    for (size_t i = 0; i < ROWS(compare_cases); i++) {
        const compare_case *row = &compare_cases[i];
        parity_results base, new_run;
        parity_comparison comparison;
        compare_crafted(row, &base, &new_run, &comparison);
        const parity_combo_comparison *entry = find_entry(&comparison, row->id);
        cr_assert_not_null(entry, "%s: no entry for %s", row->label, row->id);
        cr_expect_eq(entry->status_change, row->change, "%s: status change %s", row->label, parity_status_change_name(entry->status_change));
        cr_expect_eq(entry->time.verdict, row->time, "%s: time %s (change %g, limit %g)", row->label,
                     parity_time_verdict_name(entry->time.verdict), entry->time.change, entry->time.limit);
        cr_expect_eq(entry->ratio_drift, row->drift, "%s: drift %d (%g -> %g)", row->label, entry->ratio_drift, entry->base_ratio,
                     entry->new_ratio);
        cr_expect_eq(parity_comparison_failed(&comparison), row->failed, "%s: failed", row->label);
        char verdict[512];
        parity_comparison_verdict(&comparison, verdict, sizeof verdict);
        cr_expect(strncmp(verdict, row->verdict, strlen(row->verdict)) == 0, "%s: verdict '%s', expected '%s...'", row->label, verdict,
                  row->verdict);
        cr_expect_eq(comparison.combo_count, 12, "%s: %zu entries (the union of both runs' ids)", row->label, comparison.combo_count);
        parity_comparison_release(&comparison);
        parity_results_release(&base);
        parity_results_release(&new_run);
    }
}

Test(compare, the_time_rule_is_symmetric_and_names_its_band) {
    parity_results base, new_run;
    sample_results_build(&base);
    sample_results_build(&new_run);
    slower_20_low_noise(&base, &new_run);
    parity_time_comparison forward, backward;
    parity_compare_time(find_combo(&base, TIMED), find_combo(&new_run, TIMED), 0.10, 3, 0, 0, &forward);
    parity_compare_time(find_combo(&new_run, TIMED), find_combo(&base, TIMED), 0.10, 3, 0, 0, &backward);
    cr_expect_eq(forward.verdict, PARITY_TIME_REGRESSION);
    cr_expect_eq(backward.verdict, PARITY_TIME_SPEEDUP, "swapping the runs turns the regression into a speed-up");
    cr_expect_float_eq(forward.change, 0.2, 1e-12);
    cr_expect_float_eq(forward.combined, sqrt(2) * 0.02, 1e-12);
    cr_expect_float_eq(forward.limit, 0.10, 1e-12, "threshold 10%% beats 3 x 2.83%%");
    // the noise rule alone: k = 10 puts the 20% change inside a 28.3% band
    parity_compare_time(find_combo(&base, TIMED), find_combo(&new_run, TIMED), 0.10, 10, 0, 0, &forward);
    cr_expect_eq(forward.verdict, PARITY_TIME_SAME);
    cr_expect_float_eq(forward.limit, 10 * sqrt(2) * 0.02, 1e-12);
    parity_results_release(&base);
    parity_results_release(&new_run);
}

Test(compare, noise_falls_back_to_the_samples) {
    parity_results results;
    sample_results_build(&results);
    set_timing(&results, TIMED, 10.0, 0.04);
    parity_combo_result *combo = find_combo(&results, TIMED);
    combo->noise = NAN;
    cr_expect_float_eq(parity_compare_noise(combo), 0.04, 1e-12);
    combo->sample_count = 1;
    cr_expect_eq(parity_compare_noise(combo), 0.0, "one sample: no spread to speak of");
    parity_results_release(&results);
}

Test(compare, duplicate_ids_and_bad_options_are_errors) {
    parity_results base, new_run;
    sample_results_build(&base);
    sample_results_build(&new_run);
    snprintf(new_run.combos[1].id, sizeof new_run.combos[1].id, "%s", new_run.combos[0].id);
    parity_comparison comparison;
    parity_compare_options options = parity_compare_default_options();
    parity_error *error = parity_compare_results(&base, &new_run, &options, &comparison);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
    cr_expect(strstr(parity_error_message(error), "NEW: combo id 'qwen3_tiny/attn=eager,ce=eager/bf16/cpu' appears twice"), "%s",
              parity_error_message(error));
    cr_expect_null(comparison.combos);
    parity_error_free(error);
    options.threshold = NAN;
    error = parity_compare_results(&base, &base, &options, &comparison);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
    parity_error_free(error);
    parity_results empty = {0};
    options = parity_compare_default_options();
    assert_ok(parity_compare_results(&empty, &empty, &options, &comparison), "empty runs");
    cr_expect_eq(comparison.combo_count, 0);
    cr_expect_not(parity_comparison_failed(&comparison));
    parity_comparison_release(&comparison);
    parity_results_release(&base);
    parity_results_release(&new_run);
}

Test(compare, markdown_puts_the_verdict_first_and_a_section_per_change) {
    parity_results base, new_run;
    sample_results_build(&base);
    sample_results_build(&new_run);
    slower_20_low_noise(&base, &new_run);
    fixed(&base, &new_run);
    new_error(&base, &new_run);
    parity_comparison comparison;
    parity_compare_options options = parity_compare_default_options();
    assert_ok(parity_compare_results(&base, &new_run, &options, &comparison), "compare");
    parity_text text = {0};
    parity_compare_markdown(&text, &comparison, "runs/a", "runs/b");
    assert_ok(parity_text_check(&text, "markdown"), "markdown");
    const char *first = "**parity compare: REGRESSION: 1 new failure, 1 slower, 1 fixed (of 12 combos)**\n";
    cr_expect(strncmp(text.data, first, strlen(first)) == 0, "%s", text.data);
    const char *failures = strstr(text.data, "### New failures (1)"), *slower = strstr(text.data, "### Time regressions (1)"),
               *fixed_section = strstr(text.data, "### Fixed (1)");
    cr_expect(failures && slower && fixed_section && failures < slower && slower < fixed_section, "%s", text.data);
    cr_expect(strstr(text.data, "| `" TIMED "` | 10 -> 12 ms | +20.0% | -9.1%..+10.0% (noise 2.0%, 2.0%) | pass |"), "%s", text.data);
    cr_expect(strstr(text.data, "not supported -> error"), "%s", text.data);
    cr_expect_null(strstr(text.data, "### Speed-ups"), "no empty sections");
    parity_text_free(&text);
    parity_comparison_release(&comparison);
    parity_results_release(&base);
    parity_results_release(&new_run);
}

Test(compare, json_has_one_object_per_combo_with_its_verdicts) {
    parity_results base, new_run;
    sample_results_build(&base);
    sample_results_build(&new_run);
    slower_20_low_noise(&base, &new_run);
    remove_combo(&new_run, "qwen3_moe_tiny/attn=sdpa,moe=quack,ce=eager/bf16/cpu");
    parity_comparison comparison;
    parity_compare_options options = parity_compare_default_options();
    char *text;
    assert_ok(parity_compare_results(&base, &new_run, &options, &comparison), "compare");
    assert_ok(parity_compare_json(&comparison, "a", "b", &text), "json");
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root, "%s", text);
    cr_expect_str_eq(cJSON_GetObjectItem(root, "verdict")->valuestring, "regression");
    cr_expect_eq(cJSON_GetObjectItem(root, "exit_status")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "counts"), "only_base")->valueint, 1);
    cJSON *combos = cJSON_GetObjectItem(root, "combos");
    cr_expect_eq(cJSON_GetArraySize(combos), 12);
    bool saw_regression = false, saw_missing = false, saw_untimed_null = false;
    cJSON *combo;
    cJSON_ArrayForEach(combo, combos) {
        const char *id = cJSON_GetObjectItem(combo, "id")->valuestring;
        cJSON *time = cJSON_GetObjectItem(combo, "time");
        if (strcmp(id, TIMED) == 0) {
            saw_regression = strcmp(cJSON_GetObjectItem(time, "verdict")->valuestring, "regression") == 0 &&
                             cJSON_GetObjectItem(time, "change")->valuedouble > 0.19;
        }
        if (strcmp(id, "qwen3_moe_tiny/attn=sdpa,moe=quack,ce=eager/bf16/cpu") == 0)
            saw_missing = cJSON_IsNull(cJSON_GetObjectItem(combo, "new_status")) &&
                          strcmp(cJSON_GetObjectItem(combo, "status_change")->valuestring, "only_base") == 0;
        if (strcmp(id, "qwen3_tiny/attn=flash_attention_3,ce=eager/bf16/cpu") == 0)
            saw_untimed_null = cJSON_IsNull(cJSON_GetObjectItem(time, "base_ms"));
    }
    cr_expect(saw_regression && saw_missing && saw_untimed_null, "%s", text);
    cJSON_Delete(root);
    free(text);
    parity_comparison_release(&comparison);
    parity_results_release(&base);
    parity_results_release(&new_run);
}

// ---- the command line ----

static void make_directory(char *directory, size_t size) {
    snprintf(directory, size, "/tmp/parity-compare-XXXXXX");
    cr_assert_not_null(mkdtemp(directory));
}

static void remove_directory(const char *directory) {
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    cr_assert_eq(system(command), 0);
}

static void write_run(const char *directory, const char *name, const parity_results *results) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    assert_ok(parity_make_directories(path), "mkdir");
    snprintf(path, sizeof path, "%s/%s/results.json", directory, name);
    assert_ok(parity_results_write_json(path, results), "write results.json");
}

static char *read_text(const char *path) {
    char *text;
    size_t size;
    assert_ok(parity_read_file(path, &text, &size), path);
    return text;
}

// Whole runs move (compare_time.h): every combo of NEW scattered by up to +-15% around a shift,
// as two runs of one build on a busy machine are; one combo 2x slower stands out of that, the
// scatter alone does not, and a shift of the whole run past the threshold is one run-wide verdict.
static void scatter(parity_results *run, double shift, double amplitude) {
    for (size_t i = 0; i < run->combo_count; i++) {
        parity_combo_result *combo = &run->combos[i];
        if (!parity_report_is_timed(combo)) continue;
        double u = (double)((i * 2654435761u) % 1000) / 999.0 * 2 - 1; // a fixed spread in [-1, 1]
        combo->median_ms *= shift * (1 + amplitude * u);
        combo->noise = 0.01; // what each run's own samples say: far below the scatter
    }
}

Test(compare, the_run_moves_as_a_whole_and_combos_are_judged_beyond_that) {
    static const struct {
        const char *label;
        double shift, amplitude, outlier; // outlier: the first timed combo's extra factor
        bool failed;
        size_t regressions;
        parity_time_verdict run_verdict;
        const char *says;
    } rows[] = {
        {"scatter alone", 1.0, 0.15, 1.0, false, 0, PARITY_TIME_SAME, NULL},
        {"scatter around +4%", 1.04, 0.15, 1.0, false, 0, PARITY_TIME_SAME, NULL},
        {"one combo 2x in the scatter", 1.0, 0.15, 2.0, true, 1, PARITY_TIME_SAME, "1 slower"},
        {"the whole run 25% slower", 1.25, 0.02, 1.0, true, 0, PARITY_TIME_REGRESSION, "the whole run 25.0% slower"},
        {"the whole run 25% faster", 0.8, 0.02, 1.0, false, 0, PARITY_TIME_SPEEDUP, "the whole run 20.0% faster"},
    };
    for (size_t r = 0; r < ROWS(rows); r++) {
        parity_results base, new_run;
        sample_results_build_large(&base, 130, 4);
        sample_results_build_large(&new_run, 130, 4);
        for (size_t i = 0; i < base.combo_count; i++) base.combos[i].noise = 0.01;
        scatter(&new_run, rows[r].shift, rows[r].amplitude);
        for (size_t i = 0; i < new_run.combo_count; i++)
            if (parity_report_is_timed(&new_run.combos[i])) {
                new_run.combos[i].median_ms *= rows[r].outlier;
                break;
            }
        parity_comparison comparison;
        parity_compare_options options = parity_compare_default_options();
        assert_ok(parity_compare_results(&base, &new_run, &options, &comparison), rows[r].label);
        cr_expect_geq(comparison.run.timed, PARITY_COMPARE_MIN_RUN_COMBOS, "%s", rows[r].label);
        cr_expect_eq(comparison.counts.regressions, rows[r].regressions, "%s: %zu regressions", rows[r].label,
                     comparison.counts.regressions);
        cr_expect_eq(comparison.run.verdict, rows[r].run_verdict, "%s: run verdict %s", rows[r].label,
                     parity_time_verdict_name(comparison.run.verdict));
        cr_expect_eq(parity_comparison_failed(&comparison), rows[r].failed, "%s", rows[r].label);
        char verdict[1024];
        parity_comparison_verdict(&comparison, verdict, sizeof verdict);
        if (rows[r].says) cr_expect(strstr(verdict, rows[r].says), "%s: %s", rows[r].label, verdict);
        parity_comparison_release(&comparison);
        parity_results_release(&base);
        parity_results_release(&new_run);
    }
}

Test(compare, cli_on_two_run_directories) {
    char directory[64], arguments[1024], path[600];
    make_directory(directory, sizeof directory);
    parity_results base, new_run;
    sample_results_build(&base);
    sample_results_build(&new_run);
    write_run(directory, "same", &new_run);
    new_failure(&base, &new_run);
    write_run(directory, "failing", &new_run);
    parity_results_release(&new_run);
    sample_results_build(&new_run);
    slower_20_low_noise(&base, &new_run);
    write_run(directory, "base", &base);
    write_run(directory, "new", &new_run);

    snprintf(arguments, sizeof arguments, "compare %s/base %s/new --markdown %s/out/compare.md --json %s/out/compare.json", directory,
             directory, directory, directory);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 1, "a regression exits 1: %s", result.output);
    cr_expect(strstr(result.output, TIMED), "%s", result.output);
    cr_expect(strstr(result.output, "SLOWER"), "%s", result.output);
    cr_expect(strstr(result.output, "REGRESSION: 1 slower (of 12 combos)"), "%s", result.output);
    cr_expect(strstr(result.output, "11 combos with nothing to report"), "%s", result.output);
    free(result.output);
    snprintf(path, sizeof path, "%s/out/compare.md", directory);
    char *markdown = read_text(path);
    cr_expect(strncmp(markdown, "**parity compare: REGRESSION", 28) == 0, "%s", markdown);
    free(markdown);
    snprintf(path, sizeof path, "%s/out/compare.json", directory);
    char *json = read_text(path);
    cJSON *root = cJSON_Parse(json);
    cr_expect(root && cJSON_GetArraySize(cJSON_GetObjectItem(root, "combos")) == 12, "%s", json);
    cJSON_Delete(root);
    free(json);

    snprintf(arguments, sizeof arguments, "compare %s/same %s/same/results.json", directory, directory);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "identical runs exit 0: %s", result.output);
    cr_expect(strstr(result.output, "no change (12 combos)"), "%s", result.output);
    free(result.output);

    snprintf(arguments, sizeof arguments, "compare %s/same %s/failing", directory, directory);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 1, "a new failure exits 1: %s", result.output);
    cr_expect(strstr(result.output, "pass -> FAIL"), "%s", result.output);
    cr_expect(strstr(result.output, "REGRESSION: 1 new failure"), "%s", result.output);
    free(result.output);

    snprintf(arguments, sizeof arguments, "compare %s/failing %s/same", directory, directory);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "a fixed failure exits 0: %s", result.output);
    cr_expect(strstr(result.output, "FAIL -> pass"), "%s", result.output);
    cr_expect(strstr(result.output, "OK: 1 fixed"), "%s", result.output);
    free(result.output);
    parity_results_release(&base);
    parity_results_release(&new_run);
    remove_directory(directory);
}

// --baseline last:N: BASE is the history's median of the last N runs of NEW's suite and device.
Test(compare, cli_against_the_history_baseline) {
    char directory[64], arguments[1024], command[800];
    make_directory(directory, sizeof directory);
    parity_results run, new_run;
    for (int i = 0; i < 3; i++) { // three runs of the same suite and device, one a day
        sample_results_build(&run);
        snprintf(run.context.started, sizeof run.context.started, "2026-12-0%dT00:00:00Z", i + 1);
        char name[16];
        snprintf(name, sizeof name, "day%d", i + 1);
        write_run(directory, name, &run);
        parity_results_release(&run);
        snprintf(command, sizeof command, "history add %s/%s --db %s/history.sqlite", directory, name, directory);
        command_result added = run_parity(command);
        cr_assert_eq(added.exit_code, 0, "%s", added.output);
        free(added.output);
    }
    sample_results_build(&run);
    sample_results_build(&new_run);
    slower_20_low_noise(&run, &new_run);
    write_run(directory, "slower", &new_run);
    parity_results_release(&new_run);
    sample_results_build(&new_run);
    write_run(directory, "same", &new_run);

    snprintf(arguments, sizeof arguments, "compare --db %s/history.sqlite --baseline last:3 %s/slower", directory, directory);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 1, "slower than the history's median exits 1: %s", result.output);
    cr_expect(strstr(result.output, "REGRESSION: 1 slower"), "%s", result.output);
    cr_expect(strstr(result.output, "last 3 runs"), "BASE names the history: %s", result.output);
    free(result.output);
    snprintf(arguments, sizeof arguments, "compare --db %s/history.sqlite %s/same", directory, directory);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "--db alone is --baseline last:5; the same run exits 0: %s", result.output);
    free(result.output);

    static const struct {
        const char *label, *format;
        int exit_code;
        const char *says;
    } refused[] = {
        {"last:0", "compare --db %s/history.sqlite --baseline last:0 %s/same", 2, "write last:N, N from 1 to 64"},
        {"not last:N", "compare --db %s/history.sqlite --baseline median %s/same", 2, "write last:N"},
        {"two runs", "compare --db %s/history.sqlite %s/same %s/same", 2, "one run (NEW)"},
        {"no database", "compare --db %s/absent.sqlite %s/same", 3, "absent.sqlite"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(arguments, sizeof arguments, refused[i].format, directory, directory, directory);
        result = run_parity(arguments);
        cr_expect_eq(result.exit_code, refused[i].exit_code, "%s: %s", refused[i].label, result.output);
        cr_expect(strstr(result.output, refused[i].says), "%s: %s", refused[i].label, result.output);
        free(result.output);
    }
    parity_results_release(&run);
    parity_results_release(&new_run);
    remove_directory(directory);
}

typedef struct compare_cli_case {
    const char *label;
    const char *arguments; // %1$s: the directory (holding runs "a" and "b", identical)
    int exit_code;
    const char *output;
} compare_cli_case;

static const compare_cli_case compare_cli_cases[] = {
    {"help", "compare --help", 0, "usage: parity compare BASE NEW"},
    {"one run", "compare %1$s/a", 2, "usage: parity compare BASE NEW"},
    {"three runs", "compare %1$s/a %1$s/b %1$s/a", 2, "got a third"},
    {"unknown option", "compare --database x.db %1$s/a %1$s/b", 2, "unknown option '--database'"},
    {"ambiguous threshold", "compare --threshold 10 %1$s/a %1$s/b", 2, "--threshold '10'"},
    {"threshold as a fraction", "compare --threshold 0.2 %1$s/a %1$s/b", 0, "no change"},
    {"missing results.json", "compare %1$s/a %1$s/none", 3, "%1$s/none: cannot open"},
    {"malformed results.json", "compare %1$s/bad %1$s/a", 3, "%1$s/bad/results.json: not valid JSON"},
    {"unwritable --json", "compare --json %1$s/a/results.json/x.json %1$s/a %1$s/b", 3, "%1$s/a/results.json: cannot create directory: a file is in the way"},
};

Test(compare, cli_exit_codes) {
    char directory[64];
    make_directory(directory, sizeof directory);
    parity_results results;
    sample_results_build(&results);
    write_run(directory, "a", &results);
    write_run(directory, "b", &results);
    parity_results_release(&results);
    char path[600];
    snprintf(path, sizeof path, "%s/bad", directory);
    assert_ok(parity_make_directories(path), "mkdir");
    snprintf(path, sizeof path, "%s/bad/results.json", directory);
    assert_ok(parity_write_file_atomic(path, "{\"context\": {", 13, true), "write");
    for (size_t i = 0; i < ROWS(compare_cli_cases); i++) {
        const compare_cli_case *row = &compare_cli_cases[i];
        char arguments[1024], expected[512];
        snprintf(arguments, sizeof arguments, row->arguments, directory);
        snprintf(expected, sizeof expected, row->output, directory);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, row->exit_code, "%s: exit %d: %s", row->label, result.exit_code, result.output);
        cr_expect(strstr(result.output, expected), "%s: expected '%s' in: %s", row->label, expected, result.output);
        free(result.output);
    }
    remove_directory(directory);
}
