// test_history.c: the results history (reports/history/history.h, `parity history`), on crafted
// results (results_sample.h) in temp folders under /tmp:
//   - a run round-trips: load_run gives back its combos in order with status, reason, fields,
//     timing, and of the metrics the top-level ones plus the worst (a NaN one is the worst);
//   - ingesting the same run twice adds nothing and says so (library and CLI, exit 0);
//   - list and show print the runs' counts and the combos' status / worst ratio / time / noise;
//   - the baseline is the median of the last N runs' medians, the largest noise, the latest statuses,
//     and only the runs of the suite and device asked for;
//   - a corrupt results.json (exit 3, naming it) and a run failing midway leave the db unchanged;
//   - a db of a newer schema, a text file and a SQLite db of another program are refused (exit 3),
//     untouched; a version 1 db is migrated;
//   - bench reports are stored (and a malformed one refused naming the field);
//   - two processes writing at once both get every run in.
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "assert_ok.h"
#include "cli_runner.h"
#include "ops/core/file.h"
#include "reports/history/history.h"
#include "reports/history/history_internal.h"
#include "results_sample.h"

typedef struct scratch {
    char folder[64];
    char db[128];
} scratch;

static scratch scratch_new(void) {
    scratch s;
    snprintf(s.folder, sizeof s.folder, "/tmp/parity-history-XXXXXX");
    cr_assert_not_null(mkdtemp(s.folder));
    snprintf(s.db, sizeof s.db, "%s/history.sqlite", s.folder);
    return s;
}

static void scratch_remove(const scratch *s) {
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", s->folder);
    cr_assert_eq(system(command), 0);
}

