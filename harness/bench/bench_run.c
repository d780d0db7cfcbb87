// bench_run.c: see bench_run.h.
#include "harness/bench/bench_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench_check.h"
#include "harness/bench/bench_timer.h"
#include "ops/core/cuda_api.h"
#include "ops/core/memory.h"
#include "ops/registry.h"

enum {
    COPY_CEILING_RUNS = 10,
    GEMM_CEILING_RUNS = 20,
    GEMM_CEILING_N = 8192,
    CPU_GEMM_CEILING_N = 1024, // OpenBLAS fp32: 2 GFLOP a call, well under a second on a laptop core
};
static const size_t copy_ceiling_bytes = (size_t)2 << 30;      // 2 GiB, as perf-anchors.md
static const size_t cpu_copy_ceiling_bytes = (size_t)256 << 20; // beyond any last-level cache

parity_error *parity_bench_report_add(parity_bench_report *report, const parity_bench_result *result) {
    if (report->count == report->capacity) {
        size_t capacity = report->capacity ? 2 * report->capacity : 32;
        parity_bench_result *grown = realloc(report->results, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: growing the report to %zu rows", capacity);
        report->results = grown;
        report->capacity = capacity;
    }
    report->results[report->count++] = *result;
    return NULL;
}

void parity_bench_report_release(parity_bench_report *report) {
    free(report->results);
    memset(report, 0, sizeof *report);
}

bool parity_bench_report_has_errors(const parity_bench_report *report) {
    for (size_t i = 0; i < report->count; i++) {
        if (!report->results[i].is_peer && !report->results[i].ok && strncmp(report->results[i].status, "error", 5) == 0)
            return true;
        if (!report->results[i].is_peer && strcmp(report->results[i].check, "fail") == 0) return true;
    }
    return false;
}

// ---- one pass of one backend ----

typedef struct pass_context {
    const parity_exec *exec;
    const parity_bench_op *op;
    parity_bench_inputs *inputs;
    const void *kernels;
    parity_saved saved;
    bool backward;
} pass_context;

static parity_error *pass_step(void *raw) {
    pass_context *context = raw;
    PARITY_TRY(parity_bench_forward(context->exec, context->op, context->inputs, context->kernels, &context->saved));
    if (context->backward)
        PARITY_TRY(parity_bench_backward(context->exec, context->op, context->inputs, context->kernels, &context->saved));
    return NULL;
}

static parity_error *pass_after(void *raw) {
    parity_saved_release(&((pass_context *)raw)->saved);
    return NULL;
}

// Device memory at the peak of one fwd+bwd beyond what was held before it (inputs, outputs and
// gradient buffers are allocated before).
static parity_error *measure_extra_peak(pass_context *context, parity_device device, double *extra) {
    bool cuda = device.type == PARITY_DEVICE_CUDA;
    if (cuda) PARITY_TRY(parity_cuda_synchronize(device.index));
    parity_memory_stats before = parity_memory_get_stats(device);
    parity_memory_reset_peak(device);
    parity_error *error = pass_step(context);
    if (!error && cuda) error = parity_cuda_synchronize(device.index);
    parity_memory_stats after = parity_memory_get_stats(device);
    pass_after(context);
    if (!error) *extra = (double)after.peak_bytes - (double)before.current_bytes;
    return error;
}

static void set_status(parity_bench_result *result, const char *prefix, parity_error *error) {
    char message[200];
    parity_error_format(error, message, sizeof message);
    snprintf(result->status, sizeof result->status, "%s: %s", prefix, message);
    parity_error_free(error);
}

// A backend that failed while timed: out of device memory (eager's T x T scores at long T) and an
// unsupported case are limits of the backend ("not supported"), anything else an error.
static void set_timing_failure(parity_bench_result *result, parity_error *error) {
    parity_error_kind kind = parity_error_kind_of(error);
    set_status(result, kind == PARITY_ERROR_UNSUPPORTED ? "not supported"
                       : kind == PARITY_ERROR_MEMORY    ? "not supported: out of memory"
                                                        : "error",
               error);
}

static void time_pass(const parity_bench_options *options, const parity_bench_context *context, const parity_exec *exec,
                      parity_bench_timer *timer,
                      const parity_bench_op *op, const parity_bench_shape *shape, parity_bench_inputs *inputs,
                      const parity_backend *backend, bool backward, parity_bench_result *result) {
    const parity_op_work_model *work = op->descriptor->work;
    pass_context pass = {.exec = exec, .op = op, .inputs = inputs, .kernels = backend->kernels, .backward = backward};
    int runs = work->flop_bound ? options->flop_bound_runs : options->runs;
    int warmup = work->flop_bound ? (options->warmup < 3 ? options->warmup : 3) : options->warmup;
    parity_error *error = NULL;
    // on the cpu every op gets the row budget: CPU backends are slow enough for any op to pass it
    if (work->flop_bound || options->device.type == PARITY_DEVICE_CPU) {
        // a slow backend (eager's T x T scores, a first CUDA-core kernel) gets fewer runs: one timed call,
        // which is also the first warm-up, sets how many fit the row's budget (at least 3; the row's
        // timing.runs says how many were taken), and then one more warm-up at most
        parity_bench_timing first;
        error = parity_bench_timer_measure(timer, pass_step, pass_after, &pass, 0, 1, &first);
        if (!error) {
            double fit = PARITY_BENCH_FLOP_BOUND_ROW_BUDGET_MS / first.median_ms;
            if (warmup > 0) warmup--;
            if (fit < runs) {
                runs = fit < PARITY_BENCH_MIN_RUNS ? PARITY_BENCH_MIN_RUNS : (int)fit;
                if (warmup > 1) warmup = 1;
            }
        }
    }
    if (!error)
        error = parity_bench_timer_measure(timer, pass_step, pass_after, &pass, warmup, runs, &result->timing);
    pass_after(&pass);
    if (error) {
        set_timing_failure(result, error);
        return;
    }
    result->ok = true;
    snprintf(result->status, sizeof result->status, "ok");
    double seconds = result->timing.median_ms * 1e-3;
    result->bytes = work->bytes(shape->dims, options->dtype, backward);
    result->gigabytes_per_second = result->bytes / seconds / 1e9;
    result->copy_fraction = result->gigabytes_per_second / context->copy_gigabytes_per_second;
    if (work->flop_bound) {
        result->flops = work->flops(shape->dims, backward);
        result->teraflops = result->flops / seconds / 1e12;
        result->gemm_fraction = result->teraflops / context->gemm_teraflops;
    }
    result->gradient_bytes = work->gradient_bytes(shape->dims, options->dtype);
    if (backward) {
        error = measure_extra_peak(&pass, options->device, &result->extra_peak_bytes);
        if (error) {
            result->ok = false;
            set_status(result, "error (peak memory run)", error);
        }
    }
}

// ---- a part of the op alone (bench_ops.h: moe_experts' gate_up GEMM) ----

typedef struct part_context {
    const parity_exec *exec;
    const parity_bench_part *part;
    const void *kernels;
    void *state;
} part_context;

static parity_error *part_step(void *raw) {
    part_context *context = raw;
    return context->part->run(context->exec, context->kernels, context->state);
}

// Times `backend`'s part of the op into *result; false (no row) when the backend has no such part.
static bool time_part(const parity_bench_options *options, const parity_bench_context *context, const parity_exec *exec,
                      parity_bench_timer *timer, const parity_bench_op *op, const parity_bench_shape *shape,
                      parity_bench_inputs *inputs, const parity_backend *backend, parity_bench_result *result) {
    const parity_bench_part *part = op->part;
    part_context step = {.exec = exec, .part = part, .kernels = backend->kernels};
    parity_error *error = part->prepare(exec, backend->kernels, inputs, &step.state);
    if (!error && !step.state) return false;
    result->is_part = true;
    int warmup = options->warmup < 3 ? options->warmup : 3;
    if (!error) error = parity_bench_timer_measure(timer, part_step, NULL, &step, warmup, options->flop_bound_runs, &result->timing);
    part->release(backend->kernels, step.state);
    if (error) {
        set_timing_failure(result, error);
        return true;
    }
    result->ok = true;
    snprintf(result->status, sizeof result->status, "ok");
    double seconds = result->timing.median_ms * 1e-3;
    result->bytes = part->bytes(shape->dims, options->dtype);
    result->gigabytes_per_second = result->bytes / seconds / 1e9;
    result->copy_fraction = result->gigabytes_per_second / context->copy_gigabytes_per_second;
    result->flops = part->flops(shape->dims);
    result->teraflops = result->flops / seconds / 1e12;
    result->gemm_fraction = result->teraflops / context->gemm_teraflops;
    return true;
}

// The backends to time for `op`: the named ones, or every backend of the op on the bench's device
// (test-only excluded).
static size_t backends_for(const parity_bench_options *options, const char *op, const char **names, size_t capacity) {
    size_t count = 0;
    if (options->backends) {
        for (size_t i = 0; i < options->backend_count && count < capacity; i++) names[count++] = options->backends[i];
        return count;
    }
    for (size_t i = 0; i < parity_registry_count() && count < capacity; i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (backend->device == options->device.type && strcmp(backend->op, op) == 0 &&
            !(backend->capabilities & PARITY_CAP_TEST_ONLY))
            names[count++] = backend->name;
    }
    return count;
}

// ---- the correctness column ----

// What the check of one backend on a shape's inputs says, copied into each of its rows.
typedef struct check_cell {
    char outcome[16];
    double ratio;
    char detail[200];
} check_cell;

// The shape's check: its case over the inputs and the eager reference, made on first use.
typedef struct shape_check {
    parity_bench_check_case check_case;
    op_verdict_reference reference;
    bool made;
    parity_error *failure; // the reference could not be made: every backend's cell says why
    char skip[200];        // "not checked" for every backend, with this reason
} shape_check;

static void shape_check_release(shape_check *check) {
    if (check->made) op_verdict_reference_release(&check->reference);
    parity_error_free(check->failure);
}

static void check_backend(const parity_bench_options *options, const parity_bench_op *op, const parity_bench_inputs *inputs,
                          shape_check *check, const parity_backend *backend, check_cell *cell) {
    memset(cell, 0, sizeof *cell);
    cell->ratio = NAN;
    if (!options->check) return;
    if (strcmp(backend->name, "eager") == 0) { // judged against itself it would pass by construction
        snprintf(cell->outcome, sizeof cell->outcome, "reference");
        snprintf(cell->detail, sizeof cell->detail, "this device's eager is what the others are checked against");
        return;
    }
    if (!check->made && !check->failure && !check->skip[0]) {
        int64_t largest = parity_bench_check_largest(op, inputs);
        if (options->check_max_elements > 0 && largest > options->check_max_elements)
            snprintf(check->skip, sizeof check->skip, "a tensor of %lld elements, over --check-max-elements %lld",
                     (long long)largest, (long long)options->check_max_elements);
        else {
            parity_bench_check_case_init(&check->check_case, op, inputs, "bench inputs");
            fprintf(stderr, "parity bench: %s: the eager fp64 reference for the correctness column\n", op->descriptor->name);
            check->failure = op_verdict_reference_run(&check->check_case.test_case, options->dtype, options->device, 0,
                                                      &check->reference);
            check->made = !check->failure;
        }
    }
    if (check->skip[0] || check->failure) {
        snprintf(cell->outcome, sizeof cell->outcome, "not checked");
        if (check->skip[0]) snprintf(cell->detail, sizeof cell->detail, "%s", check->skip);
        else {
            char message[180];
            snprintf(cell->detail, sizeof cell->detail, "the reference failed: %s",
                     parity_error_format(check->failure, message, sizeof message));
        }
        return;
    }
    op_verdict verdict;
    op_verdict_options verdict_options = {.backend = backend->name, .device = options->device, .dtype = options->dtype,
                                          .reference_device = options->device};
    parity_error *error = op_verdict_judge(&check->check_case.test_case, verdict_options, &check->reference, &verdict);
    if (error) {
        char message[180];
        snprintf(cell->outcome, sizeof cell->outcome, "not checked");
        snprintf(cell->detail, sizeof cell->detail, "%s", parity_error_format(error, message, sizeof message));
        parity_error_free(error);
        return;
    }
    snprintf(cell->outcome, sizeof cell->outcome, "%s", verdict.outcome == OP_VERDICT_PASS ? "pass"
                                                        : verdict.outcome == OP_VERDICT_FAIL ? "fail"
                                                                                             : "not supported");
    if (verdict.worst >= 0) cell->ratio = verdict.tensors[verdict.worst].ratio;
    if (verdict.outcome == OP_VERDICT_PASS && verdict.worst >= 0)
        snprintf(cell->detail, sizeof cell->detail, "worst %s, max rel %.2e", verdict.tensors[verdict.worst].tensor,
                 verdict.tensors[verdict.worst].max_relative);
    else snprintf(cell->detail, sizeof cell->detail, "%.199s", verdict.reason);
}

static parity_error *bench_shape(const parity_bench_options *options, const parity_bench_context *context,
                                 const parity_exec *exec, parity_bench_timer *timer, const parity_bench_op *op, const parity_bench_shape *shape,
                                 parity_bench_report *report) {
    const char *names[32];
    const char *op_name = op->descriptor->name;
    size_t backend_count = backends_for(options, op_name, names, 32);
    parity_bench_inputs *inputs = NULL;
    parity_error *setup_error = parity_bench_setup(op, shape, options->dtype, options->device, &inputs);
    shape_check check = {0};
    for (size_t b = 0; b < backend_count; b++) {
        check_cell cell = {.ratio = NAN};
        bool cell_made = false;
        // passes: 0 fwd, 1 fwd+bwd, 2 the op's part alone (where it has one and the backend too)
        for (int pass = op->forward_pass ? 0 : 1; pass < (op->part ? 3 : 2); pass++) {
            parity_bench_result result;
            memset(&result, 0, sizeof result);
            result.extra_peak_bytes = -1;
            snprintf(result.op, sizeof result.op, "%s", op_name);
            snprintf(result.pass, sizeof result.pass, "%s", pass == 2 ? op->part->name : pass ? "fwd+bwd" : "fwd");
            parity_bench_shape_string(shape, result.shape, sizeof result.shape);
            snprintf(result.dtype, sizeof result.dtype, "%s", parity_dtype_name(options->dtype));
            snprintf(result.backend, sizeof result.backend, "%s", names[b]);
            const parity_backend *backend = NULL;
            parity_error *error = setup_error ? NULL
                                              : parity_registry_resolve(op_name, names[b], options->device, &backend);
            bool runnable = !setup_error && !error && (backend->dtypes & PARITY_DTYPE_BIT(options->dtype));
            if (pass == 2 && !runnable) { // the fwd and fwd+bwd rows say why the backend did not run
                parity_error_free(error);
                continue;
            }
            if (setup_error) {
                char message[200];
                snprintf(result.status, sizeof result.status, "error: setting up inputs: %s",
                         parity_error_format(setup_error, message, sizeof message));
            } else if (error) {
                set_status(&result, "not available", error);
            } else if (!(backend->dtypes & PARITY_DTYPE_BIT(options->dtype))) {
                snprintf(result.status, sizeof result.status, "not supported: no %s", parity_dtype_name(options->dtype));
            } else if ((error = parity_bench_prepare(op, inputs, backend))) {
                set_status(&result, "error: preparing the call", error);
            } else if (pass == 2) {
                // the part has no check of its own: the whole op's was made on its rows
                if (!time_part(options, context, exec, timer, op, shape, inputs, backend, &result)) continue;
            } else {
                if (!cell_made) {
                    check_backend(options, op, inputs, &check, backend, &cell);
                    cell_made = true;
                    if (cell.outcome[0])
                        fprintf(stderr, "parity bench: %s %s %s: check %s%s%s\n", op_name, result.shape, names[b], cell.outcome,
                                cell.detail[0] ? ": " : "", cell.detail);
                }
                time_pass(options, context, exec, timer, op, shape, inputs, backend, pass == 1, &result);
            }
            if (pass != 2) {
                snprintf(result.check, sizeof result.check, "%s", cell.outcome);
                result.check_ratio = cell.ratio;
                snprintf(result.check_detail, sizeof result.check_detail, "%s", cell.detail);
            }
            fprintf(stderr, "parity bench: %s %s %s %s: %s%s\n", result.op, result.shape, result.pass, result.backend,
                    result.ok ? "" : result.status, result.ok ? "timed" : "");
            PARITY_TRY(parity_bench_report_add(report, &result));
        }
    }
    shape_check_release(&check);
    parity_error_free(setup_error);
    parity_bench_teardown(inputs);
    return NULL;
}

static parity_error *measure_context(const parity_bench_options *options, parity_bench_timer *timer,
                                     parity_bench_context *context) {
    parity_device_info info;
    PARITY_TRY(parity_device_query(options->device, &info));
    snprintf(context->device_name, sizeof context->device_name, "%s", info.name);
    context->compute_capability = info.compute_capability;
    context->multiprocessors = info.multiprocessors;
    context->l2_bytes = (double)info.l2_cache_bytes;
    context->memory_bytes = (double)info.total_memory;
    bool cuda = options->device.type == PARITY_DEVICE_CUDA;
    snprintf(context->device_type, sizeof context->device_type, "%s", cuda ? "cuda" : "cpu");
    snprintf(context->gemm_name, sizeof context->gemm_name, "%s", cuda ? "cuBLAS bf16 GEMM" : "OpenBLAS fp32 GEMM");
    context->checked = options->check;
    context->check_max_elements = options->check_max_elements;
    if (cuda) parity_cuda_versions(context->runtime, sizeof context->runtime, context->driver, sizeof context->driver);
    context->flush_bytes = (double)parity_bench_timer_flush_bytes(timer);
    context->warmup = options->warmup;
    context->runs = options->runs;
    context->flop_bound_runs = options->flop_bound_runs;
    size_t copy_bytes = cuda ? copy_ceiling_bytes : cpu_copy_ceiling_bytes;
    context->copy_bytes = (double)copy_bytes;
    PARITY_TRY_CONTEXT(parity_bench_copy_ceiling(timer, copy_bytes, COPY_CEILING_RUNS, &context->copy_timing,
                                                 &context->copy_gigabytes_per_second),
                       "measuring the device copy bandwidth");
    context->gemm_n = cuda ? GEMM_CEILING_N : CPU_GEMM_CEILING_N;
    PARITY_TRY_CONTEXT(parity_bench_gemm_ceiling(timer, context->gemm_n, GEMM_CEILING_RUNS, &context->gemm_timing,
                                                 &context->gemm_teraflops),
                       "measuring the %s rate", context->gemm_name);
    fprintf(stderr, "parity bench: %s: copy %.0f GB/s, %s %.3g TFLOP/s\n", context->device_name,
            context->copy_gigabytes_per_second, context->gemm_name, context->gemm_teraflops);
    return NULL;
}

parity_error *parity_bench_run(const parity_bench_options *options, parity_bench_report *report) {
    PARITY_CHECK(options->device.type == PARITY_DEVICE_CUDA || options->device.type == PARITY_DEVICE_CPU, PARITY_ERROR_USAGE,
                 "parity bench: --device %s: bench times cpu and CUDA backends", parity_device_type_name(options->device.type));
    PARITY_CHECK(options->runs >= 1 && options->flop_bound_runs >= 1 && options->warmup >= 0, PARITY_ERROR_USAGE,
                 "parity bench: runs must be >= 1 and warm-up >= 0");
    parity_device_info info;
    PARITY_TRY(parity_device_query(options->device, &info)); // a clear "no CUDA device" before anything else
    PARITY_TRY(parity_registry_register_builtins());
    parity_exec *exec; // the one context every timed call runs on
    PARITY_TRY(parity_exec_create(options->device, &exec));
    parity_bench_timer *timer;
    parity_error *error = parity_bench_timer_open(exec, &timer);
    if (error) {
        parity_exec_destroy(exec);
        return error;
    }
    error = measure_context(options, timer, &report->context);
    for (size_t o = 0; !error && o < options->op_count; o++) {
        const parity_bench_op *op = options->ops[o];
        size_t shape_count = 0;
        while (!options->shapes && op->default_shapes[shape_count]) shape_count++;
        if (options->shapes) shape_count = options->shape_count;
        for (size_t s = 0; !error && s < shape_count; s++) {
            parity_bench_shape shape;
            error = parity_bench_parse_shape(op, options->shapes ? options->shapes[s] : op->default_shapes[s], &shape);
            if (!error) error = bench_shape(options, &report->context, exec, timer, op, &shape, report);
        }
    }
    parity_bench_timer_close(timer);
    parity_exec_destroy(exec);
    return error;
}
