// history_query.c: reading the history back: the list of runs with their status counts, one run as
// a parity_results, a bench report's rows, and the baseline a comparison runs against (the median of
// the last N runs; its contract is in history.h).
#include "reports/history/history_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/timing_stats.h"

#define RUN_COLUMNS                                                                                                   \
    "SELECT r.id, r.kind, r.suite, r.git_sha, r.started, r.finished, r.host, r.device, r.source,"                     \
    " (SELECT count(*) FROM combos c WHERE c.run_id = r.id AND c.status = 'pass'),"                                  \
    " (SELECT count(*) FROM combos c WHERE c.run_id = r.id AND c.status = 'fail'),"                                  \
    " (SELECT count(*) FROM combos c WHERE c.run_id = r.id AND c.status = 'not_supported'),"                         \
    " (SELECT count(*) FROM combos c WHERE c.run_id = r.id AND c.status = 'error'),"                                 \
    " (SELECT count(*) FROM combos c WHERE c.run_id = r.id AND c.status = 'excluded'),"                              \
    " (SELECT count(*) FROM combos c WHERE c.run_id = r.id),"                                                        \
    " (SELECT count(*) FROM bench_rows b WHERE b.run_id = r.id) FROM runs r"

static void read_run(sqlite3_stmt *statement, parity_history_run *run) {
    memset(run, 0, sizeof *run);
    run->id = sqlite3_column_int64(statement, 0);
    char kind[16];
    history_column_text(statement, 1, kind, sizeof kind);
    run->kind = strcmp(kind, "bench") == 0 ? PARITY_HISTORY_BENCH : PARITY_HISTORY_RUN;
    history_column_text(statement, 2, run->suite, sizeof run->suite);
    history_column_text(statement, 3, run->git_sha, sizeof run->git_sha);
    history_column_text(statement, 4, run->started, sizeof run->started);
    history_column_text(statement, 5, run->finished, sizeof run->finished);
    history_column_text(statement, 6, run->host, sizeof run->host);
    history_column_text(statement, 7, run->device, sizeof run->device);
    history_column_text(statement, 8, run->source, sizeof run->source);
    for (int s = 0; s < PARITY_COMBO_STATUS_COUNT; s++) run->counts[s] = (size_t)sqlite3_column_int64(statement, 9 + s);
    run->combo_count = (size_t)sqlite3_column_int64(statement, 14);
    run->bench_rows = (size_t)sqlite3_column_int64(statement, 15);
}

parity_error *parity_history_list(parity_history *history, const char *suite, parity_history_run **runs, size_t *count) {
    *runs = NULL;
    *count = 0;
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history, RUN_COLUMNS " WHERE ?1 IS NULL OR r.suite = ?1 ORDER BY r.started, r.id", &statement));
    history_bind_text(statement, 1, suite);
    parity_error *error = NULL;
    size_t capacity = 0;
    int rc;
    while (!error && (rc = sqlite3_step(statement)) == SQLITE_ROW) {
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 16;
            parity_history_run *grown = realloc(*runs, capacity * sizeof *grown);
            if (!grown) {
                error = PARITY_ERROR(PARITY_ERROR_MEMORY, "history: listing runs");
                break;
            }
            *runs = grown;
        }
        read_run(statement, &(*runs)[(*count)++]);
    }
    if (!error && rc != SQLITE_DONE) error = history_sqlite_error(history, rc, "listing runs");
    sqlite3_finalize(statement);
    if (error) {
        free(*runs);
        *runs = NULL;
        *count = 0;
    }
    return error;
}

parity_error *parity_history_get_run(parity_history *history, int64_t run_id, parity_history_run *out) {
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history, RUN_COLUMNS " WHERE r.id = ?", &statement));
    sqlite3_bind_int64(statement, 1, run_id);
    int rc = sqlite3_step(statement);
    if (rc == SQLITE_ROW) read_run(statement, out);
    sqlite3_finalize(statement);
    if (rc == SQLITE_DONE) return PARITY_ERROR(PARITY_ERROR_USAGE, "no run %lld in %s", (long long)run_id, history->path);
    return rc == SQLITE_ROW ? NULL : history_sqlite_error(history, rc, "reading a run");
}

// ---- one run as parity_results ----