// One integer of a query on the db, read with SQLite directly (not through the code under test).
static long long query_number(const char *db, const char *sql) {
    sqlite3 *connection;
    cr_assert_eq(sqlite3_open_v2(db, &connection, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *statement;
    cr_assert_eq(sqlite3_prepare_v2(connection, sql, -1, &statement, NULL), SQLITE_OK, "%s", sqlite3_errmsg(connection));
    cr_assert_eq(sqlite3_step(statement), SQLITE_ROW);
    long long value = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    sqlite3_close(connection);
    return value;
}

static void exec_sql(const char *db, const char *sql) {
    sqlite3 *connection;
    cr_assert_eq(sqlite3_open(db, &connection), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(connection, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(connection));
    sqlite3_close(connection);
}

static parity_history *open_db(const scratch *s) {
    parity_history *history;
    assert_ok(parity_history_open(s->db, true, &history), "opening the history");
    return history;
}

// The sample results as another run: started at `started`, every timed median scaled by `scale`,
// every noise set to `noise`.
static void sample_run(parity_results *results, const char *started, double scale, double noise) {
    sample_results_build(results);
    snprintf(results->context.started, sizeof results->context.started, "%s", started);
    for (size_t i = 0; i < results->combo_count; i++) {
        parity_combo_result *combo = &results->combos[i];
        if (isnan(combo->median_ms)) continue;
        combo->median_ms *= scale;
        combo->noise = noise;
    }
}

static int64_t add_results(parity_history *history, const parity_results *results, bool expect_added) {
    parity_history_added added;
    assert_ok(parity_history_add_results(history, results, "test", &added), "adding results");
    cr_assert_eq(added.added, expect_added);
    cr_assert_gt(added.run_id, 0);
    return added.run_id;
}

static const parity_combo_result *find_combo(const parity_results *results, const char *id) {
    for (size_t i = 0; i < results->combo_count; i++)
        if (strcmp(results->combos[i].id, id) == 0) return &results->combos[i];
    cr_assert_fail("no combo %s", id);
    return NULL;
}

static void write_run_dir(const scratch *s, const char *name, const parity_results *results, char *directory, size_t size) {
    snprintf(directory, size, "%s/%s", s->folder, name);
    assert_ok(parity_make_directories(directory), "mkdir");
    char path[256];
    snprintf(path, sizeof path, "%s/results.json", directory);
    assert_ok(parity_results_write_json(path, results), "writing results.json");
}

Test(history, a_run_round_trips_with_its_kept_metrics) {
    scratch s = scratch_new();
    parity_history *history = open_db(&s);
    cr_assert_eq(parity_history_schema_version(history), PARITY_HISTORY_SCHEMA_VERSION);
    parity_results results, loaded;
    sample_results_build(&results);
    int64_t id = add_results(history, &results, true);
    assert_ok(parity_history_load_run(history, id, &loaded), "loading the run");
    cr_assert_str_eq(loaded.context.suite, results.context.suite);
    cr_assert_str_eq(loaded.context.git_sha, results.context.git_sha);
    cr_assert_str_eq(loaded.context.timing_method, results.context.timing_method);
    cr_assert_eq(loaded.combo_count, results.combo_count);
    for (size_t i = 0; i < results.combo_count; i++) {
        const parity_combo_result *a = &results.combos[i], *b = &loaded.combos[i];
        cr_assert_str_eq(b->id, a->id, "combo %zu in order", i);
        cr_assert_eq(b->status, a->status, "%s", a->id);
        cr_assert_str_eq(b->reason, a->reason, "%s", a->id);
        cr_assert_eq(b->field_count, a->field_count, "%s", a->id);
        for (size_t f = 0; f < a->field_count; f++) cr_assert_str_eq(b->fields[f].value, a->fields[f].value);
        cr_assert_eq(b->sample_count, a->sample_count, "%s", a->id);
        for (size_t k = 0; k < a->sample_count; k++) cr_assert_eq(b->samples_ms[k], a->samples_ms[k], "%s sample %zu", a->id, k);
        cr_assert(isnan(a->median_ms) ? isnan(b->median_ms) : b->median_ms == a->median_ms, "%s median", a->id);
        cr_assert_eq(b->tokens, a->tokens);
        cr_assert_eq(b->is_eager_baseline, a->is_eager_baseline);
        // kept: the metrics without ':' and the worst one, never all ~25
        size_t top_level = 0;
        for (size_t m = 0; m < a->metric_count; m++) top_level += strchr(a->metrics[m].name, ':') == NULL;
        cr_assert_leq(b->metric_count, top_level + 1, "%s keeps %zu metrics", a->id, b->metric_count);
        if (a->metric_count) cr_assert_geq(b->metric_count, top_level, "%s", a->id);
    }
    const parity_combo_result *failing = find_combo(&loaded, SAMPLE_FAILING_COMBO);
    bool has_worst = false;
    for (size_t m = 0; m < failing->metric_count; m++)
        if (strcmp(failing->metrics[m].name, SAMPLE_FAILING_METRIC) == 0) has_worst = fabs(failing->metrics[m].ratio - 3.1) < 1e-12;
    cr_assert(has_worst, "the over-tolerance combo keeps its worst metric " SAMPLE_FAILING_METRIC);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM combos WHERE worst_metric IS NOT NULL AND worst_ratio IS NULL"), 1,
                 "the NaN combo's worst ratio is NaN (NULL)");
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM combos WHERE combo LIKE '%wrong_eps%' AND worst_metric = 'loss'"), 1,
                 "the NaN loss is the worst metric");
    parity_results_release(&loaded);
    parity_results_release(&results);
    parity_history_close(history);
    scratch_remove(&s);
}

Test(history, ingesting_the_same_run_twice_adds_nothing) {
    scratch s = scratch_new();
    parity_history *history = open_db(&s);
    parity_results results;
    sample_results_build(&results);
    int64_t first = add_results(history, &results, true);
    cr_assert_eq(add_results(history, &results, false), first);
    parity_history_close(history);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM combos"), (long long)results.combo_count);
    char directory[256], arguments[512];
    write_run_dir(&s, "run", &results, directory, sizeof directory);
    snprintf(arguments, sizeof arguments, "history add %s --db %s", directory, s.db);
    command_result out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 0, "%s", out.output);
    cr_assert(strstr(out.output, "already in the history as run 1"), "%s", out.output);
    free(out.output);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM combos"), (long long)results.combo_count);
    parity_results_release(&results);
    scratch_remove(&s);
}

