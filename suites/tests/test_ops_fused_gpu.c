// test_ops_fused_gpu.c: every fused CUDA backend (liger_kernel, triton, fla, chunk_loss, and attention's
// sdpa, flash_attention_2 and flex_attention on cuda) against the CPU eager reference on every row of
// its op (op_cases.c: primes, one row, hidden 48, 4096-wide rows, vocabularies and chunks that do not
// divide the tokens; for attention also the GPU-only awkward shapes of cases_attention.c), through the
// op engine's GPU mode (the CPU-built state mirrored to the device):
//   fp64        GPU backend vs CPU eager, relative L2 error <= the pair's bound on every output and gradient;
//   fp32, bf16  the GPU backend's error against the CPU f64 truth (inputs rounded to that dtype) is no
//               worse than 2x the CPU eager's error in that dtype + a floor (fp32 1e-6, bf16 1e-3);
//   backends flagged deterministic give bitwise identical runs (attention: 50 runs on large rows in
//   test_attention_gpu.c);
//   a row a backend cannot do must answer UNSUPPORTED with the pair's expected reason (rotary
//   liger_kernel: partial rotary; flash_attention_2 and flex_attention in bf16: head sizes without
//   tensor-core kernels), and is printed as a visible skip, never silently passed.
// And batch invariance on large pools for the CUDA backends flagged PARITY_CAP_BATCH_INVARIANT of the
// ops below (rms_norm, swiglu, rotary: rows up to 4096 wide, batches up to 3000 rows, which change the
// grids of persistent kernels): the same rows computed inside batches of other sizes and compositions
// give bitwise the same outputs and input gradients. Every claimant, these included, is also proven on
// its op's rows by test_capability_claims.c. Without a GPU every test skips visibly (gpu_skip.h).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_skip.h"
#include "ops/testing/op_cases.h"
#include "ops/attention/attention.h"
#include "ops/attention/flash_attention_4.h"
#include "ops/core/cpu_math.h"
#include "ops/core/rng.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rotary/rotary.h"
#include "ops/swiglu/swiglu.h"
#include "suites/tests/exec_fixture.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct fused_backend {
    const char *op;
    const char *backend;
    double f64_bound;
    const char *unsupported_reason; // the only UNSUPPORTED message this backend may give (NULL: none)
} fused_backend;

static const fused_backend fused_backends[] = {
    {PARITY_OP_RMS_NORM, "liger_kernel", 1e-12, NULL},
    {PARITY_OP_RMS_NORM, "triton", 1e-12, NULL},
    {PARITY_OP_RMS_NORM_GATED, "fla", 1e-12, NULL},
    {PARITY_OP_CAUSAL_CONV1D, "fla", 1e-12, NULL}, // K > 4 runs its general path: no row is refused
    // the chunked algorithm against the recurrent eager: the same math in another order (f64: 1e-12)
    {PARITY_OP_GATED_DELTA_RULE, "fla", 1e-12, NULL},
    {PARITY_OP_ROTARY, "liger_kernel", 1e-12, "partial rotary"},
    {PARITY_OP_ROTARY, "triton", 1e-12, NULL},
    {PARITY_OP_SWIGLU, "liger_kernel", 1e-12, NULL},
    {PARITY_OP_CROSS_ENTROPY, "liger_kernel", 1e-12, NULL},
    {PARITY_OP_CROSS_ENTROPY, "chunk_loss", 1e-12, NULL},
    {PARITY_OP_LOAD_BALANCING_LOSS, "triton", 1e-12, NULL},
    {PARITY_OP_ATTENTION, "sdpa", 1e-12, NULL},
    // f64/f32 on sdpa's CUDA-core kernels (flex on the descriptor's block mask) run every row; bf16 on
    // the tensor cores refuses by name the head sizes it has no kernels for (the CPU rows' 5 .. 48)
    {PARITY_OP_ATTENTION, "flash_attention_2", 1e-12, "flash_attention_2 on cuda"},
    {PARITY_OP_ATTENTION, "flex_attention", 1e-12, "flex_attention on cuda"},
};

static op_check_run_options run_on(const char *backend, parity_device device, parity_dtype dtype,
                                   parity_dtype input_precision) {
    return (op_check_run_options){.backend = backend, .dtype = dtype, .input_precision = input_precision, .device = device};
}