static parity_error *read_context(parity_history *history, int64_t run_id, parity_results_context *c) {
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history,
                               "SELECT kind, suite, git_sha, host, device, driver, cuda, libraries, command, started, finished,"
                               " tolerance_rule, timing_method, interrupted, combos_selected, results_schema FROM runs WHERE id = ?",
                               &statement));
    sqlite3_bind_int64(statement, 1, run_id);
    int rc = sqlite3_step(statement);
    parity_error *error = NULL;
    if (rc == SQLITE_ROW) {
        char kind[16];
        history_column_text(statement, 0, kind, sizeof kind);
        if (strcmp(kind, "run") != 0)
            error = PARITY_ERROR(PARITY_ERROR_USAGE, "run %lld of %s is a bench report, not a parity run (no combos)", (long long)run_id,
                                 history->path);
        struct {
            char *out;
            size_t size;
        } texts[] = {{c->suite, sizeof c->suite},
                     {c->git_sha, sizeof c->git_sha},
                     {c->host, sizeof c->host},
                     {c->device, sizeof c->device},
                     {c->driver_version, sizeof c->driver_version},
                     {c->cuda_version, sizeof c->cuda_version},
                     {c->libraries, sizeof c->libraries},
                     {c->command, sizeof c->command},
                     {c->started, sizeof c->started},
                     {c->finished, sizeof c->finished},
                     {c->tolerance_rule, sizeof c->tolerance_rule},
                     {c->timing_method, sizeof c->timing_method},
                     {c->interrupted, sizeof c->interrupted}};
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) history_column_text(statement, (int)i + 1, texts[i].out, texts[i].size);
        c->combos_selected = (size_t)sqlite3_column_int64(statement, 14);
        c->schema_version = sqlite3_column_int(statement, 15);
    } else if (rc == SQLITE_DONE) {
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "no run %lld in %s", (long long)run_id, history->path);
    } else {
        error = history_sqlite_error(history, rc, "reading a run");
    }
    sqlite3_finalize(statement);
    return error;
}

static parity_error *parse_json_columns(parity_history *history, const char *samples, const char *fields, parity_combo_result *combo) {
    cJSON *array = cJSON_Parse(samples), *object = cJSON_Parse(fields);
    parity_error *error = NULL;
    if (!cJSON_IsArray(array) || !cJSON_IsObject(object)) {
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: combo %s: samples_ms or fields is not the JSON parity writes", history->path, combo->id);
    } else {
        size_t count = (size_t)cJSON_GetArraySize(array);
        double *values = count ? malloc(count * sizeof *values) : NULL;
        if (count && !values) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "history: samples of %s", combo->id);
        size_t i = 0;
        const cJSON *item;
        cJSON_ArrayForEach(item, array) if (values) values[i++] = cJSON_IsNumber(item) ? item->valuedouble : NAN;
        if (!error) error = parity_combo_set_samples(combo, values, count);
        free(values);
        cJSON_ArrayForEach(item, object) {
            if (combo->field_count == PARITY_COMBO_MAX_FIELDS || !cJSON_IsString(item)) break;
            parity_field_choice *choice = &combo->fields[combo->field_count++];
            snprintf(choice->field, sizeof choice->field, "%s", item->string);
            snprintf(choice->value, sizeof choice->value, "%s", item->valuestring);
        }
    }
    cJSON_Delete(array);
    cJSON_Delete(object);
    return error;
}

static parity_error *read_combo(parity_history *history, sqlite3_stmt *statement, parity_combo_result *combo) {
    struct {
        char *out;
        size_t size;
    } texts[] = {{combo->id, sizeof combo->id},       {combo->suite, sizeof combo->suite}, {combo->model, sizeof combo->model},
                 {combo->batch, sizeof combo->batch}, {combo->dtype, sizeof combo->dtype}, {combo->device, sizeof combo->device}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) history_column_text(statement, (int)i + 1, texts[i].out, texts[i].size);
    char status[32];
    history_column_text(statement, 7, status, sizeof status);
    if (!parity_combo_status_parse(status, &combo->status))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: combo %s: unknown status '%s'", history->path, combo->id, status);
    history_column_text(statement, 8, combo->reason, sizeof combo->reason);
    combo->is_eager_baseline = sqlite3_column_int(statement, 9) != 0;
    combo->median_ms = history_column_double(statement, 10);
    combo->noise = history_column_double(statement, 11);
    combo->warmup_count = (size_t)sqlite3_column_int64(statement, 13);
    combo->tokens = sqlite3_column_int64(statement, 14);
    combo->peak_memory_bytes = sqlite3_column_int64(statement, 15);
    const unsigned char *samples = sqlite3_column_text(statement, 12), *fields = sqlite3_column_text(statement, 16);
    return parse_json_columns(history, samples ? (const char *)samples : "", fields ? (const char *)fields : "", combo);
}

