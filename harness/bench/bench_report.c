// bench_report.c: peers, text table, JSON and Markdown of a bench report (see bench_report.h).
#include "harness/bench/bench_report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/text_table.h"
#include "ops/core/file.h"

static const double gibibyte = 1024.0 * 1024.0 * 1024.0;

// ---- peers ----

static parity_error *read_file(const char *path, char **out) {
    *out = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) return PARITY_ERROR(PARITY_ERROR_IO, "parity bench: cannot open %s: %s", path, strerror(errno));
    size_t capacity = 1 << 16, size = 0;
    char *text = malloc(capacity);
    while (text) {
        size += fread(text + size, 1, capacity - size - 1, file);
        if (size < capacity - 1) break;
        char *grown = realloc(text, capacity * 2);
        if (!grown) { free(text); text = NULL; break; }
        text = grown;
        capacity *= 2;
    }
    bool failed = ferror(file);
    fclose(file);
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: reading %s", path);
    if (failed) {
        free(text);
        return PARITY_ERROR(PARITY_ERROR_IO, "parity bench: reading %s failed", path);
    }
    text[size] = '\0';
    *out = text;
    return NULL;
}

// The parsed file, or a DATA error quoting the text where parsing stopped (cJSON's error pointer
// points into the text, so the message is made before the text is freed).
static parity_error *read_json(const char *path, cJSON **out) {
    char *text;
    PARITY_TRY(read_file(path, &text));
    *out = cJSON_Parse(text);
    parity_error *error = NULL;
    if (!*out) {
        const char *near = cJSON_GetErrorPtr();
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: not valid JSON (near '%.40s')", path, near ? near : "");
    }
    free(text);
    return error;
}

static const char *json_string(const cJSON *object, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static bool json_number(const cJSON *object, const char *name, double *value) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!cJSON_IsNumber(item)) return false;
    *value = item->valuedouble;
    return true;
}

// A count (runs, warm-ups, SMs, compute capability, the GEMM size) into an int: 0 when absent or not
// a number, like the other fields; a number that is not an integer from 0 to INT_MAX is a DATA error
// naming `where`.`name` (converting it would be undefined). Does nothing once *error is set.
static void read_count(const char *path, const char *where, const cJSON *object, const char *name, int *out,
                       parity_error **error) {
    double value;
    *out = 0;
    if (*error || !json_number(object, name, &value)) return;
    if (!(value >= 0 && value <= INT_MAX) || value != floor(value))
        *error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s.%s = %g is not a count (an integer from 0 to %d)", path, where, name,
                              value, INT_MAX);
    else *out = (int)value;
}

static parity_error *peer_row(const char *path, const cJSON *item, int index, parity_bench_result *row) {
    memset(row, 0, sizeof *row);
    const char *op = json_string(item, "op"), *pass = json_string(item, "pass"), *shape = json_string(item, "shape");
    const char *dtype = json_string(item, "dtype"), *peer = json_string(item, "peer");
    // a peer that could not run (a torch.compile failure, a variant the script does not time) carries
    // "error": the reason, and no timing
    const char *failure = json_string(item, "error");
    double median = 0, value = 0;
    if (!op || !pass || !shape || !dtype || !peer ||
        (!failure && (!json_number(item, "median_ms", &median) || !(median > 0))))
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: peers[%d] needs strings op, pass, shape, dtype, peer and a positive number median_ms "
                            "(or a string error)",
                            path, index);
    const parity_bench_op *bench_op = parity_bench_find_op(op);
    parity_bench_shape parsed;
    if (!bench_op) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d].op '%s' is not an op parity bench knows", path, index, op);
    parity_error *error = parity_bench_parse_shape(bench_op, shape, &parsed);
    if (error) return parity_error_wrap(error, __FILE__, __LINE__, "%s: peers[%d].shape", path, index);
    parity_dtype parsed_dtype;
    if (!parity_dtype_parse(dtype, &parsed_dtype))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d].dtype '%s' is not a dtype", path, index, dtype);
    if (strcmp(pass, "fwd") != 0 && strcmp(pass, "fwd+bwd") != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d].pass '%s' is neither fwd nor fwd+bwd", path, index, pass);
    bool backward = strcmp(pass, "fwd+bwd") == 0;
    snprintf(row->op, sizeof row->op, "%s", op);
    snprintf(row->pass, sizeof row->pass, "%s", pass);
    parity_bench_shape_string(&parsed, row->shape, sizeof row->shape);
    snprintf(row->dtype, sizeof row->dtype, "%s", parity_dtype_name(parsed_dtype));
    snprintf(row->backend, sizeof row->backend, "torch:%s", peer);
    row->is_peer = true;
    row->extra_peak_bytes = -1;
    if (failure) {
        snprintf(row->status, sizeof row->status, "not measured: %s", failure);
        return NULL;
    }
    row->ok = true;
    snprintf(row->status, sizeof row->status, "peer");
    row->timing.median_ms = median;
    row->timing.min_ms = json_number(item, "min_ms", &value) ? value : NAN;
    row->timing.max_ms = json_number(item, "max_ms", &value) ? value : NAN;
    row->timing.noise = json_number(item, "noise", &value) ? value : NAN;
    char where[32];
    snprintf(where, sizeof where, "peers[%d]", index);
    read_count(path, where, item, "runs", &row->timing.runs, &error);
    if (error) return error;
    row->extra_peak_bytes = json_number(item, "extra_peak_bytes", &value) ? value : -1;
    double seconds = median * 1e-3;
    const parity_op_work_model *work = bench_op->descriptor->work;
    row->bytes = work->bytes(parsed.dims, parsed_dtype, backward);
    row->gigabytes_per_second = row->bytes / seconds / 1e9;
    // "flops", where a peer gives it, must be parity's count for the op, pass and shape, so that both
    // rates are of the same work; a peer that times a part of a flop-bound op ("part": moe_experts'
    // "gate_up GEMM" alone) gives that part's flops instead and is never a parity row's "vs torch"
    const char *part = json_string(item, "part");
    double peer_flops = 0;
    bool has_flops = json_number(item, "flops", &peer_flops);
    if ((has_flops || part) && !work->flop_bound)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d]: flops and part are for the flop-bound ops; %s is not one",
                            path, index, op);
    if (has_flops && !(peer_flops > 0))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d].flops = %g is not a positive number", path, index, peer_flops);
    if (part && !has_flops)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d] times the part '%s' of %s and needs its flops", path, index,
                            part, op);
    if (work->flop_bound) {
        row->flops = work->flops(parsed.dims, backward);
        if (part) {
            // a part's row is of its own pass (the part's name), where a parity row of the same part links
            if (strlen(part) >= sizeof row->pass)
                return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d].part '%s' is longer than %zu characters", path, index,
                                    part, sizeof row->pass - 1);
            snprintf(row->pass, sizeof row->pass, "%s", part);
            row->is_part = true;
            row->flops = peer_flops;
        } else if (has_flops && fabs(peer_flops - row->flops) > 1e-9 * row->flops) {
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: peers[%d].flops = %.17g is not parity's count %.17g for %s %s %s", path,
                                index, peer_flops, row->flops, op, pass, row->shape);
        }
        row->teraflops = row->flops / seconds / 1e12;
    }
    row->gradient_bytes = work->gradient_bytes(parsed.dims, parsed_dtype);
    return NULL;
}