Test(history, list_and_show_print_counts_and_combos) {
    scratch s = scratch_new();
    parity_results results;
    sample_results_build(&results);
    char directory[256], arguments[512];
    write_run_dir(&s, "run", &results, directory, sizeof directory);
    snprintf(arguments, sizeof arguments, "history add %s --db %s", directory, s.db);
    command_result out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 0, "%s", out.output);
    cr_assert(strstr(out.output, "as run 1 (12 combos)"), "%s", out.output);
    free(out.output);

    snprintf(arguments, sizeof arguments, "history list --db %s", s.db);
    out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 0, "%s", out.output);
    // id, date, suite, device, short sha, pass 5, fail 2 + error 1, not supported 3
    cr_assert(strstr(out.output, "1   2025-01-02T03:04:05Z  smoke  cpu (16 cores)  ed95add01234  5     3     3"), "%s", out.output);
    free(out.output);
    snprintf(arguments, sizeof arguments, "history list --suite gpu-nightly --db %s", s.db);
    out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 0, "%s", out.output);
    cr_assert(strstr(out.output, "no runs of suite gpu-nightly"), "%s", out.output);
    free(out.output);

    snprintf(arguments, sizeof arguments, "history show 1 --db %s", s.db);
    out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 0, "%s", out.output);
    const char *expected[] = {
        "fail           3.1          " SAMPLE_FAILING_METRIC,
        "6          +/-2.4%  " SAMPLE_FAILING_COMBO,
        "not supported  -            -",
        "12 combos: 5 pass, 2 fail, 3 not supported, 1 error, 1 excluded",
        "started 2025-01-02T03:04:05Z",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) cr_assert(strstr(out.output, expected[i]), "'%s' in:\n%s", expected[i], out.output);
    free(out.output);
    parity_results_release(&results);
    scratch_remove(&s);
}

Test(history, baseline_is_the_median_of_the_last_n_runs) {
    scratch s = scratch_new();
    parity_history *history = open_db(&s);
    const struct {
        const char *started;
        double scale, noise;
    } runs[] = {{"2025-01-01T00:00:00Z", 5.0, 0.50}, {"2025-01-02T00:00:00Z", 1.0, 0.01}, {"2025-01-03T00:00:00Z", 1.2, 0.05},
                {"2025-01-04T00:00:00Z", 3.0, 0.02}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        parity_results results;
        sample_run(&results, runs[r].started, runs[r].scale, runs[r].noise);
        if (r == 3) results.combos[1].status = PARITY_COMBO_FAIL; // the latest run's status wins
        add_results(history, &results, true);
        parity_results_release(&results);
    }
    parity_results other; // another device: never in a cpu baseline
    sample_run(&other, "2025-01-05T00:00:00Z", 100.0, 0.9);
    snprintf(other.context.device, sizeof other.context.device, "NVIDIA H200");
    add_results(history, &other, true);
    parity_results_release(&other);
    parity_history_close(history);

    parity_results reference, baseline;
    sample_results_build(&reference);
    const struct {
        int last_n;
        double scale, noise;
    } cases[] = {{1, 3.0, 0.02}, {2, 2.1, 0.05}, {3, 1.2, 0.05}, {4, 2.1, 0.50}, {10, 2.1, 0.50}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        assert_ok(parity_history_baseline(s.db, "smoke", "cpu (16 cores)", cases[c].last_n, &baseline), "baseline");
        cr_assert_eq(baseline.combo_count, reference.combo_count);
        cr_assert_eq(baseline.combos[1].status, PARITY_COMBO_FAIL, "statuses of the latest run");
        cr_assert_str_eq(baseline.context.started, "2025-01-04T00:00:00Z");
        cr_assert(strstr(baseline.context.command, "median of"), "%s", baseline.context.command);
        for (size_t i = 0; i < reference.combo_count; i++) {
            const parity_combo_result *want = &reference.combos[i], *got = &baseline.combos[i];
            cr_assert_str_eq(got->id, want->id);
            cr_assert_eq(got->sample_count, 0);
            if (isnan(want->median_ms)) {
                cr_assert(isnan(got->median_ms), "%s untimed", got->id);
                continue;
            }
            cr_assert_float_eq(got->median_ms, want->median_ms * cases[c].scale, 1e-9 * want->median_ms, "last %d: %s: %g, want %g",
                               cases[c].last_n, got->id, got->median_ms, want->median_ms * cases[c].scale);
            cr_assert_float_eq(got->noise, cases[c].noise, 1e-12, "last %d: %s noise", cases[c].last_n, got->id);
            cr_assert_eq(got->warmup_count, (size_t)(cases[c].last_n < 4 ? cases[c].last_n : 4), "runs that went into the median");
        }
        parity_results_release(&baseline);
    }
    parity_error *error = parity_history_baseline(s.db, "gpu-nightly", NULL, 3, &baseline);
    cr_assert_not_null(error, "no run of that suite");
    cr_assert_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
    parity_error_free(error);
    assert_ok(parity_history_baseline(s.db, "smoke", "NVIDIA H200", 3, &baseline), "baseline of the other device");
    cr_assert_float_eq(baseline.combos[0].median_ms, reference.combos[0].median_ms * 100.0, 1e-9 * reference.combos[0].median_ms);
    parity_results_release(&baseline);
    parity_results_release(&reference);
    scratch_remove(&s);
}

