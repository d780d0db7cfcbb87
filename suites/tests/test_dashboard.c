// test_dashboard.c: `parity dashboard` and its library (reports/dashboard/), on histories of
// crafted runs (results_sample.h) ingested with parity_history_add_results into temp folders:
//   - three runs, the third slower beyond noise on one combo: index.html has the latest verdict
//     (REGRESSION), the regression listed first and marked in the trend legend, the grid, and an
//     SVG trend chart with 3 points per line; within noise nothing is marked; a new failure is listed;
//   - bench reports: the rows with % of ceilings, a slower row beyond noise marked, a chart per group;
//   - an empty history gives an empty-state page (exit 0); a missing db, a db that is not a
//     history, an --out under a file and an --out that is not a dashboard exit 3 and leave nothing;
//     a second write replaces the first whole (no stale file, no temporary left); usage errors exit 2;
//   - headless Chromium (when installed) renders the dashboard and a report.html: the DOM has the
//     grid and an svg, no console error; skipped visibly otherwise.
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "assert_ok.h"
#include "cli_runner.h"
#include "ops/core/file.h"
#include "reports/dashboard/dashboard.h"
#include "reports/history/history.h"
#include "reports/html.h"
#include "results_sample.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define TIMED "qwen3_tiny/attn=sdpa,ce=eager/bf16/cpu"
#define FLIPPED "qwen3_tiny/attn=sdpa,ce=chunk_loss/bf16/cpu"

typedef struct scratch {
    char folder[64], db[128], out[128];
} scratch;

static scratch scratch_new(void) {
    scratch s;
    snprintf(s.folder, sizeof s.folder, "/tmp/parity-dashboard-XXXXXX");
    cr_assert_not_null(mkdtemp(s.folder));
    snprintf(s.db, sizeof s.db, "%s/history.sqlite", s.folder);
    snprintf(s.out, sizeof s.out, "%s/dash", s.folder);
    return s;
}

static void scratch_remove(const scratch *s) {
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", s->folder);
    cr_assert_eq(system(command), 0);
}

static char *read_text(const char *path) {
    char *data;
    size_t size;
    assert_ok(parity_read_file(path, &data, &size), path);
    return data;
}

static size_t count_occurrences(const char *text, const char *needle, const char *end) {
    size_t count = 0;
    for (const char *at = strstr(text, needle); at && (!end || at < end); at = strstr(at + 1, needle)) count++;
    return count;
}

// Entries of a folder whose names contain `needle` (temporaries of the dashboard: ".tmp.", ".old.").
static size_t entries_containing(const char *folder, const char *needle) {
    DIR *directory = opendir(folder);
    cr_assert_not_null(directory, "%s", folder);
    size_t count = 0;
    for (struct dirent *entry; (entry = readdir(directory));) count += strstr(entry->d_name, needle) != NULL;
    closedir(directory);
    return count;
}

static parity_combo_result *find_combo(parity_results *results, const char *id) {
    for (size_t i = 0; i < results->combo_count; i++)
        if (strcmp(results->combos[i].id, id) == 0) return &results->combos[i];
    cr_assert_fail("no combo %s in the sample", id);
    return NULL;
}

static void set_timing(parity_results *results, const char *id, double median, double noise) {
    parity_combo_result *combo = find_combo(results, id);
    const double offsets[7] = {-1, -1, 0, 0, 0, 1, 1};
    double samples[7];
    for (int s = 0; s < 7; s++) samples[s] = median * (1 + noise * offsets[s]);
    cr_assert_null(parity_combo_set_samples(combo, samples, 7));
    combo->median_ms = median;
    combo->noise = noise;
}