parity_error *parity_bench_read_peers(const char *path, parity_bench_report *report) {
    cJSON *root;
    PARITY_TRY(read_json(path, &root));
    parity_error *error = NULL;
    const cJSON *peers = cJSON_GetObjectItemCaseSensitive(root, "peers");
    if (!cJSON_IsArray(peers)) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'peers' must be an array", path);
    // the peers are measured in the same device call, so on the device this report ran on
    const char *device = json_string(root, "device");
    if (!error && report->context.device_name[0] && (!device || strcmp(device, report->context.device_name) != 0))
        error = PARITY_ERROR(PARITY_ERROR_DATA,
                             "%s: peers measured on '%s', this bench ran on '%s': a peer must be measured in the same run",
                             path, device ? device : "(no field 'device')", report->context.device_name);
    const char *torch = json_string(root, "torch");
    snprintf(report->context.torch_version, sizeof report->context.torch_version, "%s", torch ? torch : "");
    snprintf(report->context.peers_file, sizeof report->context.peers_file, "%s", path);
    size_t first_peer = report->count;
    int index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, peers) {
        if (error) break;
        // tools/bench_torch_peers.py's comm rows (torch.distributed's collectives) are `parity bench
        // comm`'s peers, not an op's: a file holding both still serves `bench op --peers`
        const char *op = json_string(item, "op");
        if (op && strcmp(op, "comm") == 0) {
            index++;
            continue;
        }
        parity_bench_result row;
        error = peer_row(path, item, index++, &row);
        // flop-bound peers against the GEMM ceiling parity's rows use, measured in this run
        if (!error && row.ok && row.flops > 0 && report->context.gemm_teraflops > 0)
            row.gemm_fraction = row.teraflops / report->context.gemm_teraflops;
        if (!error) error = parity_bench_report_add(report, &row);
    }
    cJSON_Delete(root);
    if (error) return error;
    // every parity row: the first measured peer of the same op, pass, shape and dtype that times the
    // whole op, or for a part's row (its pass the part's name) the same part
    for (size_t i = 0; i < report->count; i++) {
        parity_bench_result *row = &report->results[i];
        if (row->is_peer) continue;
        for (size_t p = first_peer; p < report->count; p++) {
            const parity_bench_result *peer = &report->results[p];
            if (!peer->is_peer || !peer->ok || peer->is_part != row->is_part || strcmp(peer->op, row->op) || strcmp(peer->pass, row->pass) ||
                strcmp(peer->shape, row->shape) || strcmp(peer->dtype, row->dtype))
                continue;
            row->peer_median_ms = peer->timing.median_ms;
            snprintf(row->peer, sizeof row->peer, "%s", peer->backend);
            break;
        }
    }
    return NULL;
}

// ---- a report written by parity_bench_write_json ----

static void copy_string(char *destination, size_t size, const cJSON *object, const char *name) {
    const char *value = json_string(object, name);
    snprintf(destination, size, "%s", value ? value : "");
}

