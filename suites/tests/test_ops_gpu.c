// test_ops_gpu.c: CUDA eager against CPU eager on every op row (op_cases.c), the shared CUDA core
// (cuBLAS GEMM, device add-into, dtype conversion, fill) against its CPU counterparts, and the
// execution context's streams (ops/core/exec.h) ordering work on the device.
// For every row of an op with an "eager" backend registered on cuda, on identical inputs and
// cotangents (the engine mirrors the CPU-built state to the GPU):
//   f64        GPU vs CPU eager, relative L2 error <= 1e-12 on every output and gradient;
//   f32, bf16  the GPU's error against the CPU f64 truth (f64 run on inputs rounded to that dtype) is
//              no worse than 2x the CPU eager's error in that dtype + a floor (f32 1e-6, bf16 1e-3);
//   backends flagged deterministic give bitwise identical GPU runs.
// Ops without a CUDA eager yet are listed in a log line, not failed. Without a GPU every test skips
// visibly (gpu_skip.h).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_skip.h"
#include "ops/testing/op_cases.h"
#include "ops/core/cpu_gemm.h"
#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/elementwise.h"
#include "suites/tests/exec_fixture.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static const double f64_bound = 1e-12;

static const parity_backend *cuda_eager_of(const op_case_list *list) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    if (list->count == 0) return NULL;
    return parity_registry_find(list->cases[0].op->name, "eager", PARITY_DEVICE_CUDA);
}

static op_check_run_options run_on(parity_device device, parity_dtype dtype, parity_dtype input_precision) {
    return (op_check_run_options){.dtype = dtype, .input_precision = input_precision, .device = device};
}

// One row: f64 agreement, f32/bf16 error no worse than the CPU's, determinism when promised.
static void check_row(const op_check_case *test_case, const parity_backend *backend) {
    op_check_state cpu, gpu;
    op_check_error_report report;
    assert_ok(op_check_run(test_case, run_on(PARITY_CPU, PARITY_F64, PARITY_F64), &cpu), test_case->name);
    assert_ok(op_check_run(test_case, run_on(PARITY_CUDA(0), PARITY_F64, PARITY_F64), &gpu), test_case->name);
    assert_ok(op_check_compare_states(&cpu, &gpu, &report), test_case->name);
    cr_log_info("%-16s %-46s fp64 cuda vs cpu: %.2e (%s)", test_case->op->name, test_case->name, report.worst_error,
                report.worst_tensor);
    cr_expect(report.tensors_compared > 0, "%s [%s]: nothing compared", test_case->op->name, test_case->name);
    cr_expect(report.worst_error <= f64_bound, "%s [%s] fp64: %s cuda vs cpu relative error %.3e > %.0e", test_case->op->name,
              test_case->name, report.worst_tensor, report.worst_error, f64_bound);
    op_check_release(&cpu);
    op_check_release(&gpu);

    const struct { parity_dtype dtype; double floor; } precisions[] = {{PARITY_F32, 1e-6}, {PARITY_BF16, 1e-3}};
    for (size_t p = 0; p < ROWS(precisions); p++) {
        parity_dtype dtype = precisions[p].dtype;
        op_check_state truth, cpu_low, gpu_low, gpu_again;
        op_check_error_report cpu_report, gpu_report;
        assert_ok(op_check_run(test_case, run_on(PARITY_CPU, PARITY_F64, dtype), &truth), test_case->name);
        assert_ok(op_check_run(test_case, run_on(PARITY_CPU, dtype, dtype), &cpu_low), test_case->name);
        assert_ok(op_check_run(test_case, run_on(PARITY_CUDA(0), dtype, dtype), &gpu_low), test_case->name);
        assert_ok(op_check_compare_states(&truth, &cpu_low, &cpu_report), test_case->name);
        assert_ok(op_check_compare_states(&truth, &gpu_low, &gpu_report), test_case->name);
        double bound = 2 * cpu_report.worst_error + precisions[p].floor;
        cr_log_info("%-16s %-46s %s error vs f64 truth: cuda %.2e (%s), cpu %.2e (%s), bound %.2e", test_case->op->name,
                    test_case->name, parity_dtype_name(dtype), gpu_report.worst_error, gpu_report.worst_tensor,
                    cpu_report.worst_error, cpu_report.worst_tensor, bound);
        cr_expect(gpu_report.worst_error <= bound, "%s [%s] %s: cuda error %.3e (%s) > 2 x cpu's %.3e + %.0e", test_case->op->name,
                  test_case->name, parity_dtype_name(dtype), gpu_report.worst_error, gpu_report.worst_tensor,
                  cpu_report.worst_error, precisions[p].floor);
        if (backend->capabilities & PARITY_CAP_DETERMINISTIC) {
            assert_ok(op_check_run(test_case, run_on(PARITY_CUDA(0), dtype, dtype), &gpu_again), test_case->name);
            char differing[48] = "";
            cr_expect(op_check_bitwise_equal(&gpu_low, &gpu_again, differing, sizeof differing),
                      "%s [%s] %s: cuda eager is flagged deterministic but %s differs between two runs", test_case->op->name,
                      test_case->name, parity_dtype_name(dtype), differing);
            op_check_release(&gpu_again);
        }
        op_check_release(&truth);
        op_check_release(&cpu_low);
        op_check_release(&gpu_low);
    }
}

