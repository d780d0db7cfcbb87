// history_bench.c: a bench report (`parity bench ... --output FILE.json`, written by
// harness/bench/bench_report.c) into the history: a `runs` row of kind 'bench' (suite "bench", the
// report's device, driver and runtime; dated by the file's modification time, since the report
// carries no date) and one `bench_rows` row per benchmark. The report has no git sha or start time,
// so its identity is its device and a hash of its content: the same file twice adds nothing. Read
// here with cJSON rather than through harness/bench (reports/ never includes the harness).
#include "reports/history/history_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *string_of(const cJSON *object, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

// The number `name` of `object`, or `fallback` when absent or not a number (bench JSON writes -1
// for "not measured": such values become `fallback` too when `positive`).
static double number_of(const cJSON *object, const char *name, double fallback, bool positive) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!cJSON_IsNumber(item)) return fallback;
    return positive && !(item->valuedouble > 0) ? fallback : item->valuedouble;
}

// FNV-1a, 64 bits, as 16 hex digits: the content part of a bench report's identity.
static void content_hash(const char *text, char hex[17]) {
    uint64_t hash = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) hash = (hash ^ *p) * 1099511628211ull;
    snprintf(hex, 17, "%016llx", (unsigned long long)hash);
}

static parity_error *check_row(const char *path, const cJSON *item, int index) {
    if (!cJSON_IsObject(item)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: benchmarks[%d] is not an object", path, index);
    const char *fields[] = {"op", "pass", "shape", "dtype", "backend", "status"};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        if (!string_of(item, fields[f]))
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: benchmarks[%d].%s is missing or not a string", path, index, fields[f]);
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(item, "timing");
    if (timing && !cJSON_IsObject(timing))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: benchmarks[%d].timing is not an object", path, index);
    if (timing && !(number_of(timing, "median_ms", 0, true) > 0))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: benchmarks[%d].timing.median_ms must be a positive number", path, index);
    return NULL;
}

static parity_error *insert_row(parity_history *history, sqlite3_stmt *statement, int64_t run_id, int index, const cJSON *item) {
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(item, "timing");
    sqlite3_reset(statement);
    int i = 1;
    sqlite3_bind_int64(statement, i++, run_id);
    sqlite3_bind_int(statement, i++, index);
    const char *texts[] = {"op", "pass", "shape", "dtype", "backend"};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) history_bind_text(statement, i++, string_of(item, texts[t]));
    sqlite3_bind_int(statement, i++, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "peer")));
    history_bind_text(statement, i++, string_of(item, "status"));
    history_bind_double(statement, i++, timing ? number_of(timing, "median_ms", NAN, true) : NAN);
    history_bind_double(statement, i++, timing ? number_of(timing, "min_ms", NAN, true) : NAN);
    history_bind_double(statement, i++, timing ? number_of(timing, "max_ms", NAN, true) : NAN);
    history_bind_double(statement, i++, timing ? number_of(timing, "noise", NAN, false) : NAN);
    sqlite3_bind_int(statement, i++, timing ? (int)number_of(timing, "runs", 0, true) : 0);
    const char *numbers[] = {"gigabytes_per_second", "copy_fraction", "teraflops", "gemm_fraction"};
    for (size_t n = 0; n < sizeof numbers / sizeof numbers[0]; n++) sqlite3_bind_double(statement, i++, number_of(item, numbers[n], 0, true));
    // the writer gives a row two "peer" keys: the bool (is it a peer) and, when linked, the peer's name
    const char *peer = "";
    for (const cJSON *child = item->child; child; child = child->next)
        if (child->string && strcmp(child->string, "peer") == 0 && cJSON_IsString(child)) peer = child->valuestring;
    history_bind_text(statement, i++, peer);
    sqlite3_bind_double(statement, i++, number_of(item, "peer_median_ms", 0, true));
    int rc = sqlite3_step(statement);
    return rc == SQLITE_DONE ? NULL : history_sqlite_error(history, rc, "adding a bench row");
}

static parity_error *insert_rows(parity_history *history, int64_t run_id, const void *list) {
    const cJSON *rows = list;
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history,
                               "INSERT INTO bench_rows (run_id, position, op, pass, shape, dtype, backend, is_peer, status,"
                               " median_ms, min_ms, max_ms, noise, runs, gigabytes_per_second, copy_fraction, teraflops,"
                               " gemm_fraction, peer, peer_median_ms)"
                               " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               &statement));
    parity_error *error = NULL;
    int index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, rows) {
        if (error) break;
        error = insert_row(history, statement, run_id, index++, item);
    }
    sqlite3_finalize(statement);
    return error;
}

parity_error *history_add_bench(parity_history *history, const char *path, const char *text, const void *parsed,
                                parity_history_added *out) {
    const cJSON *root = parsed;
    const cJSON *context = cJSON_GetObjectItemCaseSensitive(root, "context");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "benchmarks");
    out->kind = PARITY_HISTORY_BENCH;
    out->rows = (size_t)cJSON_GetArraySize(rows);
    const char *device = string_of(context, "device");
    if (!device || !device[0]) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: context.device is missing or empty (a bench report names its device)", path);
    int index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, rows) PARITY_TRY(check_row(path, item, index++));

    char hash[17], identity[512], started[32] = "", method[160], libraries[96] = "";
    content_hash(text, hash);
    snprintf(identity, sizeof identity, "bench\x1f%s\x1f%s", device, hash);
    struct stat info;
    struct tm utc;
    time_t when = stat(path, &info) == 0 ? info.st_mtime : time(NULL);
    if (gmtime_r(&when, &utc)) strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &utc);
    snprintf(method, sizeof method, "CUDA events, %d warm-up, median of %d runs (%d for flop-bound ops)",
             (int)number_of(context, "warmup", 0, true), (int)number_of(context, "runs", 0, true),
             (int)number_of(context, "flop_bound_runs", 0, true));
    const char *torch = string_of(context, "torch");
    if (torch && torch[0]) snprintf(libraries, sizeof libraries, "torch %s", torch);
    const char *tool = string_of(context, "tool");
    const char *driver = string_of(context, "cuda_driver"), *runtime = string_of(context, "cuda_runtime");
    history_run_row row = {
        .identity = identity, .kind = "bench", .suite = "bench", .git_sha = "", .started = started, .finished = started,
        .host = "", .device = device, .driver = driver ? driver : "", .cuda = runtime ? runtime : "", .libraries = libraries,
        .command = tool ? tool : "parity bench", .tolerance_rule = "", .timing_method = method, .interrupted = "",
        .source = path, .combos_selected = 0, .results_schema = 0,
    };
    return history_add_once(history, &row, insert_rows, rows, path, out);
}