// `where` names the object in an error (read_count).
static parity_bench_timing timing_from_json(const char *path, const char *where, const cJSON *object, parity_error **error) {
    parity_bench_timing timing = {NAN, NAN, NAN, NAN, 0};
    double value;
    if (json_number(object, "median_ms", &value)) timing.median_ms = value;
    if (json_number(object, "min_ms", &value)) timing.min_ms = value;
    if (json_number(object, "max_ms", &value)) timing.max_ms = value;
    if (json_number(object, "noise", &value)) timing.noise = value;
    read_count(path, where, object, "runs", &timing.runs, error);
    return timing;
}

static double number_or(const cJSON *object, const char *name, double fallback) {
    double value;
    return json_number(object, name, &value) ? value : fallback;
}

static parity_error *read_row(const char *path, const cJSON *item, int index, parity_bench_result *row) {
    memset(row, 0, sizeof *row);
    const char *fields[] = {"op", "pass", "shape", "dtype", "backend", "status"};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        if (!json_string(item, fields[f]))
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: benchmarks[%d].%s is missing or not a string", path, index,
                                fields[f]);
    copy_string(row->op, sizeof row->op, item, "op");
    copy_string(row->pass, sizeof row->pass, item, "pass");
    copy_string(row->shape, sizeof row->shape, item, "shape");
    copy_string(row->dtype, sizeof row->dtype, item, "dtype");
    copy_string(row->backend, sizeof row->backend, item, "backend");
    copy_string(row->status, sizeof row->status, item, "status");
    row->is_peer = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "peer"));
    row->is_part = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "part"));
    const cJSON *check = cJSON_GetObjectItemCaseSensitive(item, "check");
    row->check_ratio = NAN;
    if (cJSON_IsObject(check)) { // optional: reports written before the correctness column have none
        copy_string(row->check, sizeof row->check, check, "outcome");
        copy_string(row->check_detail, sizeof row->check_detail, check, "detail");
        row->check_ratio = number_or(check, "ratio", NAN);
    }
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(item, "timing");
    row->ok = cJSON_IsObject(timing);
    row->extra_peak_bytes = -1;
    if (!row->ok) return NULL;
    char where[48];
    snprintf(where, sizeof where, "benchmarks[%d].timing", index);
    parity_error *error = NULL;
    row->timing = timing_from_json(path, where, timing, &error);
    if (error) return error;
    if (!(row->timing.median_ms > 0))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: benchmarks[%d].timing.median_ms must be a positive number", path, index);
    row->bytes = number_or(item, "bytes", 0);
    row->gigabytes_per_second = number_or(item, "gigabytes_per_second", 0);
    row->copy_fraction = number_or(item, "copy_fraction", 0);
    row->flops = number_or(item, "flops", 0);
    row->teraflops = number_or(item, "teraflops", 0);
    row->gemm_fraction = number_or(item, "gemm_fraction", 0);
    row->extra_peak_bytes = number_or(item, "extra_peak_bytes", -1);
    row->gradient_bytes = number_or(item, "gradient_bytes", 0);
    row->peer_median_ms = number_or(item, "peer_median_ms", 0);
    copy_string(row->peer, sizeof row->peer, item, "peer");
    if (row->is_peer) row->peer[0] = '\0';
    return NULL;
}

parity_error *parity_bench_read_report(const char *path, parity_bench_report *report) {
    cJSON *root;
    PARITY_TRY(read_json(path, &root));
    parity_error *error = NULL;
    const cJSON *context = cJSON_GetObjectItemCaseSensitive(root, "context");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "benchmarks");
    if (!cJSON_IsObject(context) || !cJSON_IsArray(rows))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: expected an object 'context' and an array 'benchmarks' (a parity bench --output file)",
                             path);
    if (!error) {
        parity_bench_context *c = &report->context;
        copy_string(c->device_name, sizeof c->device_name, context, "device");
        read_count(path, "context", context, "compute_capability", &c->compute_capability, &error);
        read_count(path, "context", context, "multiprocessors", &c->multiprocessors, &error);
        c->l2_bytes = number_or(context, "l2_bytes", 0);
        c->memory_bytes = number_or(context, "memory_bytes", 0);
        copy_string(c->runtime, sizeof c->runtime, context, "cuda_runtime");
        copy_string(c->driver, sizeof c->driver, context, "cuda_driver");
        c->copy_bytes = number_or(context, "copy_bytes", 0);
        c->copy_gigabytes_per_second = number_or(context, "copy_gigabytes_per_second", 0);
        c->copy_timing = timing_from_json(path, "context.copy_timing", cJSON_GetObjectItemCaseSensitive(context, "copy_timing"), &error);
        int gemm_n;
        read_count(path, "context", context, "gemm_n", &gemm_n, &error);
        c->gemm_n = gemm_n;
        c->gemm_teraflops = number_or(context, "gemm_bf16_teraflops", 0);
        c->gemm_timing = timing_from_json(path, "context.gemm_timing", cJSON_GetObjectItemCaseSensitive(context, "gemm_timing"), &error);
        c->flush_bytes = number_or(context, "l2_flush_bytes", 0);
        read_count(path, "context", context, "warmup", &c->warmup, &error);
        read_count(path, "context", context, "runs", &c->runs, &error);
        read_count(path, "context", context, "flop_bound_runs", &c->flop_bound_runs, &error);
        copy_string(c->peers_file, sizeof c->peers_file, context, "peers_file");
        copy_string(c->torch_version, sizeof c->torch_version, context, "torch");
        // optional: reports written before CPU benches and the correctness column are CUDA ones without it
        snprintf(c->device_type, sizeof c->device_type, "cuda");
        snprintf(c->gemm_name, sizeof c->gemm_name, "cuBLAS bf16 GEMM");
        copy_string(c->device_type, sizeof c->device_type, context, "device_type");
        copy_string(c->gemm_name, sizeof c->gemm_name, context, "gemm");
        c->checked = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(context, "checked"));
        c->check_max_elements = (int64_t)number_or(context, "check_max_elements", 0);
        if (!error && (!c->device_name[0] || !(c->copy_gigabytes_per_second > 0)))
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: context.device and a positive context.copy_gigabytes_per_second are required",
                                 path);
    }
    int index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, rows) {
        if (error) break;
        parity_bench_result row;
        error = read_row(path, item, index++, &row);
        if (!error) error = parity_bench_report_add(report, &row);
    }
    cJSON_Delete(root);
    return error;
}