Test(history, a_corrupt_results_json_or_a_failing_run_leaves_the_db_unchanged) {
    scratch s = scratch_new();
    parity_results results;
    sample_results_build(&results);
    char good[256], bad[256], arguments[1024];
    write_run_dir(&s, "good", &results, good, sizeof good);
    char path[300], *text;
    size_t size;
    snprintf(path, sizeof path, "%s/results.json", good);
    assert_ok(parity_read_file(path, &text, &size), "reading results.json");
    snprintf(bad, sizeof bad, "%s/bad", s.folder);
    assert_ok(parity_make_directories(bad), "mkdir");
    snprintf(path, sizeof path, "%s/results.json", bad);
    assert_ok(parity_write_file_atomic(path, text, size / 2, true), "writing a truncated results.json");
    free(text);
    snprintf(arguments, sizeof arguments, "history add %s %s --db %s", bad, good, s.db);
    command_result out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 3, "%s", out.output);
    cr_assert(strstr(out.output, path), "names the file: %s", out.output);
    cr_assert(strstr(out.output, "added"), "the good run is still added: %s", out.output);
    free(out.output);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM runs"), 1);
    long long combos = query_number(s.db, "SELECT count(*) FROM combos"), metrics = query_number(s.db, "SELECT count(*) FROM metrics");

    // a run that fails midway (two combos with one id break UNIQUE (run_id, combo) at the 2nd)
    parity_history *history = open_db(&s);
    snprintf(results.context.started, sizeof results.context.started, "2025-02-01T00:00:00Z");
    snprintf(results.combos[1].id, sizeof results.combos[1].id, "%s", results.combos[0].id);
    parity_history_added added;
    parity_error *error = parity_history_add_results(history, &results, "duplicate", &added);
    cr_assert_not_null(error);
    char message[1024];
    parity_error_format(error, message, sizeof message);
    cr_assert(strstr(message, "nothing of it was written"), "%s", message);
    parity_error_free(error);
    cr_assert_not(added.added);
    parity_history_close(history);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM combos"), combos);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM metrics"), metrics);
    parity_results_release(&results);
    scratch_remove(&s);
}