// Run `index` (0, 1, 2) of the sample: a later date and sha each, TIMED at `ms` with 2% noise.
static void add_run(parity_history *history, int index, double ms, bool flip_to_fail) {
    parity_results results;
    sample_results_build(&results);
    snprintf(results.context.started, sizeof results.context.started, "2026-12-0%dT05:10:00Z", index + 1);
    snprintf(results.context.git_sha, sizeof results.context.git_sha, "%040d", index + 1);
    set_timing(&results, TIMED, ms, 0.02);
    if (flip_to_fail) {
        parity_combo_result *combo = find_combo(&results, FLIPPED);
        combo->status = PARITY_COMBO_FAIL;
        snprintf(combo->reason, sizeof combo->reason, "loss: error 1.4x its tolerance");
    }
    parity_history_added added;
    assert_ok(parity_history_add_results(history, &results, NULL, &added), "add run");
    cr_assert(added.added);
    parity_results_release(&results);
}

// Three runs: TIMED at 10, 10.1, then `third_ms`; the third also flips FLIPPED to fail when asked.
static void three_runs(const scratch *s, double third_ms, bool flip) {
    parity_history *history;
    assert_ok(parity_history_open(s->db, true, &history), "open");
    add_run(history, 0, 10.0, false);
    add_run(history, 1, 10.1, false);
    add_run(history, 2, third_ms, flip);
    parity_history_close(history);
}

static char *write_dashboard(const scratch *s, parity_dashboard_summary *summary) {
    parity_dashboard_options options = parity_dashboard_default_options();
    assert_ok(parity_dashboard_write(s->db, s->out, &options, summary), "dashboard");
    char path[160];
    snprintf(path, sizeof path, "%s/index.html", s->out);
    return read_text(path);
}

// The trend chart of section s1: every line has one point per run.
static void expect_trend_points(const char *html, size_t runs) {
    const char *figure = strstr(html, "<figure class=\"panel trend\" id=\"chart-s1\">");
    cr_assert_not_null(figure, "a trend chart");
    const char *end = strstr(figure, "</figure>");
    cr_assert_not_null(end);
    cr_assert(strstr(figure, "<svg") && strstr(figure, "<svg") < end, "the chart is an inline svg");
    size_t lines = count_occurrences(figure, "stroke-width=\"2\"", end), points = count_occurrences(figure, "<circle", end);
    cr_expect_geq(lines, 2, "several combos drawn");
    cr_expect_eq(points, runs * lines, "%zu points for %zu lines of %zu runs", points, lines, runs);
}

typedef struct trend_case {
    const char *name;
    double third_ms;
    bool flip;
    bool regression, new_failure;
} trend_case;

static const trend_case trend_cases[] = {
    {"20% slower over 2% noise: a regression", 12.0, false, true, false},
    {"3% slower: within the threshold, nothing marked", 10.4, false, false, false},
    {"a passing combo fails: a new failure", 10.1, true, false, true},
};

