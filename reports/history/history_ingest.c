// history_ingest.c: one results.json (a parity_results) into the history: a `runs` row, a `combos`
// row per combo and, per combo, its top-level metrics and its worst one — in one transaction, and
// not at all when the same run (suite, git sha, started, finished, host, device, command) is already there. Also the
// dispatch of `parity history add PATH`: a run directory, a results.json or a bench report.
#include "reports/history/history_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ops/core/file.h"

static parity_error *find_run(parity_history *history, const char *identity, int64_t *id, bool *found) {
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history, "SELECT id FROM runs WHERE identity = ?", &statement));
    history_bind_text(statement, 1, identity);
    int rc = sqlite3_step(statement);
    *found = rc == SQLITE_ROW;
    if (*found) *id = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? NULL : history_sqlite_error(history, rc, "looking the run up");
}

static parity_error *insert_run(parity_history *history, const history_run_row *row, int64_t *id) {
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history,
                               "INSERT INTO runs (identity, kind, suite, git_sha, started, finished, host, device, driver, cuda,"
                               " libraries, command, tolerance_rule, timing_method, interrupted, combos_selected,"
                               " results_schema, source, added)"
                               " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                               &statement));
    const char *texts[] = {row->identity, row->kind,      row->suite,   row->git_sha,        row->started,
                           row->finished, row->host,      row->device,  row->driver,         row->cuda,
                           row->libraries, row->command,  row->tolerance_rule, row->timing_method, row->interrupted};
    int index = 1;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) history_bind_text(statement, index++, texts[i]);
    sqlite3_bind_int64(statement, index++, row->combos_selected);
    sqlite3_bind_int(statement, index++, row->results_schema);
    history_bind_text(statement, index++, row->source);
    int rc = sqlite3_step(statement);
    sqlite3_finalize(statement);
    if (rc != SQLITE_DONE) return history_sqlite_error(history, rc, "adding the run");
    *id = sqlite3_last_insert_rowid(history->db);
    return NULL;
}

parity_error *history_add_once(parity_history *history, const history_run_row *row, history_insert_rows insert,
                               const void *rows, const char *what, parity_history_added *out) {
    PARITY_TRY(history_begin(history));
    bool found = false;
    parity_error *error = find_run(history, row->identity, &out->run_id, &found);
    if (!error && !found) {
        error = insert_run(history, row, &out->run_id);
        if (!error) error = insert(history, out->run_id, rows);
        if (!error) error = history_commit(history);
        if (!error) out->added = true;
    } else if (!error) {
        error = history_commit(history);
    }
    if (error) {
        history_rollback(history);
        out->run_id = 0;
        out->added = false;
        return parity_error_wrap(error, __FILE__, __LINE__, "adding %s to the history (nothing of it was written)", what);
    }
    return NULL;
}

// The index of the combo's worst metric (largest ratio; a NaN ratio is worse than any), or -1.
static long worst_metric(const parity_combo_result *combo) {
    long worst = -1;
    for (size_t i = 0; i < combo->metric_count; i++) {
        double ratio = combo->metrics[i].ratio;
        if (worst < 0) worst = (long)i;
        else if (isnan(combo->metrics[worst].ratio)) continue;
        else if (isnan(ratio) || ratio > combo->metrics[worst].ratio) worst = (long)i;
    }
    return worst;
}

// malloc'ed JSON text of the combo's samples and of its field choices (NULL when out of memory).
// Written by hand, not by cJSON: its printer keeps 15 digits when they compare equal within an
// epsilon, and a sample must read back bit for bit. Non-finite samples are JSON null.
static char *samples_json(const parity_combo_result *combo) {
    size_t size = 3 + 26 * combo->sample_count, used = 0;
    char *text = malloc(size);
    if (!text) return NULL;
    text[used++] = '[';
    for (size_t i = 0; i < combo->sample_count; i++) {
        double value = combo->samples_ms[i];
        if (isfinite(value)) used += (size_t)snprintf(text + used, size - used, "%s%.17g", i ? "," : "", value);
        else used += (size_t)snprintf(text + used, size - used, "%snull", i ? "," : "");
    }
    snprintf(text + used, size - used, "]");
    return text;
}

static char *fields_json(const parity_combo_result *combo) {
    cJSON *object = cJSON_CreateObject();
    for (size_t i = 0; object && i < combo->field_count; i++)
        cJSON_AddStringToObject(object, combo->fields[i].field, combo->fields[i].value);
    char *text = object ? cJSON_PrintUnformatted(object) : NULL;
    cJSON_Delete(object);
    return text;
}

static parity_error *insert_metric(parity_history *history, sqlite3_stmt *statement, int64_t combo_id, size_t position,
                                   const parity_metric *metric) {
    sqlite3_reset(statement);
    sqlite3_bind_int64(statement, 1, combo_id);
    sqlite3_bind_int64(statement, 2, (int64_t)position);
    history_bind_text(statement, 3, metric->name);
    history_bind_double(statement, 4, metric->value);
    history_bind_double(statement, 5, metric->golden);
    history_bind_double(statement, 6, metric->error);
    history_bind_double(statement, 7, metric->tolerance);
    history_bind_double(statement, 8, metric->ratio);
    sqlite3_bind_int(statement, 9, metric->pass);
    history_bind_text(statement, 10, metric->basis);
    int rc = sqlite3_step(statement);
    return rc == SQLITE_DONE ? NULL : history_sqlite_error(history, rc, "adding a metric");
}