Test(ops_gpu, cuda_eager_matches_cpu_eager) {
    parity_test_require_gpu();
    int rows = 0;
    for (size_t i = 0; i < all_op_case_list_count; i++) {
        const op_case_list *list = all_op_cases[i];
        const parity_backend *backend = cuda_eager_of(list);
        if (!backend) continue; // listed by ops_without_cuda_eager_are_listed
        for (size_t row = 0; row < list->count; row++, rows++) check_row(&list->cases[row], backend);
    }
    cr_log_info("%d rows compared", rows);
}

// The coverage line: which ops have a CUDA eager and which do not yet (a log line, not a failure).
Test(ops_gpu, ops_without_cuda_eager_are_listed) {
    char with[1024] = "", without[1024] = "";
    size_t with_count = 0, without_count = 0;
    for (size_t i = 0; i < all_op_case_list_count; i++) {
        const op_case_list *list = all_op_cases[i];
        if (!list->count) continue;
        char *target = cuda_eager_of(list) ? with : without;
        size_t used = strlen(target);
        snprintf(target + used, 1024 - used, "%s%s", used ? " " : "", list->cases[0].op->name);
        *(cuda_eager_of(list) ? &with_count : &without_count) += 1;
    }
    cr_log_info("ops with a CUDA eager (%zu): %s", with_count, with);
    cr_log_info("ops without a CUDA eager yet (%zu): %s", without_count, without);
    fprintf(stderr, "[ops_gpu] ops without a CUDA eager yet (%zu): %s\n", without_count, without[0] ? without : "none");
    cr_expect_eq(with_count + without_count, all_op_case_list_count, "every op list has rows");
    // and no CUDA backend escapes the comparison: every op with a cuda "eager" has rows here
    for (size_t i = 0; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (backend->device != PARITY_DEVICE_CUDA || strcmp(backend->name, "eager") != 0) continue;
        bool has_rows = false;
        for (size_t j = 0; j < all_op_case_list_count && !has_rows; j++)
            has_rows = all_op_cases[j]->count && strcmp(all_op_cases[j]->cases[0].op->name, backend->op) == 0;
        cr_expect(has_rows, "%s has a CUDA eager but no rows in op_cases.c to compare it on", backend->op);
    }
}

// ---- the shared CUDA core ----

typedef struct gemm_row {
    parity_dtype dtype;
    int64_t batch, m, n, k;
    bool transpose_a, transpose_b;
    double beta;       // 0: C overwritten; 1: C's prior value joins the sum (addmm's bias)
    int64_t pad;       // extra elements per row of every operand (leading dimensions > the row)
} gemm_row;

// Fills `count` f64 values, exactly representable in `dtype`, from a small deterministic sequence.
static void fill_values(double *values, int64_t count, parity_dtype dtype, unsigned seed) {
    uint64_t state = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (int64_t i = 0; i < count; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        values[i] = parity_round_to_dtype(u, dtype);
    }
}