Test(dashboard, three_runs_verdict_grid_trend_and_marks) {
    for (size_t c = 0; c < ROWS(trend_cases); c++) {
        const trend_case *row = &trend_cases[c];
        scratch s = scratch_new();
        three_runs(&s, row->third_ms, row->flip);
        parity_dashboard_summary summary;
        char *html = write_dashboard(&s, &summary);
        cr_expect_eq(summary.runs, 3, "%s", row->name);
        cr_expect_eq(summary.sections, 1, "%s", row->name);
        cr_expect_eq(summary.regressions, row->regression, "%s", row->name);
        cr_expect_eq(summary.new_failures, row->new_failure, "%s", row->name);
        // the overview and the latest run's verdict line, against run 2
        cr_expect(strstr(html, "<table class=\"overview sortable\">"), "%s: overview", row->name);
        const char *verdict = strstr(html, "<p class=\"verdict");
        cr_assert_not_null(verdict, "%s", row->name);
        cr_expect(strstr(verdict, "against run 2 (2026-12-02T05:10:00Z)"), "%s: %.300s", row->name, verdict);
        cr_expect(strstr(html, "git <code>0000000000000000000000000000000000000003</code>"), "%s: latest sha", row->name);
        bool failed = row->regression || row->new_failure;
        cr_expect_eq(strstr(verdict, "REGRESSION: ") != NULL && strstr(verdict, "REGRESSION: ") < strstr(verdict, "</p>"), failed,
                     "%s: %.300s", row->name, verdict);
        // the grid of the latest run, after the verdict
        const char *grid = strstr(html, "<table class=\"grid\">");
        cr_expect(grid && grid > verdict, "%s: the grid", row->name);
        expect_trend_points(html, 3);
        // regressions listed before the grid, and marked in the legend
        const char *listed = strstr(html, "<div class=\"panel regressions\">");
        cr_expect_eq(listed != NULL, failed, "%s", row->name);
        if (listed) cr_expect(listed < grid, "%s: listed before the grid", row->name);
        cr_expect_eq(strstr(html, "[REGRESSION +18.8%]") != NULL, row->regression, "%s: legend mark", row->name);
        if (row->regression) {
            cr_expect(strstr(listed, "<td class=\"mark\">slower</td><td class=\"id\">" TIMED "</td>"), "%s", row->name);
            cr_expect(strstr(listed, "+18.8% slower, beyond the band of &plusmn;10.0%"), "%s", row->name);
        }
        if (row->new_failure) cr_expect(strstr(listed, "<td class=\"mark\">new failure</td><td class=\"id\">" FLIPPED "</td>"), "%s", row->name);
        if (!failed) cr_expect_null(strstr(html, "class=\"regressed\""), "%s: nothing marked", row->name);
        free(html);
        scratch_remove(&s);
    }
}

Test(dashboard, cli_writes_the_site_and_replaces_it_whole) {
    scratch s = scratch_new();
    three_runs(&s, 12.0, false);
    char arguments[512];
    snprintf(arguments, sizeof arguments, "dashboard --db '%s' --out '%s' --last 2", s.db, s.out);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "index.html") && strstr(result.output, "1 regression,"), "%s", result.output);
    free(result.output);
    char path[200];
    snprintf(path, sizeof path, "%s/index.html", s.out);
    char *html = read_text(path);
    expect_trend_points(html, 2); // --last 2
    cr_expect(strstr(html, "3 runs in the history, the last 2 drawn"));
    free(html);
    // a stale file in the old dashboard is gone after the next write; no temporary is left
    snprintf(path, sizeof path, "%s/stale.txt", s.out);
    assert_ok(parity_write_file_atomic(path, "x", 1, true), "stale file");
    snprintf(arguments, sizeof arguments, "dashboard --db '%s' --out '%s/'", s.db, s.out);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    free(result.output);
    cr_expect_neq(access(path, F_OK), 0, "the old dashboard was replaced whole");
    snprintf(path, sizeof path, "%s/index.html", s.out);
    cr_expect_eq(access(path, F_OK), 0);
    cr_expect_eq(entries_containing(s.folder, ".tmp."), 0);
    cr_expect_eq(entries_containing(s.folder, ".old."), 0);
    scratch_remove(&s);
}

Test(dashboard, empty_history_gives_an_empty_state_page) {
    scratch s = scratch_new();
    parity_history *history;
    assert_ok(parity_history_open(s.db, true, &history), "create");
    parity_history_close(history);
    char arguments[512];
    snprintf(arguments, sizeof arguments, "dashboard --db '%s' --out '%s'", s.db, s.out);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "has no runs yet"), "%s", result.output);
    free(result.output);
    char path[200];
    snprintf(path, sizeof path, "%s/index.html", s.out);
    char *html = read_text(path);
    cr_expect(strstr(html, "id=\"empty\"") && strstr(html, "The history has no runs yet"));
    cr_expect_null(strstr(html, "<table class=\"overview"));
    free(html);
    scratch_remove(&s);
}

typedef struct bad_case {
    const char *name;
    const char *arguments; // %1$s: the folder, %2$s: the db
    int exit_code;
    const char *message;
} bad_case;