// Runs the fused backend; true when it ran. An UNSUPPORTED answer must carry the pair's reason.
static bool run_fused(const fused_backend *pair, const op_check_case *test_case, parity_dtype dtype, op_check_state *state) {
    parity_error *error = op_check_run(test_case, run_on(pair->backend, PARITY_CUDA(0), dtype, dtype), state);
    if (!error) return true;
    if (parity_error_kind_of(error) == PARITY_ERROR_UNSUPPORTED && pair->unsupported_reason &&
        strstr(parity_error_message(error), pair->unsupported_reason)) {
        fprintf(stderr, "[SKIP] ops_fused_gpu: %s %s [%s] %s: not supported: %s\n", pair->op, pair->backend,
                test_case->name, parity_dtype_name(dtype), parity_error_message(error));
        parity_error_free(error);
        op_check_release(state);
        return false;
    }
    char what[256];
    snprintf(what, sizeof what, "%s %s [%s] %s", pair->op, pair->backend, test_case->name, parity_dtype_name(dtype));
    op_check_release(state);
    assert_ok(error, what);
    return false;
}

// One row of one backend; returns true when the backend ran it.
static bool check_row(const fused_backend *pair, const parity_backend *backend, const op_check_case *test_case) {
    op_check_state cpu, gpu;
    op_check_error_report report;
    bool ran = run_fused(pair, test_case, PARITY_F64, &gpu);
    if (ran) {
        assert_ok(op_check_run(test_case, run_on("eager", PARITY_CPU, PARITY_F64, PARITY_F64), &cpu), test_case->name);
        assert_ok(op_check_compare_states(&cpu, &gpu, &report), test_case->name);
        cr_log_info("%-20s %-12s %-48s fp64 vs cpu eager: %.2e (%s)", pair->op, pair->backend, test_case->name,
                    report.worst_error, report.worst_tensor);
        cr_expect(report.tensors_compared > 0, "%s %s [%s]: nothing compared", pair->op, pair->backend, test_case->name);
        cr_expect(report.worst_error <= pair->f64_bound, "%s %s [%s] fp64: %s relative error %.3e > %.0e", pair->op,
                  pair->backend, test_case->name, report.worst_tensor, report.worst_error, pair->f64_bound);
        op_check_release(&cpu);
        op_check_release(&gpu);
    }

    const struct { parity_dtype dtype; double floor; } precisions[] = {{PARITY_F32, 1e-6}, {PARITY_BF16, 1e-3}};
    for (size_t p = 0; p < ROWS(precisions); p++) {
        parity_dtype dtype = precisions[p].dtype;
        op_check_state truth, cpu_low, gpu_low, gpu_again;
        op_check_error_report cpu_report, gpu_report;
        if (!run_fused(pair, test_case, dtype, &gpu_low)) continue;
        ran = true;
        assert_ok(op_check_run(test_case, run_on("eager", PARITY_CPU, PARITY_F64, dtype), &truth), test_case->name);
        assert_ok(op_check_run(test_case, run_on("eager", PARITY_CPU, dtype, dtype), &cpu_low), test_case->name);
        assert_ok(op_check_compare_states(&truth, &cpu_low, &cpu_report), test_case->name);
        assert_ok(op_check_compare_states(&truth, &gpu_low, &gpu_report), test_case->name);
        double bound = 2 * cpu_report.worst_error + precisions[p].floor;
        cr_log_info("%-20s %-12s %-48s %s vs f64 truth: cuda %.2e (%s), cpu eager %.2e, bound %.2e", pair->op,
                    pair->backend, test_case->name, parity_dtype_name(dtype), gpu_report.worst_error,
                    gpu_report.worst_tensor, cpu_report.worst_error, bound);
        cr_expect(gpu_report.worst_error <= bound, "%s %s [%s] %s: error %.3e (%s) > 2 x cpu eager's %.3e + %.0e", pair->op,
                  pair->backend, test_case->name, parity_dtype_name(dtype), gpu_report.worst_error,
                  gpu_report.worst_tensor, cpu_report.worst_error, precisions[p].floor);
        if (backend->capabilities & PARITY_CAP_DETERMINISTIC) {
            assert_ok(op_check_run(test_case, run_on(pair->backend, PARITY_CUDA(0), dtype, dtype), &gpu_again),
                          test_case->name);
            char differing[48] = "";
            cr_expect(op_check_bitwise_equal(&gpu_low, &gpu_again, differing, sizeof differing),
                      "%s %s [%s] %s: flagged deterministic but %s differs between two runs", pair->op, pair->backend,
                      test_case->name, parity_dtype_name(dtype), differing);
            op_check_release(&gpu_again);
        }
        op_check_release(&truth);
        op_check_release(&cpu_low);
        op_check_release(&gpu_low);
    }
    return ran;
}