// Copies a packed (rows, cols) f64 matrix into a padded device buffer of `dtype` with row stride cols + pad.
static void upload_padded(parity_tensor *device, const double *values, int64_t batch, int64_t rows, int64_t cols,
                          int64_t pad, parity_dtype dtype) {
    parity_tensor host;
    assert_ok(parity_tensor_zeros(&host, dtype, PARITY_CPU, PARITY_SHAPE(batch, rows, cols + pad)), "host operand");
    for (int64_t b = 0; b < batch; b++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                parity_tensor_set(&host, (b * rows + r) * (cols + pad) + c, values[(b * rows + r) * cols + c]);
    assert_ok(parity_tensor_to(device, &host, PARITY_CUDA(0), dtype), "upload operand");
    parity_tensor_release(&host);
}

Test(ops_gpu, cublas_gemm_matches_cpu_gemm) {
    parity_test_require_gpu();
    static const gemm_row rows[] = {
        {PARITY_F64, 1, 7, 5, 3, false, false, 0, 0},   {PARITY_F64, 3, 17, 13, 33, true, false, 1, 0},
        {PARITY_F64, 2, 9, 31, 4, false, true, 0, 3},   {PARITY_F64, 4, 8, 8, 65, true, true, 1, 2},
        {PARITY_F32, 1, 33, 17, 129, false, true, 1, 0}, {PARITY_F32, 5, 3, 7, 11, true, true, 0, 1},
        {PARITY_F32, 2, 64, 48, 257, true, false, 0, 0}, {PARITY_BF16, 1, 37, 29, 300, false, true, 1, 0},
        {PARITY_BF16, 3, 16, 24, 40, true, false, 0, 5}, {PARITY_BF16, 2, 5, 128, 1000, false, false, 1, 0},
        {PARITY_F32, 1, 4, 6, 0, false, false, 1, 0},   {PARITY_F64, 2, 3, 4, 0, false, true, 0, 0},
    };
    for (size_t r = 0; r < ROWS(rows); r++) {
        gemm_row row = rows[r];
        int64_t a_rows = row.transpose_a ? row.k : row.m, a_cols = row.transpose_a ? row.m : row.k;
        int64_t b_rows = row.transpose_b ? row.n : row.k, b_cols = row.transpose_b ? row.k : row.n;
        int64_t a_count = row.batch * row.m * row.k, b_count = row.batch * row.k * row.n, c_count = row.batch * row.m * row.n;
        double *a = calloc((size_t)a_count + 1, sizeof *a), *b = calloc((size_t)b_count + 1, sizeof *b),
               *c = calloc((size_t)c_count + 1, sizeof *c);
        cr_assert(a && b && c, "allocating gemm operands");
        fill_values(a, a_count, row.dtype, 3 * (unsigned)r);
        fill_values(b, b_count, row.dtype, 3 * (unsigned)r + 1);
        fill_values(c, c_count, row.dtype, 3 * (unsigned)r + 2);
        parity_tensor da, db, dc, back;
        upload_padded(&da, a, row.batch, a_rows, a_cols, row.pad, row.dtype);
        upload_padded(&db, b, row.batch, b_rows, b_cols, row.pad, row.dtype);
        upload_padded(&dc, c, row.batch, row.m, row.n, row.pad, row.dtype);
        parity_cuda_gemm_desc desc = {
            .dtype = row.dtype, .batch = row.batch, .m = row.m, .n = row.n, .k = row.k,
            .transpose_a = row.transpose_a, .transpose_b = row.transpose_b, .a = da.data, .b = db.data, .c = dc.data,
            .lda = a_cols + row.pad, .ldb = b_cols + row.pad, .ldc = row.n + row.pad,
            .stride_a = a_rows * (a_cols + row.pad), .stride_b = b_rows * (b_cols + row.pad),
            .stride_c = row.m * (row.n + row.pad), .alpha = 1.0, .beta = row.beta};
        assert_ok(parity_cuda_gemm(parity_test_exec(PARITY_CUDA(0)), &desc), "parity_cuda_gemm");
        assert_ok(parity_tensor_to(&back, &dc, PARITY_CPU, PARITY_F64), "download C");
        parity_cpu_gemm_shape shape = {row.batch, row.m, row.n, row.k, row.transpose_a, row.transpose_b};
        if (row.beta == 0)
            for (int64_t i = 0; i < c_count; i++) c[i] = 0;
        assert_ok(parity_cpu_gemm(row.dtype, shape, a, b, row.beta != 0, c), "parity_cpu_gemm");
        double difference = 0, norm = 0, padding_changed = 0;
        for (int64_t bt = 0; bt < row.batch; bt++)
            for (int64_t i = 0; i < row.m; i++)
                for (int64_t j = 0; j < row.n + row.pad; j++) {
                    double got = ((const double *)back.data)[(bt * row.m + i) * (row.n + row.pad) + j];
                    if (j >= row.n) { padding_changed += got != 0; continue; }
                    double want = parity_round_to_dtype(c[(bt * row.m + i) * row.n + j], row.dtype);
                    difference += (got - want) * (got - want);
                    norm += want * want;
                }
        double relative = norm > 0 ? sqrt(difference / norm) : sqrt(difference);
        double bound = row.dtype == PARITY_F64 ? 1e-14 : row.dtype == PARITY_F32 ? 1e-6 : 8e-3;
        cr_log_info("gemm %s batch=%lld m=%lld n=%lld k=%lld ta=%d tb=%d beta=%g pad=%lld: relative error %.2e",
                    parity_dtype_name(row.dtype), (long long)row.batch, (long long)row.m, (long long)row.n,
                    (long long)row.k, row.transpose_a, row.transpose_b, row.beta, (long long)row.pad, relative);
        cr_expect(relative <= bound, "gemm row %zu (%s): relative error %.3e > %.0e", r, parity_dtype_name(row.dtype),
                  relative, bound);
        cr_expect_eq(padding_changed, 0, "gemm row %zu wrote into the padding of C", r);
        parity_tensor_release(&da);
        parity_tensor_release(&db);
        parity_tensor_release(&dc);
        parity_tensor_release(&back);
        free(a);
        free(b);
        free(c);
    }
}

Test(ops_gpu, cublas_gemm_rejects_bad_calls_with_a_named_reason) {
    parity_test_require_gpu();
    static const struct { parity_cuda_gemm_desc desc; const char *message; } rows[] = {
        {{.dtype = PARITY_F16, .batch = 1, .m = 2, .n = 2, .k = 2}, "cuda gemm: dtype fp16 is not one of"},
        {{.dtype = PARITY_F32, .batch = 1, .m = -1, .n = 2, .k = 2}, "cuda gemm: sizes batch=1 m=-1"},
        {{.dtype = PARITY_F32, .batch = 1, .m = 4, .n = 2, .k = 3, .lda = 2}, "cuda gemm: leading dimensions lda=2"},
        {{.dtype = PARITY_BF16, .batch = 2, .m = 4, .n = 2, .k = 3}, "c must be > 0 when batched"},
    };
    for (size_t r = 0; r < ROWS(rows); r++) {
        parity_error *error = parity_cuda_gemm(parity_test_exec(PARITY_CUDA(0)), &rows[r].desc);
        cr_expect_not_null(error, "row %zu accepted", r);
        if (error) cr_expect(strstr(parity_error_message(error), rows[r].message) != NULL, "row %zu: '%s' lacks '%s'", r,
                             parity_error_message(error), rows[r].message);
        parity_error_free(error);
    }
}

// Device add-into and conversions give the CPU's bits.
Test(ops_gpu, add_into_conversion_and_fill_on_the_device_match_the_cpu) {
    parity_test_require_gpu();
    const parity_exec *exec = parity_test_exec(PARITY_CUDA(0));
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    enum { COUNT = 3001 };
    for (size_t d = 0; d < ROWS(dtypes); d++) {
        parity_dtype dtype = dtypes[d];
        double x[COUNT], y[COUNT];
        fill_values(x, COUNT, PARITY_F64, 11 + (unsigned)d);
        fill_values(y, COUNT, PARITY_F64, 17 + (unsigned)d);
        for (int i = 0; i < COUNT; i++) y[i] *= (i % 7) ? 1.0 : 1e-6; // sums that round
        parity_tensor host_x, host_y, device_x, device_y, back;
        assert_ok(parity_tensor_alloc(&host_x, dtype, PARITY_CPU, PARITY_SHAPE(COUNT)), "alloc");
        assert_ok(parity_tensor_alloc(&host_y, dtype, PARITY_CPU, PARITY_SHAPE(COUNT)), "alloc");
        for (int i = 0; i < COUNT; i++) {
            parity_tensor_set(&host_x, i, x[i]);
            parity_tensor_set(&host_y, i, y[i]);
        }
        assert_ok(parity_tensor_to(&device_x, &host_x, PARITY_CUDA(0), dtype), "upload x");
        assert_ok(parity_tensor_to(&device_y, &host_y, PARITY_CUDA(0), dtype), "upload y");
        assert_ok(parity_tensor_add_into(exec, &device_x, &device_y), "add_into on cuda");
        assert_ok(parity_tensor_add_into(parity_test_exec(PARITY_CPU), &host_x, &host_y), "add_into on cpu");
        assert_ok(parity_tensor_to(&back, &device_x, PARITY_CPU, dtype), "download");
        cr_expect_eq(memcmp(back.data, host_x.data, parity_tensor_nbytes(&back)), 0, "%s: add_into on cuda differs from cpu",
                     parity_dtype_name(dtype));
        parity_tensor_release(&back);
        // the sum, converted on the device to every float dtype, equals the host conversion
        for (size_t t = 0; t < ROWS(dtypes); t++) {
            parity_tensor converted, converted_back, expected;
            assert_ok(parity_tensor_to(&converted, &device_x, PARITY_CUDA(0), dtypes[t]), "convert on cuda");
            assert_ok(parity_tensor_to(&converted_back, &converted, PARITY_CPU, dtypes[t]), "download");
            assert_ok(parity_tensor_to(&expected, &host_x, PARITY_CPU, dtypes[t]), "convert on cpu");
            cr_expect_eq(memcmp(converted_back.data, expected.data, parity_tensor_nbytes(&expected)), 0,
                         "%s -> %s on cuda differs from the cpu", parity_dtype_name(dtype), parity_dtype_name(dtypes[t]));
            parity_tensor_release(&converted);
            parity_tensor_release(&converted_back);
            // the same conversion on the context's stream (what a step's cast uses)
            assert_ok(parity_tensor_convert(exec, &converted, &device_x, dtypes[t]), "convert on the stream");
            assert_ok(parity_tensor_to(&converted_back, &converted, PARITY_CPU, dtypes[t]), "download");
            cr_expect_eq(memcmp(converted_back.data, expected.data, parity_tensor_nbytes(&expected)), 0,
                         "%s -> %s on the stream differs from the cpu", parity_dtype_name(dtype),
                         parity_dtype_name(dtypes[t]));
            parity_tensor_release(&converted);
            parity_tensor_release(&converted_back);
            parity_tensor_release(&expected);
        }
        assert_ok(parity_cuda_fill(exec, &device_y, NAN), "fill");
        assert_ok(parity_tensor_to(&back, &device_y, PARITY_CPU, dtype), "download");
        int64_t not_nan = 0;
        for (int64_t i = 0; i < back.numel; i++) not_nan += !isnan(parity_tensor_get(&back, i));
        cr_expect_eq(not_nan, 0, "%s: fill(NaN) left %lld finite elements", parity_dtype_name(dtype), (long long)not_nan);
        parity_tensor_release(&back);
        parity_tensor_release(&host_x);
        parity_tensor_release(&host_y);
        parity_tensor_release(&device_x);
        parity_tensor_release(&device_y);
    }
    // int64 ids -> int32 and -> f32 on the device
    int64_t ids[] = {0, 5, -100, 151935, 7};
    parity_tensor host_ids = parity_tensor_wrap(ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(5));
    parity_tensor device_ids, as_i32, as_f32, back_i32, back_f32;
    assert_ok(parity_tensor_to(&device_ids, &host_ids, PARITY_CUDA(0), PARITY_I64), "upload ids");
    assert_ok(parity_tensor_to(&as_i32, &device_ids, PARITY_CUDA(0), PARITY_I32), "ids to int32");
    assert_ok(parity_tensor_to(&as_f32, &device_ids, PARITY_CUDA(0), PARITY_F32), "ids to fp32");
    assert_ok(parity_tensor_to(&back_i32, &as_i32, PARITY_CPU, PARITY_I32), "download");
    assert_ok(parity_tensor_to(&back_f32, &as_f32, PARITY_CPU, PARITY_F32), "download");
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(((int32_t *)back_i32.data)[i], (int32_t)ids[i], "int32 id %d", i);
        cr_expect_eq(((float *)back_f32.data)[i], (float)ids[i], "fp32 id %d", i);
    }
    parity_tensor_release(&device_ids);
    parity_tensor_release(&as_i32);
    parity_tensor_release(&as_f32);
    parity_tensor_release(&back_i32);
    parity_tensor_release(&back_f32);
}