static const bad_case bad_cases[] = {
    {"no --out", "dashboard --db '%2$s'", 2, "--out DIR is required"},
    {"--last 0", "dashboard --db '%2$s' --out '%1$s/d' --last 0", 2, "--last '0'"},
    {"--threshold x", "dashboard --db '%2$s' --out '%1$s/d' --threshold x", 2, "--threshold 'x'"},
    {"an unknown option", "dashboard --db '%2$s' --out '%1$s/d' --bogus", 2, "unexpected argument '--bogus'"},
    {"a missing db", "dashboard --db '%1$s/missing.sqlite' --out '%1$s/d'", 3, "no history database"},
    {"a db that is a text file", "dashboard --db '%1$s/file.txt' --out '%1$s/d'", 3, "file.txt"},
    {"--out under a regular file", "dashboard --db '%2$s' --out '%1$s/file.txt/d'", 3, "file.txt/d"},
    {"--out a directory that is not a dashboard", "dashboard --db '%2$s' --out '%1$s/mine'", 3, "is not a parity dashboard"},
};

Test(dashboard, bad_arguments_and_unwritable_out_leave_nothing) {
    scratch s = scratch_new();
    three_runs(&s, 12.0, false);
    char path[200];
    snprintf(path, sizeof path, "%s/file.txt", s.folder);
    assert_ok(parity_write_file_atomic(path, "not a db\n", 9, true), "text file");
    snprintf(path, sizeof path, "%s/mine", s.folder);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/mine/notes.txt", s.folder);
    assert_ok(parity_write_file_atomic(path, "mine", 4, true), "a user's file");
    for (size_t c = 0; c < ROWS(bad_cases); c++) {
        const bad_case *row = &bad_cases[c];
        char arguments[600];
        snprintf(arguments, sizeof arguments, row->arguments, s.folder, s.db);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, row->exit_code, "%s: %s", row->name, result.output);
        cr_expect(strstr(result.output, row->message), "%s: %s", row->name, result.output);
        free(result.output);
        snprintf(path, sizeof path, "%s/d", s.folder);
        cr_expect_neq(access(path, F_OK), 0, "%s: no dashboard written", row->name);
        cr_expect_eq(entries_containing(s.folder, ".tmp."), 0, "%s: no temporary left", row->name);
    }
    snprintf(path, sizeof path, "%s/mine/notes.txt", s.folder);
    char *notes = read_text(path);
    cr_expect_str_eq(notes, "mine", "a directory that is not a dashboard is left alone");
    free(notes);
    snprintf(path, sizeof path, "%s/mine", s.folder);
    cr_expect_eq(entries_containing(path, "index.html"), 0);
    char *text = NULL;
    snprintf(path, sizeof path, "%s/file.txt", s.folder);
    text = read_text(path);
    cr_expect_str_eq(text, "not a db\n", "the text file is untouched");
    free(text);
    scratch_remove(&s);
}

// A copy of the committed H200 bench report with the first row's median scaled by `factor`.
static void write_bench_copy(const char *path, double factor) {
    char *data = read_text("reports/baselines/h200/bench.json");
    cJSON *root = cJSON_Parse(data);
    free(data);
    cr_assert_not_null(root);
    cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "benchmarks"), 0);
    cJSON *timing = cJSON_GetObjectItemCaseSensitive(first, "timing");
    cJSON *median = cJSON_GetObjectItemCaseSensitive(timing, "median_ms");
    cr_assert(cJSON_IsNumber(median));
    cJSON_SetNumberValue(median, median->valuedouble * factor);
    char *text = cJSON_Print(root);
    assert_ok(parity_write_file_atomic(path, text, strlen(text), true), "bench copy");
    free(text);
    cJSON_Delete(root);
}