Test(ops_fused_gpu, fused_backends_match_cpu_eager_on_every_row) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(fused_backends); b++) {
        const fused_backend *pair = &fused_backends[b];
        const parity_backend *backend = parity_registry_find(pair->op, pair->backend, PARITY_DEVICE_CUDA);
        cr_expect_not_null(backend, "%s %s is not registered on cuda", pair->op, pair->backend);
        if (!backend) continue;
        int ran = 0, rows = 0;
        for (size_t list = 0; list < all_op_case_list_count; list++)
            for (size_t row = 0; row < all_op_cases[list]->count; row++) {
                const op_check_case *test_case = &all_op_cases[list]->cases[row];
                if (strcmp(test_case->op->name, pair->op) != 0) continue;
                rows++;
                ran += check_row(pair, backend, test_case);
            }
        cr_log_info("%s %s: %d of %d rows ran", pair->op, pair->backend, ran, rows);
        cr_expect(ran > 0, "%s %s ran none of its %d rows", pair->op, pair->backend, rows);
    }
}

// Every attention row of fused_backends on the GPU-only awkward shapes (T = 1 .. 4224, packed
// documents of 1 .. 300 tokens, head sizes up to 256, MLA's 192/128, GQA 32/8, MQA, windows), by
// check_row's rules.
Test(ops_fused_gpu, attention_backends_match_cpu_eager_on_awkward_shapes) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(fused_backends); b++) {
        const fused_backend *pair = &fused_backends[b];
        if (strcmp(pair->op, PARITY_OP_ATTENTION) != 0) continue;
        const parity_backend *backend = parity_registry_find(pair->op, pair->backend, PARITY_DEVICE_CUDA);
        cr_expect_not_null(backend, "attention %s is not registered on cuda", pair->backend);
        if (!backend) continue;
        int ran = 0;
        for (size_t row = 0; row < attention_gpu_case_list.count; row++)
            ran += check_row(pair, backend, &attention_gpu_case_list.cases[row]);
        cr_expect_eq(ran, (int)attention_gpu_case_list.count, "attention %s ran %d of %zu awkward rows", pair->backend, ran,
                     attention_gpu_case_list.count);
    }
}

// Every non-eager CUDA backend of the ops above is in the table (none escapes the comparison), but for
// a refusing probe that claims no dtype and never runs (flash_attention_4: its own test below).
Test(ops_fused_gpu, every_fused_cuda_backend_is_compared) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t i = 0; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (backend->device != PARITY_DEVICE_CUDA || strcmp(backend->name, "eager") == 0) continue;
        if (backend->dtypes == 0) {
            cr_expect(strcmp(backend->name, "flash_attention_4") == 0 && backend->probe,
                      "cuda backend %s/%s claims no dtype: only flash_attention_4's refusing probe may", backend->op,
                      backend->name);
            continue;
        }
        bool op_covered = false, listed = false;
        for (size_t b = 0; b < ROWS(fused_backends); b++) {
            if (strcmp(fused_backends[b].op, backend->op) != 0) continue;
            op_covered = true;
            listed = listed || strcmp(fused_backends[b].backend, backend->name) == 0;
        }
        if (op_covered) cr_expect(listed, "cuda backend %s/%s has no row in test_ops_fused_gpu.c", backend->op, backend->name);
    }
}