// ---- formatting ----

// The runs a parity row takes unless its budget cuts them (flop-bound rows, and every row on the cpu).
static int expected_runs(const parity_bench_context *c, const parity_bench_result *row) {
    return row->flops > 0 ? c->flop_bound_runs : c->runs;
}

static const char *format_bytes(double bytes, char *buffer, size_t size) {
    if (bytes < 0) snprintf(buffer, size, "-");
    else snprintf(buffer, size, "%.2f GiB", bytes / gibibyte);
    return buffer;
}

static void format_rate(const parity_bench_result *row, char *rate, size_t rate_size, char *fraction, size_t fraction_size) {
    if (!row->ok) {
        snprintf(rate, rate_size, "-");
        snprintf(fraction, fraction_size, "-");
    } else if (row->flops > 0) {
        snprintf(rate, rate_size, row->teraflops >= 1 ? "%.0f TFLOP/s" : "%.2g TFLOP/s", row->teraflops);
        snprintf(fraction, fraction_size, row->gemm_fraction > 0 ? "%.0f%% gemm" : "-", 100 * row->gemm_fraction);
    } else {
        snprintf(rate, rate_size, row->gigabytes_per_second >= 1 ? "%.0f GB/s" : "%.2g GB/s", row->gigabytes_per_second);
        snprintf(fraction, fraction_size, row->copy_fraction > 0 ? "%.0f%% copy" : "-", 100 * row->copy_fraction);
    }
}

// "pass 0.43", "FAIL 3.10", "not supported", "not checked", "reference", "-" (no check).
static void format_check(const parity_bench_result *row, char *buffer, size_t size) {
    if (!row->check[0]) snprintf(buffer, size, "-");
    else if (!strcmp(row->check, "pass") || !strcmp(row->check, "fail")) {
        if (isfinite(row->check_ratio)) snprintf(buffer, size, "%s %.2f", strcmp(row->check, "fail") ? "pass" : "FAIL", row->check_ratio);
        else snprintf(buffer, size, "%s", strcmp(row->check, "fail") ? "pass" : "FAIL");
    } else snprintf(buffer, size, "%s", row->check);
}

static void format_speedup(const parity_bench_result *row, char *buffer, size_t size) {
    if (row->ok && !row->is_peer && row->peer_median_ms > 0)
        snprintf(buffer, size, "%.2fx", row->peer_median_ms / row->timing.median_ms);
    else snprintf(buffer, size, "-");
}