// The execution context on the GPU: its own stream, the communication context's second stream, a
// kernel on each ordered by events (parity_exec_wait), the cuBLAS handle made once, reused scratch.
Test(ops_gpu, exec_streams_order_work_on_the_device) {
    parity_test_require_gpu();
    parity_exec *exec;
    assert_ok(parity_exec_create(PARITY_CUDA(0), &exec), "create");
    cr_expect_not_null(exec->stream, "a CUDA context has a stream of its own, not the default one");
    const parity_exec *comm;
    void *comm_stream = NULL;
    assert_ok(parity_exec_comm(exec, &comm), "communication context");
    assert_ok(parity_exec_comm_stream(exec, &comm_stream), "communication stream");
    cr_expect(comm_stream && comm_stream == comm->stream && comm_stream != exec->stream,
              "the communication stream is a second stream");
    void *handle = NULL, *again = NULL;
    assert_ok(parity_exec_blas_handle(exec, &handle), "cuBLAS handle");
    assert_ok(parity_exec_blas_handle(exec, &again), "cuBLAS handle again");
    cr_expect(handle && handle == again, "the cuBLAS handle is made once");
    void *scratch = NULL, *reused = NULL;
    assert_ok(parity_exec_device_scratch(exec, 4096, &scratch), "device scratch");
    assert_ok(parity_exec_device_scratch(exec, 64, &reused), "device scratch again");
    cr_expect(scratch && scratch == reused, "a smaller request reuses the scratch");

    enum { COUNT = 1 << 22 }; // enough work that an unordered read would see it unfinished
    parity_tensor a, b;
    assert_ok(parity_tensor_alloc(&a, PARITY_F32, PARITY_CUDA(0), PARITY_SHAPE(COUNT)), "alloc a");
    assert_ok(parity_tensor_alloc(&b, PARITY_F32, PARITY_CUDA(0), PARITY_SHAPE(COUNT)), "alloc b");
    assert_ok(parity_tensor_fill_value(exec, &a, 2.0), "fill a on the step's stream");
    assert_ok(parity_tensor_fill_value(comm, &b, 1.0), "fill b on the communication stream");
    assert_ok(parity_exec_wait(comm, exec), "communication waits for the step");
    assert_ok(parity_tensor_add_into(comm, &b, &a), "b += a on the communication stream");
    assert_ok(parity_exec_wait(exec, comm), "the step waits for communication");
    double sum = 0;
    assert_ok(parity_tensor_sum_of_squares(exec, &b, &sum), "sum of squares on the step's stream");
    cr_expect_eq(sum, 9.0 * COUNT, "b = 1 + 2 everywhere: sum of squares %.17g, expected %.17g", sum, 9.0 * COUNT);
    assert_ok(parity_exec_synchronize(exec), "synchronize");
    parity_tensor_release(&a);
    parity_tensor_release(&b);
    parity_exec_destroy(exec);
}