// flash_attention_4 is refused on the real device with the reason for its SM (issue 13, deliverable 4),
// and nothing runs in its place: resolving it fails, and its kernels answer UNSUPPORTED.
Test(ops_fused_gpu, flash_attention_4_is_refused_with_the_devices_sm) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    parity_device_info info;
    assert_ok(parity_device_query(PARITY_CUDA(0), &info), "querying cuda:0");
    char expected[128];
    parity_flash_attention_4_reason(info.compute_capability, expected, sizeof expected);
    parity_backend_check check;
    parity_availability verdict =
        parity_registry_check(PARITY_OP_ATTENTION, "flash_attention_4", PARITY_CUDA(0), NULL, NULL, &check);
    cr_expect_eq(verdict, PARITY_PROBE_REFUSED, "verdict %d (%s)", (int)verdict, check.reason);
    cr_expect_str_eq(check.reason, expected);
    if (info.compute_capability < PARITY_FLASH_ATTENTION_4_MIN_SM) {
        char sm90_style[128];
        snprintf(sm90_style, sizeof sm90_style, "needs SM100 (Blackwell); device is SM%d", info.compute_capability);
        cr_expect_str_eq(check.reason, sm90_style);
    }
    const parity_backend *backend = NULL;
    parity_error *error = parity_registry_resolve(PARITY_OP_ATTENTION, "flash_attention_4", PARITY_CUDA(0), &backend);
    cr_expect_not_null(error, "flash_attention_4 resolved on SM%d", info.compute_capability);
    if (error) cr_expect(strstr(parity_error_message(error), expected) != NULL, "'%s' lacks '%s'", parity_error_message(error), expected);
    parity_error_free(error);
    const parity_backend *registered = parity_registry_find(PARITY_OP_ATTENTION, "flash_attention_4", PARITY_DEVICE_CUDA);
    cr_assert_not_null(registered);
    parity_exec *exec;
    assert_ok(parity_exec_create(PARITY_CUDA(0), &exec), "execution context");
    const parity_attention_kernels *kernels = registered->kernels;
    parity_attention_args args = {0};
    error = kernels->forward(exec, &args, NULL);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNSUPPORTED);
    if (error) cr_expect(strstr(parity_error_message(error), expected) != NULL, "'%s' lacks '%s'", parity_error_message(error), expected);
    parity_error_free(error);
    parity_exec_destroy(exec);
}

// ---- batch invariance ----
// A batch is a list of row indices into a pool of rows; each op runs its rows on the GPU and returns
// per-row outputs and input gradients (host, the op's dtype). The same pool row must give the same
// bytes in every batch.

typedef struct row_pool {
    int64_t rows, width;      // width = elements per row of each per-row tensor
    parity_tensor tensors[4]; // host (rows, width) inputs of the run's dtype: per-row data
    int count;
} row_pool;

typedef struct batch_result {
    parity_tensor tensors[6]; // host (batch, width) results: outputs and input gradients
    int count;
} batch_result;

typedef parity_error *(*batch_runner)(const char *backend, const row_pool *pool, const int64_t *rows, int64_t count,
                                      batch_result *out);

// (count, width) device tensor gathered from pool tensor `which` at `rows`.
static parity_error *gather_rows(const row_pool *pool, int which, const int64_t *rows, int64_t count, int ndim,
                                 const int64_t *shape, parity_tensor *device) {
    const parity_tensor *source = &pool->tensors[which];
    size_t row_bytes = (size_t)pool->width * parity_dtype_size(source->dtype);
    parity_tensor host;
    PARITY_TRY(parity_tensor_alloc(&host, source->dtype, PARITY_CPU, ndim, shape));
    for (int64_t i = 0; i < count; i++)
        memcpy((char *)host.data + i * row_bytes, (const char *)source->data + rows[i] * row_bytes, row_bytes);
    parity_error *error = parity_tensor_to(device, &host, PARITY_CUDA(0), source->dtype);
    parity_tensor_release(&host);
    return error;
}

static parity_error *download(batch_result *out, const parity_tensor *device) {
    PARITY_TRY(parity_tensor_to(&out->tensors[out->count], device, PARITY_CPU, device->dtype));
    out->count++;
    return NULL;
}

static void release_all(parity_tensor *tensors, int count) {
    for (int i = 0; i < count; i++) parity_tensor_release(&tensors[i]);
}