static parity_error *read_metrics(parity_history *history, sqlite3_stmt *statement, int64_t combo_id, parity_combo_result *combo) {
    sqlite3_reset(statement);
    sqlite3_bind_int64(statement, 1, combo_id);
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
        parity_metric metric = {0};
        history_column_text(statement, 0, metric.name, sizeof metric.name);
        metric.value = history_column_double(statement, 1);
        metric.golden = history_column_double(statement, 2);
        metric.error = history_column_double(statement, 3);
        metric.tolerance = history_column_double(statement, 4);
        metric.ratio = history_column_double(statement, 5);
        metric.pass = sqlite3_column_int(statement, 6) != 0;
        history_column_text(statement, 7, metric.basis, sizeof metric.basis);
        PARITY_TRY(parity_metric_add(combo, &metric));
    }
    return rc == SQLITE_DONE ? NULL : history_sqlite_error(history, rc, "reading metrics");
}

static parity_error *read_combos(parity_history *history, int64_t run_id, parity_results *out) {
    sqlite3_stmt *combos = NULL, *metrics = NULL;
    parity_error *error = history_prepare(history,
                                          "SELECT id, combo, suite, model, batch, dtype, device, status, reason, is_eager_baseline,"
                                          " median_ms, noise, samples_ms, warmup_count, tokens, peak_memory_bytes, fields"
                                          " FROM combos WHERE run_id = ? ORDER BY position",
                                          &combos);
    if (!error)
        error = history_prepare(history,
                                "SELECT name, value, golden, error, tolerance, ratio, pass, basis FROM metrics"
                                " WHERE combo_id = ? ORDER BY position",
                                &metrics);
    int rc = SQLITE_DONE;
    if (!error) sqlite3_bind_int64(combos, 1, run_id);
    while (!error && (rc = sqlite3_step(combos)) == SQLITE_ROW) {
        parity_combo_result *combo = parity_results_add_combo(out);
        if (!combo) {
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "history: loading run %lld", (long long)run_id);
            break;
        }
        error = read_combo(history, combos, combo);
        if (!error) error = read_metrics(history, metrics, sqlite3_column_int64(combos, 0), combo);
    }
    if (!error && rc != SQLITE_DONE) error = history_sqlite_error(history, rc, "reading combos");
    sqlite3_finalize(combos);
    sqlite3_finalize(metrics);
    return error;
}

parity_error *parity_history_load_run(parity_history *history, int64_t run_id, parity_results *out) {
    memset(out, 0, sizeof *out);
    // one read transaction: the run and its combos as of one commit
    parity_error *error = history_exec(history, "BEGIN");
    if (!error) error = read_context(history, run_id, &out->context);
    if (!error) error = read_combos(history, run_id, out);
    history_rollback(history);
    if (error) parity_results_release(out);
    return error;
}

// ---- bench rows ----

parity_error *parity_history_bench_rows(parity_history *history, int64_t run_id, parity_history_bench_row **rows, size_t *count) {
    *rows = NULL;
    *count = 0;
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history,
                               "SELECT op, pass, shape, dtype, backend, is_peer, status, median_ms, min_ms, max_ms, noise, runs,"
                               " gigabytes_per_second, copy_fraction, teraflops, gemm_fraction, peer, peer_median_ms"
                               " FROM bench_rows WHERE run_id = ? ORDER BY position",
                               &statement));
    sqlite3_bind_int64(statement, 1, run_id);
    parity_error *error = NULL;
    size_t capacity = 0;
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 32;
            parity_history_bench_row *grown = realloc(*rows, capacity * sizeof *grown);
            if (!grown) {
                error = PARITY_ERROR(PARITY_ERROR_MEMORY, "history: bench rows");
                break;
            }
            *rows = grown;
        }
        parity_history_bench_row *row = &(*rows)[(*count)++];
        memset(row, 0, sizeof *row);
        history_column_text(statement, 0, row->op, sizeof row->op);
        history_column_text(statement, 1, row->pass, sizeof row->pass);
        history_column_text(statement, 2, row->shape, sizeof row->shape);
        history_column_text(statement, 3, row->dtype, sizeof row->dtype);
        history_column_text(statement, 4, row->backend, sizeof row->backend);
        row->is_peer = sqlite3_column_int(statement, 5) != 0;
        history_column_text(statement, 6, row->status, sizeof row->status);
        row->median_ms = history_column_double(statement, 7);
        row->ok = !isnan(row->median_ms);
        row->min_ms = history_column_double(statement, 8);
        row->max_ms = history_column_double(statement, 9);
        row->noise = history_column_double(statement, 10);
        row->runs = sqlite3_column_int(statement, 11);
        row->gigabytes_per_second = sqlite3_column_double(statement, 12);
        row->copy_fraction = sqlite3_column_double(statement, 13);
        row->teraflops = sqlite3_column_double(statement, 14);
        row->gemm_fraction = sqlite3_column_double(statement, 15);
        history_column_text(statement, 16, row->peer, sizeof row->peer);
        row->peer_median_ms = sqlite3_column_double(statement, 17);
    }
    if (!error && rc != SQLITE_DONE) error = history_sqlite_error(history, rc, "reading bench rows");
    sqlite3_finalize(statement);
    if (error) {
        free(*rows);
        *rows = NULL;
        *count = 0;
    }
    return error;
}