void parity_bench_print_table(const parity_bench_report *report, FILE *stream, bool use_color) {
    const parity_bench_context *c = &report->context;
    bool cpu = strcmp(c->device_type, "cpu") == 0;
    if (cpu) fprintf(stream, "device   %s\n", c->device_name);
    else
        fprintf(stream, "device   %s (SM %d.%d, %d SMs, L2 %.0f MiB), CUDA runtime %s, driver %s\n", c->device_name,
                c->compute_capability / 10, c->compute_capability % 10, c->multiprocessors, c->l2_bytes / 1048576.0,
                c->runtime, c->driver);
    fprintf(stream, "ceilings copy %.0f GB/s (%.0f MiB, read + write, noise %.1f%%), %s %lld^3 %.3g TFLOP/s (noise %.1f%%)\n",
            c->copy_gigabytes_per_second, c->copy_bytes / 1048576.0, 100 * c->copy_timing.noise, c->gemm_name,
            (long long)c->gemm_n, c->gemm_teraflops, 100 * c->gemm_timing.noise);
    fprintf(stream, "timing   %s, %s flushed (%.0f MiB written) before each run, %d warm-up, median of %d runs (%d for flop-bound ops, "
                    "fewer, at least %d, where they would pass %.0f s: the row says how many)\n",
            cpu ? "monotonic clock" : "CUDA events", cpu ? "caches" : "L2", c->flush_bytes / 1048576.0, c->warmup, c->runs,
            c->flop_bound_runs, PARITY_BENCH_MIN_RUNS, PARITY_BENCH_FLOP_BOUND_ROW_BUDGET_MS / 1000);
    if (c->checked)
        fprintf(stream, "check    each backend on these inputs vs %s eager fp64: worst ratio to 2x eager's error (fail > 1)\n",
                c->device_type);
    if (c->peers_file[0]) fprintf(stream, "peers    %s (torch %s); 'vs torch' = torch median / parity median\n", c->peers_file, c->torch_version);
    static const char *const headers[] = {"op shape dtype", "pass", "backend", "check", "median ms (noise)", "rate",
                                          "of ceiling", "extra peak", "vs torch"};
    parity_text_table *table = parity_text_table_new(9, headers);
    if (!table) return;
    for (size_t i = 0; i < report->count; i++) {
        const parity_bench_result *row = &report->results[i];
        char what[128], median[64], rate[32], fraction[32], extra[32], speedup[16], check[48];
        snprintf(what, sizeof what, "%s %s %s", row->op, row->shape, row->dtype);
        format_check(row, check, sizeof check);
        if (row->ok && !row->is_peer && row->timing.runs < expected_runs(c, row))
            snprintf(median, sizeof median, "%.4f (%.1f%%, %d runs)", row->timing.median_ms, 100 * row->timing.noise,
                     row->timing.runs);
        else if (row->ok) snprintf(median, sizeof median, "%.4f (%.1f%%)", row->timing.median_ms, 100 * row->timing.noise);
        else snprintf(median, sizeof median, "%.60s", row->status);
        format_rate(row, rate, sizeof rate, fraction, sizeof fraction);
        format_bytes(row->extra_peak_bytes, extra, sizeof extra);
        format_speedup(row, speedup, sizeof speedup);
        const char *cells[] = {what, row->pass, row->backend, check, median, rate, fraction, extra, speedup};
        parity_text_table_add_row(table, cells);
    }
    parity_text_table_print(table, stream, use_color);
    parity_text_table_free(table);
}

// ---- files ----

// A file's body; the targets are for the Markdown (NULL for JSON).
typedef parity_error *(*write_body)(const parity_bench_report *report, const parity_bench_targets *targets, FILE *stream);

// Renders the body in memory, then writes it atomically (ops/core/file.h): no half-written file is
// ever left at `path`.
static parity_error *write_atomically(const char *path, const parity_bench_report *report, const parity_bench_targets *targets,
                                      write_body body) {
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    if (!stream) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: rendering %s", path);
    parity_error *error = body(report, targets, stream);
    if (fclose(stream) != 0 && !error) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: rendering %s", path);
    if (!error) error = parity_write_file_atomic(path, text, size, true);
    free(text);
    return error;
}

static cJSON *timing_json(const parity_bench_timing *timing) {
    cJSON *object = cJSON_CreateObject();
    cJSON_AddNumberToObject(object, "median_ms", timing->median_ms);
    cJSON_AddNumberToObject(object, "min_ms", isnan(timing->min_ms) ? -1 : timing->min_ms);
    cJSON_AddNumberToObject(object, "max_ms", isnan(timing->max_ms) ? -1 : timing->max_ms);
    cJSON_AddNumberToObject(object, "noise", isnan(timing->noise) ? -1 : timing->noise);
    cJSON_AddNumberToObject(object, "runs", timing->runs);
    return object;
}