static parity_error *fill_pool(row_pool *pool, parity_dtype dtype, int64_t rows, int64_t width, int count, uint64_t seed) {
    pool->rows = rows;
    pool->width = width;
    pool->count = count;
    for (int i = 0; i < count; i++) {
        parity_tensor exact;
        PARITY_TRY(parity_tensor_alloc(&exact, PARITY_F64, PARITY_CPU, PARITY_SHAPE(rows, width)));
        parity_error *error = parity_rng_fill(
            NULL, &exact, parity_rng_stream_named(seed + (uint64_t)i, "batch invariance"), PARITY_RNG_NORMAL, 0, 1);
        if (!error) error = parity_tensor_to(&pool->tensors[i], &exact, PARITY_CPU, dtype);
        parity_tensor_release(&exact);
        PARITY_TRY(error);
    }
    return NULL;
}

// rms_norm: pool tensors x, dy (rows, H); weight from a fixed stream.
static parity_error *rms_norm_batch(const char *backend_name, const row_pool *pool, const int64_t *rows, int64_t count,
                                    batch_result *out) {
    const parity_backend *backend;
    PARITY_TRY(parity_registry_resolve(PARITY_OP_RMS_NORM, backend_name, PARITY_CUDA(0), &backend));
    const parity_rms_norm_kernels *kernels = backend->kernels;
    parity_dtype dtype = pool->tensors[0].dtype;
    int64_t h = pool->width;
    parity_tensor t[6] = {{0}}; // x, dy, weight, y, dx, dw
    parity_saved saved = {0};
    parity_error *error = gather_rows(pool, 0, rows, count, 2, (int64_t[]){count, h}, &t[0]);
    if (!error) error = gather_rows(pool, 1, rows, count, 2, (int64_t[]){count, h}, &t[1]);
    if (!error) error = gather_rows(pool, 2, (int64_t[]){0}, 1, 1, (int64_t[]){h}, &t[2]);
    if (!error) error = parity_tensor_alloc(&t[3], dtype, PARITY_CUDA(0), 2, (int64_t[]){count, h});
    if (!error) error = parity_tensor_alloc(&t[4], dtype, PARITY_CUDA(0), 2, (int64_t[]){count, h});
    if (!error) error = parity_tensor_alloc(&t[5], dtype, PARITY_CUDA(0), 1, (int64_t[]){h});
    parity_rms_norm_args args = {&t[0], &t[2], 1e-6, PARITY_RMS_NORM_OFFSET, &t[3]};
    parity_rms_norm_grads grads = {&t[1], &t[4], &t[5]};
    if (!error) error = kernels->forward(parity_test_exec(PARITY_CUDA(0)), &args, &saved);
    if (!error) error = kernels->backward(parity_test_exec(PARITY_CUDA(0)), &args, &saved, &grads);
    if (!error) error = download(out, &t[3]);
    if (!error) error = download(out, &t[4]);
    parity_saved_release(&saved);
    release_all(t, 6);
    return error;
}

// swiglu: pool tensors gate, up, dy (rows, I).
static parity_error *swiglu_batch(const char *backend_name, const row_pool *pool, const int64_t *rows, int64_t count,
                                  batch_result *out) {
    const parity_backend *backend;
    PARITY_TRY(parity_registry_resolve(PARITY_OP_SWIGLU, backend_name, PARITY_CUDA(0), &backend));
    const parity_swiglu_kernels *kernels = backend->kernels;
    parity_dtype dtype = pool->tensors[0].dtype;
    int64_t shape[2] = {count, pool->width};
    parity_tensor t[6] = {{0}}; // gate, up, dy, y, dgate, dup
    parity_saved saved = {0};
    parity_error *error = NULL;
    for (int i = 0; i < 3 && !error; i++) error = gather_rows(pool, i, rows, count, 2, shape, &t[i]);
    for (int i = 3; i < 6 && !error; i++) error = parity_tensor_alloc(&t[i], dtype, PARITY_CUDA(0), 2, shape);
    parity_swiglu_args args = {&t[0], &t[1], &t[3]};
    parity_swiglu_grads grads = {&t[2], &t[4], &t[5]};
    if (!error) error = kernels->forward(parity_test_exec(PARITY_CUDA(0)), &args, &saved);
    if (!error) error = kernels->backward(parity_test_exec(PARITY_CUDA(0)), &args, &saved, &grads);
    for (int i = 3; i < 6 && !error; i++) error = download(out, &t[i]);
    parity_saved_release(&saved);
    release_all(t, 6);
    return error;
}