Test(dashboard, bench_rows_over_time_beside_their_peers) {
    scratch s = scratch_new();
    char first[160], second[160];
    snprintf(first, sizeof first, "%s/bench-1.json", s.folder);
    snprintf(second, sizeof second, "%s/bench-2.json", s.folder);
    write_bench_copy(first, 1.0);
    write_bench_copy(second, 1.5);
    parity_history *history;
    assert_ok(parity_history_open(s.db, true, &history), "open");
    parity_history_added added;
    assert_ok(parity_history_add_path(history, first, &added), "bench 1");
    assert_ok(parity_history_add_path(history, second, &added), "bench 2");
    parity_history_close(history);
    parity_dashboard_summary summary;
    char *html = write_dashboard(&s, &summary);
    cr_expect_eq(summary.sections, 1);
    cr_expect_eq(summary.regressions, 1);
    cr_expect(strstr(html, "<h2>bench on NVIDIA H200"), "a bench section");
    cr_expect(strstr(html, "REGRESSION: 1 slower (of 40 rows timed in both)"));
    cr_expect(strstr(html, "% <small>copy</small>"), "%% of the copy ceiling");
    cr_expect(strstr(html, "(PyTorch peer)"), "peers beside the backends");
    cr_expect(strstr(html, "eager [REGRESSION +50.0%]"), "the slower row marked in its chart's legend");
    cr_expect_eq(count_occurrences(html, "<tr class=\"regressed\">", NULL), 1);
    cr_expect_eq(count_occurrences(html, "<svg", NULL), 12, "a chart per op, pass, shape and dtype");
    free(html);
    scratch_remove(&s);
}

// ---- headless Chromium (issue 18 point 7) ----

static const char *find_chromium(void) {
    static const char *const names[] = {"chromium", "chromium-headless-shell", "google-chrome"};
    const char *path = getenv("PATH");
    if (!path) return NULL;
    static char found[4096];
    for (size_t n = 0; n < ROWS(names); n++) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", path);
        for (char *saved = NULL, *folder = strtok_r(copy, ":", &saved); folder; folder = strtok_r(NULL, ":", &saved)) {
            snprintf(found, sizeof found, "%s/%s", folder, names[n]);
            if (access(found, X_OK) == 0) return found;
        }
    }
    return NULL;
}

// Renders `page` in headless Chromium: the DOM has the grid and an svg, and no console error.
static void expect_renders(const char *chromium, const char *page, const char *folder) {
    char dom[200], log[200], command[1400];
    snprintf(dom, sizeof dom, "%s/dom.html", folder);
    snprintf(log, sizeof log, "%s/console.log", folder);
    snprintf(command, sizeof command,
             "'%s' --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir='%s/profile' --enable-logging=stderr --v=0 "
             "--dump-dom 'file://%s' > '%s' 2> '%s'",
             chromium, folder, page, dom, log);
    cr_assert_eq(system(command), 0, "%s", command);
    char *text = read_text(dom), *console = read_text(log);
    cr_expect(strstr(text, "class=\"grid\""), "%s: the grid in the DOM", page);
    cr_expect(strstr(text, "<svg"), "%s: a chart in the DOM", page);
    cr_expect_null(strstr(console, ":CONSOLE"), "%s: a console message (an error?): %s", page, console);
    free(text);
    free(console);
}

Test(dashboard, renders_in_headless_chromium) {
    const char *chromium = find_chromium();
    if (!chromium) {
        fprintf(stderr, "[SKIP] %s::%s: Chromium not installed: no chromium, chromium-headless-shell or google-chrome on PATH\n",
                criterion_current_test->category, criterion_current_test->name);
        cr_skip_test("Chromium not installed: no chromium, chromium-headless-shell or google-chrome on PATH");
    }
    scratch s = scratch_new();
    three_runs(&s, 12.0, false);
    parity_dashboard_summary summary;
    free(write_dashboard(&s, &summary));
    char page[200];
    snprintf(page, sizeof page, "%s/index.html", s.out);
    expect_renders(chromium, page, s.folder);
    parity_results results;
    sample_results_build(&results);
    snprintf(page, sizeof page, "%s/report.html", s.folder);
    assert_ok(parity_report_write_html(page, &results), "report.html");
    parity_results_release(&results);
    expect_renders(chromium, page, s.folder);
    scratch_remove(&s);
}