// ---- baseline ----

// Median and largest noise of one combo over the chosen runs (the ids are in the temp table).
static parity_error *combo_baseline(parity_history *history, sqlite3_stmt *statement, parity_combo_result *combo, size_t run_count) {
    sqlite3_reset(statement);
    history_bind_text(statement, 1, combo->id);
    double medians[64];
    size_t count = 0;
    double noise = NAN;
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
        double median = history_column_double(statement, 0), row_noise = history_column_double(statement, 1);
        if (!isnan(median) && count < sizeof medians / sizeof medians[0] && count < run_count) medians[count++] = median;
        if (!isnan(row_noise) && (isnan(noise) || row_noise > noise)) noise = row_noise;
    }
    if (rc != SQLITE_DONE) return history_sqlite_error(history, rc, "reading a combo's timings");
    combo->median_ms = count == 0 ? NAN : parity_median_in_place(medians, count);
    combo->noise = noise;
    PARITY_TRY(parity_combo_set_samples(combo, NULL, 0));
    combo->warmup_count = count;
    return NULL;
}

parity_error *parity_history_baseline_in(parity_history *history, const char *suite, const char *device, int last_n,
                                         parity_results *out) {
    memset(out, 0, sizeof *out);
    if (last_n < 1) return PARITY_ERROR(PARITY_ERROR_USAGE, "history baseline: the number of runs must be at least 1, not %d", last_n);
    if (last_n > 64) last_n = 64;
    if (!suite) return PARITY_ERROR(PARITY_ERROR_USAGE, "history baseline: no suite");
    sqlite3_stmt *runs;
    PARITY_TRY(history_exec(history, "BEGIN"));
    parity_error *error = history_prepare(history,
                                          "SELECT id FROM runs WHERE kind = 'run' AND suite = ?1 AND (?2 IS NULL OR device = ?2)"
                                          " ORDER BY started DESC, id DESC LIMIT ?3",
                                          &runs);
    int64_t ids[64];
    size_t count = 0;
    if (!error) {
        history_bind_text(runs, 1, suite);
        history_bind_text(runs, 2, device);
        sqlite3_bind_int(runs, 3, last_n);
        int rc;
        while ((rc = sqlite3_step(runs)) == SQLITE_ROW) ids[count++] = sqlite3_column_int64(runs, 0);
        if (rc != SQLITE_DONE) error = history_sqlite_error(history, rc, "choosing the baseline runs");
        sqlite3_finalize(runs);
    }
    if (!error && count == 0)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: no run of suite %s%s%s to make a baseline from", history->path, suite,
                             device ? " on device " : "", device ? device : "");
    if (!error) error = read_context(history, ids[0], &out->context);
    if (!error) error = read_combos(history, ids[0], out);
    char id_list[64 * 24] = "";
    for (size_t i = 0, used = 0; i < count; i++)
        used += (size_t)snprintf(id_list + used, sizeof id_list - used, "%s%lld", i ? ", " : "", (long long)ids[i]);
    sqlite3_stmt *timings = NULL;
    if (!error) {
        char sql[2048];
        snprintf(sql, sizeof sql, "SELECT median_ms, noise FROM combos WHERE combo = ? AND run_id IN (%s)", id_list);
        error = history_prepare(history, sql, &timings);
    }
    for (size_t i = 0; !error && i < out->combo_count; i++) error = combo_baseline(history, timings, &out->combos[i], count);
    sqlite3_finalize(timings);
    history_rollback(history);
    if (error) {
        parity_results_release(out);
        return error;
    }
    // Each part bounded so the whole fits context.command (1024): a summary line, not a record.
    snprintf(out->context.command, sizeof out->context.command,
             "parity history baseline: median of %zu run%s (ids %.400s) of suite %.200s on %.200s", count,
             count == 1 ? "" : "s", id_list, suite, device ? device : out->context.device);
    return NULL;
}

parity_error *parity_history_baseline(const char *db_path, const char *suite, const char *device, int last_n, parity_results *out) {
    memset(out, 0, sizeof *out);
    parity_history *history;
    PARITY_TRY(parity_history_open(db_path, false, &history));
    parity_error *error = parity_history_baseline_in(history, suite, device, last_n, out);
    parity_history_close(history);
    return error;
}