// rotary: pool tensors query (rows, Hq * D), key (rows, Hk * D), dquery_out, dkey_out; the pool row
// index is the token's position (so a token keeps its position in every batch).
enum { ROTARY_QUERY_HEADS = 8, ROTARY_KEY_HEADS = 2, ROTARY_HEAD_DIM = 128 };
static parity_error *rotary_batch(const char *backend_name, const row_pool *pool, const int64_t *rows, int64_t count,
                                  batch_result *out) {
    const parity_backend *backend;
    PARITY_TRY(parity_registry_resolve(PARITY_OP_ROTARY, backend_name, PARITY_CUDA(0), &backend));
    const parity_rotary_kernels *kernels = backend->kernels;
    parity_dtype dtype = pool->tensors[0].dtype;
    int64_t q_shape[3] = {count, ROTARY_QUERY_HEADS, ROTARY_HEAD_DIM}, k_shape[3] = {count, ROTARY_KEY_HEADS, ROTARY_HEAD_DIM};
    row_pool key_pool = *pool; // the key tensors have their own width
    key_pool.width = ROTARY_KEY_HEADS * ROTARY_HEAD_DIM;
    row_pool query_pool = *pool;
    query_pool.width = ROTARY_QUERY_HEADS * ROTARY_HEAD_DIM;
    parity_tensor t[9] = {{0}}; // q, k, dq_out, dk_out, positions, q_out, k_out, dq, dk
    parity_saved saved = {0};
    parity_error *error = gather_rows(&query_pool, 0, rows, count, 3, q_shape, &t[0]);
    if (!error) error = gather_rows(&key_pool, 1, rows, count, 3, k_shape, &t[1]);
    if (!error) error = gather_rows(&query_pool, 2, rows, count, 3, q_shape, &t[2]);
    if (!error) error = gather_rows(&key_pool, 3, rows, count, 3, k_shape, &t[3]);
    if (!error) {
        parity_tensor host = parity_tensor_wrap((void *)rows, PARITY_I64, PARITY_CPU, 1, (int64_t[]){count});
        error = parity_tensor_to(&t[4], &host, PARITY_CUDA(0), PARITY_I64);
    }
    if (!error) error = parity_tensor_alloc(&t[5], dtype, PARITY_CUDA(0), 3, q_shape);
    if (!error) error = parity_tensor_alloc(&t[6], dtype, PARITY_CUDA(0), 3, k_shape);
    if (!error) error = parity_tensor_alloc(&t[7], dtype, PARITY_CUDA(0), 3, q_shape);
    if (!error) error = parity_tensor_alloc(&t[8], dtype, PARITY_CUDA(0), 3, k_shape);
    parity_rope_description rope = {.type = PARITY_ROPE_YARN, .theta = 10000, .factor = 4,
                                    .original_max_position_embeddings = 512};
    parity_rotary_args args = {&t[0], &t[1], &t[4], &rope, &t[5], &t[6]};
    parity_rotary_grads grads = {&t[2], &t[3], &t[7], &t[8]};
    if (!error) error = kernels->forward(parity_test_exec(PARITY_CUDA(0)), &args, &saved);
    if (!error) error = kernels->backward(parity_test_exec(PARITY_CUDA(0)), &args, &saved, &grads);
    for (int i = 5; i < 9 && !error; i++) error = download(out, &t[i]);
    parity_saved_release(&saved);
    release_all(t, 9);
    return error;
}

typedef struct invariance_case {
    const char *op;
    batch_runner run;
    int pool_tensors;
    int64_t width; // elements per row of the widest per-row tensor
} invariance_case;

static const invariance_case invariance_cases[] = {
    {PARITY_OP_RMS_NORM, rms_norm_batch, 3, 4096},
    {PARITY_OP_RMS_NORM, rms_norm_batch, 3, 13},
    {PARITY_OP_SWIGLU, swiglu_batch, 3, 1031},
    {PARITY_OP_ROTARY, rotary_batch, 4, ROTARY_QUERY_HEADS * ROTARY_HEAD_DIM},
};