static parity_error *json_body(const parity_bench_report *report, const parity_bench_targets *targets, FILE *stream) {
    const parity_bench_context *c = &report->context;
    cJSON *root = cJSON_CreateObject(), *context = cJSON_AddObjectToObject(root, "context");
    cJSON_AddStringToObject(context, "tool", "parity bench op");
    cJSON_AddStringToObject(context, "device", c->device_name);
    cJSON_AddNumberToObject(context, "compute_capability", c->compute_capability);
    cJSON_AddNumberToObject(context, "multiprocessors", c->multiprocessors);
    cJSON_AddNumberToObject(context, "l2_bytes", c->l2_bytes);
    cJSON_AddNumberToObject(context, "memory_bytes", c->memory_bytes);
    cJSON_AddStringToObject(context, "cuda_runtime", c->runtime);
    cJSON_AddStringToObject(context, "cuda_driver", c->driver);
    cJSON_AddNumberToObject(context, "copy_bytes", c->copy_bytes);
    cJSON_AddNumberToObject(context, "copy_gigabytes_per_second", c->copy_gigabytes_per_second);
    cJSON_AddItemToObject(context, "copy_timing", timing_json(&c->copy_timing));
    cJSON_AddNumberToObject(context, "gemm_n", (double)c->gemm_n);
    cJSON_AddNumberToObject(context, "gemm_bf16_teraflops", c->gemm_teraflops);
    cJSON_AddItemToObject(context, "gemm_timing", timing_json(&c->gemm_timing));
    cJSON_AddNumberToObject(context, "l2_flush_bytes", c->flush_bytes);
    cJSON_AddNumberToObject(context, "warmup", c->warmup);
    cJSON_AddNumberToObject(context, "runs", c->runs);
    cJSON_AddNumberToObject(context, "flop_bound_runs", c->flop_bound_runs);
    cJSON_AddStringToObject(context, "peers_file", c->peers_file);
    cJSON_AddStringToObject(context, "torch", c->torch_version);
    cJSON_AddStringToObject(context, "device_type", c->device_type);
    cJSON_AddStringToObject(context, "gemm", c->gemm_name);
    cJSON_AddBoolToObject(context, "checked", c->checked);
    if (c->checked) {
        cJSON_AddNumberToObject(context, "check_max_elements", (double)c->check_max_elements);
        cJSON_AddStringToObject(context, "check_means",
                                "each parity backend's forward and gradients on the benched inputs against the device's "
                                "eager in fp64: ratio = max|c - t| / (2 max|eager - t| + floor max|t|), the worst tensor's; "
                                "fail on a ratio above 1, NaN/Inf, an out-of-bounds write or broken claimed determinism");
    }
    cJSON_AddStringToObject(context, "extra_peak_bytes_means",
                            "device memory at the fwd+bwd peak beyond what was held before it; for parity rows the "
                            "inputs and the caller's gradient buffers (gradient_bytes) were held before, for torch rows "
                            "only the inputs (autograd allocates .grad inside)");
    cJSON *rows = cJSON_AddArrayToObject(root, "benchmarks");
    for (size_t i = 0; i < report->count; i++) {
        const parity_bench_result *row = &report->results[i];
        cJSON *object = cJSON_CreateObject();
        cJSON_AddStringToObject(object, "op", row->op);
        cJSON_AddStringToObject(object, "pass", row->pass);
        cJSON_AddStringToObject(object, "shape", row->shape);
        cJSON_AddStringToObject(object, "dtype", row->dtype);
        cJSON_AddStringToObject(object, "backend", row->backend);
        cJSON_AddBoolToObject(object, "peer", row->is_peer);
        if (row->is_part) cJSON_AddBoolToObject(object, "part", true);
        cJSON_AddStringToObject(object, "status", row->status);
        if (row->check[0]) {
            cJSON *check = cJSON_AddObjectToObject(object, "check");
            cJSON_AddStringToObject(check, "outcome", row->check);
            if (isfinite(row->check_ratio)) cJSON_AddNumberToObject(check, "ratio", row->check_ratio);
            cJSON_AddStringToObject(check, "detail", row->check_detail);
        }
        if (row->ok) {
            cJSON_AddItemToObject(object, "timing", timing_json(&row->timing));
            cJSON_AddNumberToObject(object, "bytes", row->bytes);
            cJSON_AddNumberToObject(object, "gigabytes_per_second", row->gigabytes_per_second);
            cJSON_AddNumberToObject(object, "copy_fraction", row->copy_fraction);
            if (row->flops > 0) {
                cJSON_AddNumberToObject(object, "flops", row->flops);
                cJSON_AddNumberToObject(object, "teraflops", row->teraflops);
                cJSON_AddNumberToObject(object, "gemm_fraction", row->gemm_fraction);
            }
            cJSON_AddNumberToObject(object, "extra_peak_bytes", row->extra_peak_bytes);
            cJSON_AddNumberToObject(object, "gradient_bytes", row->gradient_bytes);
            if (row->peer_median_ms > 0) {
                cJSON_AddStringToObject(object, "peer", row->peer);
                cJSON_AddNumberToObject(object, "peer_median_ms", row->peer_median_ms);
                cJSON_AddNumberToObject(object, "speedup_vs_peer", row->peer_median_ms / row->timing.median_ms);
            }
        }
        cJSON_AddItemToArray(rows, object);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: rendering JSON");
    bool failed = fputs(text, stream) < 0 || fputc('\n', stream) == EOF;
    free(text);
    return failed ? PARITY_ERROR(PARITY_ERROR_IO, "parity bench: writing JSON failed") : NULL;
}

parity_error *parity_bench_write_json(const parity_bench_report *report, const char *path) {
    if (!path) return json_body(report, NULL, stdout);
    return write_atomically(path, report, NULL, json_body);
}

// The targets (bench_targets.h) are checked against the best parity backend of their row.
static const parity_bench_result *best_row(const parity_bench_report *report, const parity_bench_target *target) {
    const parity_bench_result *best = NULL;
    for (size_t i = 0; i < report->count; i++) {
        const parity_bench_result *row = &report->results[i];
        if (row->is_peer || !row->ok || strcmp(row->op, target->op) || strcmp(row->pass, target->pass) ||
            strcmp(row->shape, target->shape) || strcmp(row->dtype, "bf16") || strcmp(row->backend, "eager") == 0 ||
            (target->backend[0] && strcmp(row->backend, target->backend) != 0))
            continue;
        if (!best || row->timing.median_ms < best->timing.median_ms) best = row;
    }
    return best;
}

// A peer target's peer: the measured torch row of that name ("torch:<peer>") for the target's op, pass,
// shape and bf16; NULL when this run did not measure it.
static const parity_bench_result *target_peer(const parity_bench_report *report, const parity_bench_target *target) {
    for (size_t i = 0; i < report->count; i++) {
        const parity_bench_result *row = &report->results[i];
        if (row->is_peer && row->ok && strncmp(row->backend, "torch:", 6) == 0 && strcmp(row->backend + 6, target->peer) == 0 &&
            strcmp(row->op, target->op) == 0 && strcmp(row->pass, target->pass) == 0 &&
            strcmp(row->shape, target->shape) == 0 && strcmp(row->dtype, "bf16") == 0)
            return row;
    }
    return NULL;
}

static void target_line(const parity_bench_report *report, const parity_bench_target *target, FILE *stream) {
    const parity_bench_result *row = best_row(report, target);
    if (!row) {
        fprintf(stream, "| %s | not measured in this run | - |\n", target->what);
        return;
    }
    char measured[256], verdict[256];
    if (target->minimum_gigabytes_per_second > 0) {
        snprintf(measured, sizeof measured, "%s: %.0f GB/s (%.0f%% of copy)", row->backend, row->gigabytes_per_second,
                 100 * row->copy_fraction);
        if (row->gigabytes_per_second >= target->minimum_gigabytes_per_second) snprintf(verdict, sizeof verdict, "met");
        else
            snprintf(verdict, sizeof verdict, "missed by %.0f GB/s (%.1f%%)",
                     target->minimum_gigabytes_per_second - row->gigabytes_per_second,
                     100 * (1 - row->gigabytes_per_second / target->minimum_gigabytes_per_second));
    } else if (!target_peer(report, target)) { // a peer target needs its peer measured in this run
        snprintf(measured, sizeof measured, "%s: %.2f ms, extra peak %.2f GiB (+ %.2f GiB gradients)", row->backend,
                 row->timing.median_ms, row->extra_peak_bytes / gibibyte, row->gradient_bytes / gibibyte);
        snprintf(verdict, sizeof verdict, "no verdict: torch %s not measured in this run", target->peer);
    } else {
        const parity_bench_result *peer = target_peer(report, target);
        double extra_gib = row->extra_peak_bytes / gibibyte, speedup = peer->timing.median_ms / row->timing.median_ms;
        snprintf(measured, sizeof measured, "%s: %.2f ms vs torch %s %.2f ms (%.2fx), extra peak %.2f GiB (+ %.2f GiB gradients)",
                 row->backend, row->timing.median_ms, target->peer, peer->timing.median_ms, speedup, extra_gib,
                 row->gradient_bytes / gibibyte);
        bool fast = speedup >= target->minimum_speedup;
        bool small = !(target->maximum_extra_gib > 0) || extra_gib <= target->maximum_extra_gib;
        if (fast && small) snprintf(verdict, sizeof verdict, "met");
        else if (!fast)
            snprintf(verdict, sizeof verdict, "missed: %.2fx of torch, target %.2fx (%.1f%% short)%s", speedup,
                     target->minimum_speedup, 100 * (1 - speedup / target->minimum_speedup), small ? "" : "; memory over");
        else snprintf(verdict, sizeof verdict, "missed: memory over");
    }
    fprintf(stream, "| %s | %s | %s |\n", target->what, measured, verdict);
}

// ", 5 runs" for a parity row that took fewer runs than the report's count (its budget), else "".
static const char *few_runs(const parity_bench_report *report, const parity_bench_result *row, char *buffer, size_t size) {
    buffer[0] = '\0';
    if (!row->is_peer && row->ok && row->timing.runs < expected_runs(&report->context, row))
        snprintf(buffer, size, ", %d runs", row->timing.runs);
    return buffer;
}

// "#" repeated `level` times (1 to 5).
static const char *heading(int level) {
    static const char marks[] = "#####";
    return marks + sizeof marks - 1 - (level < 1 ? 1 : level > 5 ? 5 : level);
}

static parity_error *markdown_at(const parity_bench_report *report, const parity_bench_targets *targets, int level,
                                 FILE *stream) {
    const parity_bench_context *c = &report->context;
    fprintf(stream, "%s parity bench: %s\n\n", heading(level), c->device_name);
    bool cpu = strcmp(c->device_type, "cpu") == 0;
    if (cpu)
        fprintf(stream, "Ceilings measured in the same run: memcpy **%.0f GB/s** (%.0f MiB, read + write, noise %.1f%%), %s "
                        "%lld^3 **%.3g TFLOP/s** (noise %.1f%%).\n\n",
                c->copy_gigabytes_per_second, c->copy_bytes / 1048576.0, 100 * c->copy_timing.noise, c->gemm_name,
                (long long)c->gemm_n, c->gemm_teraflops, 100 * c->gemm_timing.noise);
    else
        fprintf(stream, "CUDA runtime %s, driver %s, SM %d.%d, %d SMs, L2 %.0f MiB. Ceilings measured in the same run: "
                        "device copy **%.0f GB/s** (2 GiB, read + write, noise %.1f%%), cuBLAS bf16 GEMM %lld^3 **%.0f TFLOP/s** "
                        "(noise %.1f%%).\n\n",
                c->runtime, c->driver, c->compute_capability / 10, c->compute_capability % 10, c->multiprocessors,
                c->l2_bytes / 1048576.0, c->copy_gigabytes_per_second, 100 * c->copy_timing.noise, (long long)c->gemm_n,
                c->gemm_teraflops, 100 * c->gemm_timing.noise);
    if (cpu) fprintf(stream, "Timing on the cpu: the monotonic clock around each call, caches flushed by the write below; ");
    if (c->checked)
        fprintf(stream, "Check: before timing, each backend's forward and gradients on the very inputs timed against %s eager in "
                        "fp64: the worst tensor's ratio of max|c - t| to 2 max|eager - t| + floor max|t| (`parity check op`'s "
                        "rule; above 1 fails, as do NaN/Inf, out-of-bounds writes and broken claimed determinism).\n\n",
                c->device_type);
    fprintf(stream, "Timing: CUDA events around each call, L2 flushed (%.0f MiB written) before every run, %d warm-up runs, "
                    "median of %d runs (%d for the flop-bound cross_entropy, attention, moe_experts and gated_delta_rule, fewer where they would pass "
                    "%.0f s, at least %d: the noise column says how many); noise = median absolute deviation / "
                    "median. Rates count the bytes that must move (each input read once, each output written once) or "
                    "the GEMM flops (cross_entropy: 6 N H V; attention, causal: issue 13's count 2 B H D sum(L^2) over "
                    "the documents forward, i.e. 2 B H T^2 D for one document a row, 3.5x that forward + backward; moe_experts: the "
                    "experts' GEMMs 2 R (H 2I + I H) = 6 R H I forward over the R = N K routed rows, 3x that forward + "
                    "backward; a torch peer timing a part, the gate_up GEMM alone, counts its own 4 R H I; gated_delta_rule: the "
                    "chunked algorithm's products B T H (2C (3K + 2V) + 6 K V) with C = 64 forward, 3x that forward + backward). Extra peak = device memory at the fwd+bwd peak beyond what was held "
                    "before it: for parity the inputs and the caller's gradient buffers (listed apart), for torch the "
                    "inputs only.%s%s%s\n\n",
            c->flush_bytes / 1048576.0, c->warmup, c->runs, c->flop_bound_runs, PARITY_BENCH_FLOP_BOUND_ROW_BUDGET_MS / 1000,
            PARITY_BENCH_MIN_RUNS, c->peers_file[0] ? " PyTorch peers (torch " : "", c->peers_file[0] ? c->torch_version : "",
            c->peers_file[0] ? ") from tools/bench_torch_peers.py in the same device call; speedup = torch median / parity median." : "");
    fprintf(stream, "%s Targets\n\n| target | parity (the best backend unless the target names one) | verdict |\n|---|---|---|\n",
            heading(level + 1));
    for (size_t t = 0; t < targets->count; t++) target_line(report, &targets->items[t], stream);
    fprintf(stream, "\n%s Results\n\n| op | shape | dtype | pass | backend |%s median ms | noise | rate | of ceiling | extra peak | gradients | vs torch |\n"
                    "|---|---|---|---|---|%s---|---|---|---|---|---|---|\n", heading(level + 1), c->checked ? " check |" : "",
            c->checked ? "---|" : "");
    for (size_t i = 0; i < report->count; i++) {
        const parity_bench_result *row = &report->results[i];
        char rate[32], fraction[32], extra[32], gradients[32], speedup[16], runs[32];
        format_rate(row, rate, sizeof rate, fraction, sizeof fraction);
        format_bytes(row->extra_peak_bytes, extra, sizeof extra);
        format_bytes(row->ok && !strcmp(row->pass, "fwd+bwd") ? row->gradient_bytes : -1, gradients, sizeof gradients);
        format_speedup(row, speedup, sizeof speedup);
        char check[64] = "";
        if (c->checked) {
            char cell[48];
            format_check(row, cell, sizeof cell);
            snprintf(check, sizeof check, " %s |", cell);
        }
        if (row->ok)
            fprintf(stream, "| %s | %s | %s | %s | %s |%s %.4f | %.1f%%%s | %s | %s | %s | %s | %s |\n", row->op, row->shape,
                    row->dtype, row->pass, row->backend, check, row->timing.median_ms, 100 * row->timing.noise,
                    few_runs(report, row, runs, sizeof runs), rate, fraction, extra, gradients, speedup);
        else
            fprintf(stream, "| %s | %s | %s | %s | %s |%s %s | | | | | | |\n", row->op, row->shape, row->dtype, row->pass,
                    row->backend, check, row->status);
    }
    return ferror(stream) ? PARITY_ERROR(PARITY_ERROR_IO, "parity bench: writing Markdown failed") : NULL;
}

static parity_error *markdown_body(const parity_bench_report *report, const parity_bench_targets *targets, FILE *stream) {
    return markdown_at(report, targets, 1, stream);
}

parity_error *parity_bench_render_markdown(const parity_bench_report *report, const parity_bench_targets *targets,
                                           int heading_level, char **out) {
    *out = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(out, &size);
    if (!stream) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: rendering Markdown");
    parity_error *error = markdown_at(report, targets, heading_level, stream);
    if (fclose(stream) != 0 && !error) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: rendering Markdown");
    if (error) {
        free(*out);
        *out = NULL;
    }
    return error;
}

parity_error *parity_bench_write_markdown(const parity_bench_report *report, const parity_bench_targets *targets,
                                          const char *path) {
    return write_atomically(path, report, targets, markdown_body);
}