Test(history, a_newer_schema_or_a_foreign_file_is_refused_untouched) {
    scratch s = scratch_new();
    parity_history_close(open_db(&s));
    exec_sql(s.db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    parity_history *history = NULL;
    parity_error *error = parity_history_open(s.db, true, &history);
    cr_assert_not_null(error);
    cr_assert_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
    char message[1024], expected[64];
    parity_error_format(error, message, sizeof message);
    snprintf(expected, sizeof expected, "newer than this parity's (%d)", PARITY_HISTORY_SCHEMA_VERSION);
    cr_assert(strstr(message, "version 99") && strstr(message, expected), "%s", message);
    parity_error_free(error);
    cr_assert_eq(query_number(s.db, "SELECT value FROM meta WHERE key = 'schema_version'"), 99, "left as it was");

    char text_file[160], foreign[160], arguments[512];
    snprintf(text_file, sizeof text_file, "%s/notes.txt", s.folder);
    snprintf(foreign, sizeof foreign, "%s/other.sqlite", s.folder);
    const char *notes = "not a database, just some notes that are long enough to look like a header........\n";
    assert_ok(parity_write_file_atomic(text_file, notes, strlen(notes), true), "writing a text file");
    exec_sql(foreign, "CREATE TABLE things (x INTEGER); INSERT INTO things VALUES (1);");
    const struct {
        const char *db, *subcommand, *message;
    } cases[] = {
        {s.db, "list", "newer than this parity"},
        {text_file, "add /nonexistent", "not a parity history (not a SQLite database)"},
        {text_file, "list", "not a parity history"},
        {foreign, "add /nonexistent", "without a meta table"},
        {foreign, "show 1", "without a meta table"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(arguments, sizeof arguments, "history %s --db %s", cases[c].subcommand, cases[c].db);
        command_result out = run_parity(arguments);
        cr_assert_eq(out.exit_code, 3, "%s: %s", arguments, out.output);
        cr_assert(strstr(out.output, cases[c].message) && strstr(out.output, cases[c].db), "%s: %s", arguments, out.output);
        free(out.output);
    }
    char *after;
    size_t size;
    assert_ok(parity_read_file(text_file, &after, &size), "reading the text file back");
    cr_assert_str_eq(after, notes, "the text file is untouched");
    free(after);
    cr_assert_eq(query_number(foreign, "SELECT count(*) FROM sqlite_master"), 1, "the foreign db is untouched");
    scratch_remove(&s);
}

Test(history, a_version_1_db_is_migrated) {
    scratch s = scratch_new();
    exec_sql(s.db, history_migration(0));
    exec_sql(s.db, "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM sqlite_master WHERE name = 'bench_rows'"), 0);
    parity_history *history;
    assert_ok(parity_history_open(s.db, false, &history), "opening a version 1 db");
    cr_assert_eq(parity_history_schema_version(history), PARITY_HISTORY_SCHEMA_VERSION);
    parity_history_close(history);
    cr_assert_eq(query_number(s.db, "SELECT value FROM meta WHERE key = 'schema_version'"), PARITY_HISTORY_SCHEMA_VERSION);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM sqlite_master WHERE name = 'bench_rows'"), 1);
    cr_assert_null(history_migration(PARITY_HISTORY_SCHEMA_VERSION), "no step past the current version");
    scratch_remove(&s);
}

static const char bench_json[] =
    "{\"context\": {\"tool\": \"parity bench op\", \"device\": \"NVIDIA H200\", \"cuda_runtime\": \"13.0\", \"cuda_driver\": \"13.0\","
    " \"warmup\": 5, \"runs\": 30, \"flop_bound_runs\": 20},"
    " \"benchmarks\": [{\"op\": \"rms_norm\", \"pass\": \"fwd\", \"shape\": \"16384x4096\", \"dtype\": \"bf16\", \"backend\": \"triton\","
    " \"peer\": false, \"status\": \"ok\", \"timing\": {\"median_ms\": 0.2, \"min_ms\": 0.19, \"max_ms\": 0.21, \"noise\": 0.01, \"runs\": 30},"
    " \"gigabytes_per_second\": 1300, \"peer\": \"torch:compile\", \"peer_median_ms\": 0.25},"
    " {\"op\": \"rms_norm\", \"pass\": \"fwd\", \"shape\": \"16384x4096\", \"dtype\": \"bf16\", \"backend\": \"liger_kernel\","
    " \"peer\": false, \"status\": \"not supported: needs sm_100\"}]}";

Test(history, bench_reports_are_stored_and_checked) {
    scratch s = scratch_new();
    char path[160], bad[160], arguments[512];
    snprintf(path, sizeof path, "%s/bench.json", s.folder);
    assert_ok(parity_write_file_atomic(path, bench_json, strlen(bench_json), true), "writing bench.json");
    parity_history *history = open_db(&s);
    parity_history_added added;
    assert_ok(parity_history_add_path(history, path, &added), "adding a bench report");
    cr_assert(added.added);
    cr_assert_eq(added.kind, PARITY_HISTORY_BENCH);
    cr_assert_eq(added.rows, 2);
    assert_ok(parity_history_add_path(history, path, &added), "adding it again");
    cr_assert_not(added.added, "the same report twice adds nothing");
    parity_history_bench_row *rows;
    size_t count;
    assert_ok(parity_history_bench_rows(history, added.run_id, &rows, &count), "bench rows");
    cr_assert_eq(count, 2);
    cr_assert_str_eq(rows[0].backend, "triton");
    cr_assert_float_eq(rows[0].median_ms, 0.2, 1e-15);
    cr_assert_str_eq(rows[0].peer, "torch:compile");
    cr_assert_not(rows[0].is_peer);
    cr_assert_not(rows[1].ok);
    cr_assert(isnan(rows[1].median_ms));
    cr_assert_str_eq(rows[1].status, "not supported: needs sm_100");
    free(rows);
    parity_results results;
    parity_error *error = parity_history_load_run(history, added.run_id, &results);
    cr_assert_not_null(error, "a bench report is no parity run");
    parity_error_free(error);
    parity_history_close(history);

    char *broken = strdup(bench_json);
    const char *value = "\"liger_kernel\"";
    char *second = strstr(broken, value); // the second row's backend becomes the number 7, padded
    memset(second, ' ', strlen(value));
    second[0] = '7';
    snprintf(bad, sizeof bad, "%s/bad-bench.json", s.folder);
    assert_ok(parity_write_file_atomic(bad, broken, strlen(broken), true), "writing a bad bench.json");
    free(broken);
    snprintf(arguments, sizeof arguments, "history add %s --db %s", bad, s.db);
    command_result out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 3, "%s", out.output);
    cr_assert(strstr(out.output, "benchmarks[1].backend is missing or not a string") && strstr(out.output, bad), "%s", out.output);
    free(out.output);
    snprintf(arguments, sizeof arguments, "history show 1 --db %s", s.db);
    out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 0, "%s", out.output);
    cr_assert(strstr(out.output, "1300 GB/s") && strstr(out.output, "not supported: needs sm_100"), "%s", out.output);
    free(out.output);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM runs"), 1);
    scratch_remove(&s);
}