// The batches: the whole pool, one row, a run of rows, a shuffled handful, and the pool twice over
// (a larger batch that changes the grid of persistent kernels).
enum { POOL_ROWS = 1500 };

static int64_t batch_of(int which, int64_t *rows) {
    switch (which) {
    case 0: for (int64_t i = 0; i < POOL_ROWS; i++) rows[i] = i; return POOL_ROWS;
    case 1: rows[0] = 777; return 1;
    case 2: for (int64_t i = 0; i < 37; i++) rows[i] = 700 + i; return 37;
    case 3: { static const int64_t shuffled[] = {1499, 3, 777, 0, 1024, 5, 777, 64}; memcpy(rows, shuffled, sizeof shuffled); return 8; }
    default: for (int64_t i = 0; i < 2 * POOL_ROWS; i++) rows[i] = (i * 7) % POOL_ROWS; return 2 * POOL_ROWS;
    }
}

Test(ops_fused_gpu, batch_invariant_backends_give_the_same_row_in_any_batch) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const parity_dtype dtypes[] = {PARITY_BF16, PARITY_F32};
    int proven = 0;
    int64_t *reference_rows = malloc(2 * POOL_ROWS * sizeof *reference_rows), *rows = malloc(2 * POOL_ROWS * sizeof *rows);
    cr_assert(reference_rows && rows);
    for (size_t i = 0; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (backend->device != PARITY_DEVICE_CUDA || !(backend->capabilities & PARITY_CAP_BATCH_INVARIANT)) continue;
        bool has_case = false;
        for (size_t c = 0; c < ROWS(invariance_cases); c++) {
            const invariance_case *test = &invariance_cases[c];
            if (strcmp(test->op, backend->op) != 0) continue;
            has_case = true;
            for (size_t d = 0; d < ROWS(dtypes); d++) {
                row_pool pool = {0};
                int64_t width = test->run == rotary_batch ? ROTARY_QUERY_HEADS * ROTARY_HEAD_DIM : test->width;
                assert_ok(fill_pool(&pool, dtypes[d], POOL_ROWS, width, test->pool_tensors, 99 + c), "pool");
                pool.width = test->width;
                batch_result reference = {0};
                int64_t reference_count = batch_of(0, reference_rows);
                assert_ok(test->run(backend->name, &pool, reference_rows, reference_count, &reference), backend->name);
                for (int which = 1; which < 5; which++) {
                    int64_t count = batch_of(which, rows);
                    batch_result batch = {0};
                    assert_ok(test->run(backend->name, &pool, rows, count, &batch), backend->name);
                    for (int t = 0; t < batch.count; t++) {
                        size_t row_bytes = parity_tensor_nbytes(&batch.tensors[t]) / (size_t)count;
                        for (int64_t r = 0; r < count; r++) {
                            bool same = memcmp((const char *)batch.tensors[t].data + r * row_bytes,
                                               (const char *)reference.tensors[t].data + rows[r] * row_bytes, row_bytes) == 0;
                            cr_expect(same, "%s %s %s width %lld: result %d of pool row %lld differs in batch %d (%lld rows)",
                                      backend->op, backend->name, parity_dtype_name(dtypes[d]), (long long)test->width, t,
                                      (long long)rows[r], which, (long long)count);
                            if (!same) break;
                        }
                    }
                    release_all(batch.tensors, batch.count);
                }
                cr_log_info("%s %s %s width %lld: rows bitwise equal in batches of 1, 37, 8 (shuffled, repeated), %d and %d rows",
                            backend->op, backend->name, parity_dtype_name(dtypes[d]), (long long)test->width, POOL_ROWS,
                            2 * POOL_ROWS);
                release_all(reference.tensors, reference.count);
                release_all(pool.tensors, pool.count);
            }
        }
        if (!has_case) cr_log_info("cuda %s/%s claims batch invariance; no pool case here (its op's rows prove it: "
                                   "test_capability_claims.c)", backend->op, backend->name);
        proven += has_case && strcmp(backend->name, "triton") == 0;
    }
    cr_expect(proven == 2, "expected rms_norm triton and rotary triton to be proven batch invariant, got %d", proven);
    free(reference_rows);
    free(rows);
}