static parity_error *insert_combo(parity_history *history, sqlite3_stmt *combos, sqlite3_stmt *metrics, int64_t run_id, size_t position,
                                  const parity_combo_result *combo) {
    char *samples = samples_json(combo), *fields = fields_json(combo);
    if (!samples || !fields) {
        free(samples);
        free(fields);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "history: combo %s", combo->id);
    }
    long worst = worst_metric(combo);
    sqlite3_reset(combos);
    sqlite3_bind_int64(combos, 1, run_id);
    sqlite3_bind_int64(combos, 2, (int64_t)position);
    const char *texts[] = {combo->id, combo->suite, combo->model, combo->batch, combo->dtype, combo->device,
                           parity_combo_status_name(combo->status), combo->reason};
    int index = 3;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) history_bind_text(combos, index++, texts[i]);
    sqlite3_bind_int(combos, index++, combo->is_eager_baseline);
    if (worst >= 0) {
        history_bind_double(combos, index++, combo->metrics[worst].ratio);
        history_bind_text(combos, index++, combo->metrics[worst].name);
    } else {
        sqlite3_bind_null(combos, index++);
        sqlite3_bind_null(combos, index++);
    }
    history_bind_double(combos, index++, combo->median_ms);
    history_bind_double(combos, index++, combo->noise);
    history_bind_text(combos, index++, samples);
    sqlite3_bind_int64(combos, index++, (int64_t)combo->warmup_count);
    sqlite3_bind_int64(combos, index++, combo->tokens);
    sqlite3_bind_int64(combos, index++, combo->peak_memory_bytes);
    history_bind_text(combos, index++, fields);
    int rc = sqlite3_step(combos);
    free(samples);
    free(fields);
    if (rc != SQLITE_DONE) {
        char what[400];
        snprintf(what, sizeof what, "adding combo %s", combo->id);
        return history_sqlite_error(history, rc, what);
    }
    int64_t combo_id = sqlite3_last_insert_rowid(history->db);
    for (size_t i = 0; i < combo->metric_count; i++) {
        // kept: the top-level metrics (no ':' in the name: loss, aux_loss, grad_norm) and the worst
        if (strchr(combo->metrics[i].name, ':') && (long)i != worst) continue;
        PARITY_TRY(insert_metric(history, metrics, combo_id, i, &combo->metrics[i]));
    }
    return NULL;
}

static parity_error *insert_combos(parity_history *history, int64_t run_id, const void *rows) {
    const parity_results *results = rows;
    sqlite3_stmt *combos = NULL, *metrics = NULL;
    parity_error *error = history_prepare(history,
                                          "INSERT INTO combos (run_id, position, combo, suite, model, batch, dtype, device, status,"
                                          " reason, is_eager_baseline, worst_ratio, worst_metric, median_ms, noise, samples_ms,"
                                          " warmup_count, tokens, peak_memory_bytes, fields)"
                                          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                          &combos);
    if (!error)
        error = history_prepare(history,
                                "INSERT INTO metrics (combo_id, position, name, value, golden, error, tolerance, ratio, pass, basis)"
                                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                &metrics);
    for (size_t i = 0; !error && i < results->combo_count; i++)
        error = insert_combo(history, combos, metrics, run_id, i, &results->combos[i]);
    sqlite3_finalize(combos);
    sqlite3_finalize(metrics);
    return error;
}

parity_error *parity_history_add_results(parity_history *history, const parity_results *results, const char *source,
                                         parity_history_added *out) {
    memset(out, 0, sizeof *out);
    out->kind = PARITY_HISTORY_RUN;
    out->rows = results->combo_count;
    const parity_results_context *c = &results->context;
    const char *name = source ? source : "results";
    if (!c->suite[0]) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: context.suite is empty (a run's identity needs it)", name);
    if (!c->started[0]) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: context.started is empty (a run's identity needs it)", name);
    char identity[4096];
    // started and finished are to the second: two short runs of one suite can share both, but not
    // also the command (their --out differs)
    snprintf(identity, sizeof identity, "run\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", c->suite, c->git_sha, c->started,
             c->host, c->device, c->finished, c->command);
    history_run_row row = {
        .identity = identity, .kind = "run", .suite = c->suite, .git_sha = c->git_sha, .started = c->started,
        .finished = c->finished, .host = c->host, .device = c->device, .driver = c->driver_version, .cuda = c->cuda_version,
        .libraries = c->libraries, .command = c->command, .tolerance_rule = c->tolerance_rule,
        .timing_method = c->timing_method, .interrupted = c->interrupted, .source = source ? source : "",
        .combos_selected = (int64_t)c->combos_selected, .results_schema = c->schema_version,
    };
    return history_add_once(history, &row, insert_combos, results, name, out);
}

// A bench report: a JSON object with an object "context" and an array "benchmarks".
static bool is_bench_report(const cJSON *root) {
    return cJSON_IsObject(root) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "context")) &&
           cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "benchmarks"));
}

parity_error *parity_history_add_path(parity_history *history, const char *path, parity_history_added *out) {
    memset(out, 0, sizeof *out);
    char file[4200];
    struct stat info;
    if (stat(path, &info) == 0 && S_ISDIR(info.st_mode)) snprintf(file, sizeof file, "%s/results.json", path);
    else snprintf(file, sizeof file, "%s", path);
    char *text = NULL;
    size_t size = 0;
    PARITY_TRY(parity_read_file(file, &text, &size));
    char absolute[4096];
    const char *source = realpath(file, absolute) ? absolute : file;
    cJSON *root = cJSON_ParseWithLength(text, size);
    parity_error *error = NULL;
    if (is_bench_report(root)) {
        error = history_add_bench(history, source, text, root, out);
    } else {
        parity_results results;
        error = parity_results_read_json(file, &results);
        if (!error) {
            error = parity_history_add_results(history, &results, source, out);
            parity_results_release(&results);
        }
    }
    cJSON_Delete(root);
    free(text);
    return error;
}