Test(history, two_writers_at_once_both_get_every_run_in) {
    scratch s = scratch_new();
    parity_history_close(open_db(&s));
    enum { WRITERS = 2, RUNS = 6 };
    pid_t children[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        children[w] = fork();
        cr_assert_geq(children[w], 0);
        if (children[w] == 0) {
            int failures = 0;
            parity_history *history;
            if (parity_history_open(s.db, false, &history)) _exit(2);
            for (int r = 0; r < RUNS; r++) {
                parity_results results;
                char started[32]; // two digits each, bounded for gcc at -O1 (SAN=1)
                snprintf(started, sizeof started, "2025-03-%02uT00:00:%02uZ", (unsigned)(w + 1) % 100u, (unsigned)r % 100u);
                sample_run(&results, started, 1.0, 0.01);
                parity_history_added added;
                parity_error *error = parity_history_add_results(history, &results, "writer", &added);
                if (error || !added.added) failures++;
                parity_error_free(error);
                parity_results_release(&results);
            }
            parity_history_close(history);
            _exit(failures ? 1 : 0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status;
        cr_assert_eq(waitpid(children[w], &status, 0), children[w]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed (status %d)", w, status);
    }
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM runs"), WRITERS * RUNS);
    cr_assert_eq(query_number(s.db, "SELECT count(*) FROM combos"), WRITERS * RUNS * 12);
    sqlite3 *connection;
    cr_assert_eq(sqlite3_open_v2(s.db, &connection, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *statement;
    cr_assert_eq(sqlite3_prepare_v2(connection, "PRAGMA integrity_check", -1, &statement, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(statement), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(statement, 0), "ok");
    sqlite3_finalize(statement);
    sqlite3_close(connection);
    scratch_remove(&s);
}

Test(history, usage_errors_exit_2_and_a_missing_db_exits_3) {
    const struct {
        const char *arguments;
        int exit_code;
        const char *message;
    } cases[] = {
        {"history", 2, "usage: parity history add"},
        {"history frob", 2, "unknown subcommand 'frob'"},
        {"history add", 2, "at least one run directory"},
        {"history show abc --db /tmp/x.sqlite", 2, "'abc' is not a run id"},
        {"history list --bogus", 2, "unknown option '--bogus'"},
        {"history show 1 --suite smoke", 2, "--suite is an option of list only"},
        {"history list --db /nonexistent/history.sqlite", 3, "no history database there"},
        {"history --help", 0, "exit status:"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        command_result out = run_parity(cases[c].arguments);
        cr_assert_eq(out.exit_code, cases[c].exit_code, "%s: %s", cases[c].arguments, out.output);
        cr_assert(strstr(out.output, cases[c].message), "%s: %s", cases[c].arguments, out.output);
        free(out.output);
    }
    scratch s = scratch_new();
    parity_history_close(open_db(&s));
    char arguments[256];
    snprintf(arguments, sizeof arguments, "history show 42 --db %s", s.db);
    command_result out = run_parity(arguments);
    cr_assert_eq(out.exit_code, 2, "%s", out.output);
    cr_assert(strstr(out.output, "no run 42"), "%s", out.output);
    free(out.output);
    scratch_remove(&s);
}
