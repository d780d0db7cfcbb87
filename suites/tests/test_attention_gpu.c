// test_attention_gpu.c: every CUDA attention backend of issue 13 (sdpa, flash_attention_2,
// flex_attention) on the awkward shapes of cases_attention.c's attention_backend_gpu_case_list, by
// flash-attention's rule, through the op engine's GPU mode (op_check.h: CPU-built inputs mirrored to
// cuda:0, the same runs every op test makes). Tables: backends are rows, shapes are rows, dtypes come
// from what each backend claims (backend->dtypes: bf16, f32, f64).
//   registered   each backend row is registered on cuda and available on cuda:0 and claims bf16, f32
//                and f64 (the issue: bf16 and fp32, fp64 where the algorithm allows; f32/f64 of
//                flash_attention_2 and flex_attention run sdpa's CUDA-core kernels); a missing one
//                fails naming it (the issue registers all three: none is optional);
//   2x eager     for the output and each of dquery, dkey, dvalue, with the inputs and cotangent rounded
//                to the run's dtype:
//                  max|backend - ref| <= 2 * max|eager - ref| + floor * max|ref over the row|
//                where ref is cuda eager in fp64 on those inputs and eager runs on cuda in the backend's
//                dtype; every element is finite (the query rows past a document's end and the padding
//                rows of partial tiles, T = 17, 239, ..., are fully masked inside the kernels: a NaN or
//                Inf there fails the row, op_check_max_errors). Each (row, tensor) prints its max diff
//                and the % of its allowance it uses (llm.c style);
//   determinism  each backend flagged PARITY_CAP_DETERMINISTIC gives bitwise the same output, dquery,
//                dkey and dvalue over 50 runs (two fresh runs, then 48 reruns on the second's inputs),
//                in the dtypes of its row's repeated_dtypes that it claims (flash_attention_2's f32/f64
//                are sdpa's kernels on the same walk: repeated as sdpa's), on two large rows (many key
//                tiles, GQA groups summed in the dk/dv pass) and on three rows of
//                attention_gpu_case_list (sdpa must claim it).
// flex_attention gets its block mask from the op's descriptor (built from the row's visibility, as a
// model builds it), so every query sees at least itself here; a hand-edited mask whose rows see
// nothing is test_flex_attention_gpu.c's.
// Time on the H200 (2026-12-02, run alone, before flash_attention_2 and flex_attention claimed f32 and
// f64): the 2x rule 55 s, determinism 104 s (50 runs on 5 rows for sdpa in 3 dtypes, the other
// backends in bf16), most of it the host building and comparing the large rows. Estimated since (not
// measured): the 2x rule about 80 s (4 more backend runs a row beside the 10 it made), determinism
// about 145 s (flex_attention's f32 and f64: 10 more of the 25 repeated (row, dtype) pairs). Without a
// GPU every test skips visibly (gpu_skip.h).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_backend.h"
#include "gpu_skip.h"
#include "ops/testing/op_cases.h"
#include "ops/attention/attention.h"
#include "ops/testing/worst_error.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct attention_backend_row {
    const char *name;
    bool must_be_deterministic; // the claim is required, not only tested where made
    unsigned repeated_dtypes;   // the dtypes the 50-run determinism test repeats, of those it claims
} attention_backend_row;

#define ALL_DTYPES PARITY_FLOAT_DTYPES
static const attention_backend_row attention_backends[] = {
    {"sdpa", true, ALL_DTYPES}, // claims determinism from its first version on: losing the claim fails
    // f32/f64 are sdpa's CUDA-core kernels on the same (documents) walk, bit for bit: repeated as sdpa's
    {"flash_attention_2", false, PARITY_DTYPE_BIT(PARITY_BF16)},
    {"flex_attention", false, ALL_DTYPES}, // f32/f64: the CUDA-core kernels on the block mask's walk
};

// The floor of the 2x rule, relative to the largest |ref| of the row's four tensors. Eager in the run's
// dtype is sometimes exact (T = 1: output = value, dquery = dkey = 0 exactly, since softmax over one
// key is 1 and its gradient 0), which would leave an allowance of 0 for a backend whose accumulator
// (fp32 for bf16 and f32, fp64 for f64) rounds differently: dP - rowsum(dO * O) cancels to a few
// accumulator ulps instead of 0. The floors are a few tens of those ulps (f32 eps 1.2e-7, f64
// 2.2e-16) of the row's magnitude; bf16 eager's own error (~1e-2 of the magnitude) dwarfs its floor
// everywhere else, and f64's floor is the fp64 bound the fused-backend test gives sdpa (1e-12).
static double floor_of(parity_dtype dtype) {
    switch (dtype) {
    case PARITY_BF16: return 1e-5;
    case PARITY_F32: return 1e-6;
    default: return 1e-12;
    }
}

static const parity_dtype rule_dtypes[] = {PARITY_BF16, PARITY_F32, PARITY_F64};

static op_check_run_options on_cuda(const char *backend, parity_dtype dtype, parity_dtype input_precision) {
    return (op_check_run_options){.backend = backend, .dtype = dtype, .input_precision = input_precision,
                                  .device = PARITY_CUDA(0)};
}

static const parity_backend *available_backend(const attention_backend_row *row) {
    return gpu_test_available_backend(PARITY_OP_ATTENTION, row->name,
                                      "issue 13 registers sdpa, flash_attention_2 and flex_attention there");
}

static bool claims(const parity_backend *backend, parity_dtype dtype) {
    return (backend->dtypes & PARITY_DTYPE_BIT(dtype)) != 0;
}

Test(attention_gpu, every_backend_is_registered_and_available_on_cuda) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(attention_backends); b++) {
        const parity_backend *backend = available_backend(&attention_backends[b]);
        if (!backend) continue;
        for (size_t d = 0; d < ROWS(rule_dtypes); d++) // the issue: bf16 and fp32, fp64 where the algorithm allows
            cr_expect(claims(backend, rule_dtypes[d]), "attention %s on cuda does not claim %s", backend->name,
                      parity_dtype_name(rule_dtypes[d]));
        if (attention_backends[b].must_be_deterministic)
            cr_expect(backend->capabilities & PARITY_CAP_DETERMINISTIC, "attention %s no longer claims determinism",
                      backend->name);
        cr_log_info("attention %-17s cuda: available, dtypes%s%s%s%s", backend->name,
                    claims(backend, PARITY_BF16) ? " bf16" : "", claims(backend, PARITY_F32) ? " f32" : "",
                    claims(backend, PARITY_F64) ? " f64" : "",
                    backend->capabilities & PARITY_CAP_DETERMINISTIC ? ", deterministic" : "");
    }
}

enum { MAX_COMPARED = 8 };

// One backend on one row in one dtype against the row's fp64 reference and eager's errors in that dtype.
static void check_backend(const parity_backend *backend, const op_check_case *row, parity_dtype dtype,
                          const op_check_state *reference, const op_check_max_error *eager, int eager_count,
                          double row_floor) {
    op_check_state run;
    char what[256];
    snprintf(what, sizeof what, "attention %s [%s] %s", backend->name, row->name, parity_dtype_name(dtype));
    parity_error *error = op_check_run(row, on_cuda(backend->name, dtype, dtype), &run);
    if (error) op_check_release(&run);
    assert_ok(error, what);
    op_check_max_error errors[MAX_COMPARED];
    int count = 0;
    assert_ok(op_check_max_errors(reference, &run, errors, MAX_COMPARED, &count), what);
    cr_expect_eq(count, eager_count, "%s: %d tensors compared, eager compared %d", what, count, eager_count);
    cr_expect_eq(count, 4, "%s: %d tensors compared, expected output, dquery, dkey, dvalue", what, count);
    for (int t = 0; t < count && t < eager_count; t++) {
        double allowance = 2 * eager[t].max_error + row_floor;
        cr_log_info("attention %-17s %-4s %-66s %-7s max diff %.2e eager %.2e allowance %.2e (%5.1f%%)", backend->name,
                    parity_dtype_name(dtype), row->name, errors[t].tensor, errors[t].max_error, eager[t].max_error,
                    allowance, 100 * errors[t].max_error / allowance);
        cr_expect(!isnan(errors[t].max_error), "%s: %s has NaN/Inf elements", what, errors[t].tensor);
        cr_expect(!parity_test_worse(errors[t].max_error, allowance),
                  "%s: %s max|backend - fp64| = %.3e > 2 x eager's %.3e + floor %.2e (%.0f%% of the allowance)", what,
                  errors[t].tensor, errors[t].max_error, eager[t].max_error, row_floor,
                  100 * errors[t].max_error / allowance);
    }
    op_check_release(&run);
}

Test(attention_gpu, every_backend_within_2x_eager_error_of_fp64_on_awkward_shapes, .timeout = 600) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const parity_backend *backends[ROWS(attention_backends)];
    int rows_run[ROWS(attention_backends)][ROWS(rule_dtypes)] = {{0}};
    for (size_t b = 0; b < ROWS(attention_backends); b++) backends[b] = available_backend(&attention_backends[b]);
    for (size_t r = 0; r < attention_backend_gpu_case_list.count; r++) {
        const op_check_case *row = &attention_backend_gpu_case_list.cases[r];
        for (size_t d = 0; d < ROWS(rule_dtypes); d++) {
            parity_dtype dtype = rule_dtypes[d];
            bool wanted = false;
            for (size_t b = 0; b < ROWS(attention_backends); b++) wanted = wanted || (backends[b] && claims(backends[b], dtype));
            if (!wanted) continue;
            // The fp64 reference on exactly the run's inputs, and eager's error in the run's dtype (for
            // f64 eager is the reference itself: its error is 0 and the floor is the whole allowance).
            op_check_state reference, eager;
            assert_ok(op_check_run(row, on_cuda("eager", PARITY_F64, dtype), &reference), row->name);
            op_check_max_error eager_errors[MAX_COMPARED];
            int eager_count = 0;
            if (dtype == PARITY_F64) {
                assert_ok(op_check_max_errors(&reference, &reference, eager_errors, MAX_COMPARED, &eager_count),
                              row->name);
            } else {
                assert_ok(op_check_run(row, on_cuda("eager", dtype, dtype), &eager), row->name);
                assert_ok(op_check_max_errors(&reference, &eager, eager_errors, MAX_COMPARED, &eager_count),
                              row->name);
                op_check_release(&eager);
            }
            double magnitude = 0;
            for (int t = 0; t < eager_count; t++) {
                cr_expect(!isnan(eager_errors[t].max_error), "eager %s [%s]: %s has NaN/Inf elements",
                          parity_dtype_name(dtype), row->name, eager_errors[t].tensor);
                magnitude = parity_test_max(magnitude, eager_errors[t].max_reference);
            }
            for (size_t b = 0; b < ROWS(attention_backends); b++) {
                if (!backends[b] || !claims(backends[b], dtype)) continue;
                check_backend(backends[b], row, dtype, &reference, eager_errors, eager_count,
                              floor_of(dtype) * magnitude);
                rows_run[b][d]++;
            }
            op_check_release(&reference);
        }
    }
    for (size_t b = 0; b < ROWS(attention_backends); b++)
        for (size_t d = 0; d < ROWS(rule_dtypes); d++)
            if (backends[b] && claims(backends[b], rule_dtypes[d]))
                cr_expect_eq(rows_run[b][d], (int)attention_backend_gpu_case_list.count, "attention %s %s ran %d of %zu rows",
                             backends[b]->name, parity_dtype_name(rule_dtypes[d]), rows_run[b][d],
                             attention_backend_gpu_case_list.count);
}

// The determinism rows: two large ones of the table above (many key tiles; GQA groups summed in the
// dk/dv pass), then three rows of attention_gpu_case_list (a long causal row, packed documents
// across tiles, MLA 192/128 with a window).
static const char *const determinism_rows[] = {
    "T=4224 gqa Hq=8 Hk=2 D=128 causal",
    "varlen {300,1200,1,15,100} gqa 32/8 D=96 scale=0.3 causal",
    "gpu T=1023 Hq=2 Hk=1 D=64 causal",
    "gpu varlen {1,15,100,300} gqa Hq=4 Hk=2 D=64 causal",
    "gpu T=17 gqa 32/8 mla D=192 Dv=128 window=5",
};
enum { DETERMINISM_RUNS = 50 };

static const op_check_case *find_row(const char *name) {
    const op_case_list *lists[] = {&attention_backend_gpu_case_list, &attention_gpu_case_list};
    for (size_t l = 0; l < ROWS(lists); l++)
        for (size_t row = 0; row < lists[l]->count; row++)
            if (strcmp(lists[l]->cases[row].name, name) == 0) return &lists[l]->cases[row];
    return NULL;
}

Test(attention_gpu, deterministic_backends_are_bitwise_equal_over_50_runs, .timeout = 600) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    int proven = 0;
    for (size_t b = 0; b < ROWS(attention_backends); b++) {
        const parity_backend *backend = available_backend(&attention_backends[b]);
        if (!backend) continue;
        if (!(backend->capabilities & PARITY_CAP_DETERMINISTIC)) {
            cr_expect(!attention_backends[b].must_be_deterministic, "attention %s no longer claims determinism",
                      backend->name);
            cr_log_info("attention %s does not claim determinism: not repeated", backend->name);
            continue;
        }
        for (size_t r = 0; r < ROWS(determinism_rows); r++) {
            const op_check_case *row = find_row(determinism_rows[r]);
            cr_assert_not_null(row, "no attention GPU row '%s'", determinism_rows[r]);
            for (size_t d = 0; d < ROWS(rule_dtypes); d++) {
                parity_dtype dtype = rule_dtypes[d];
                if (!claims(backend, dtype) || !(attention_backends[b].repeated_dtypes & PARITY_DTYPE_BIT(dtype)))
                    continue;
                char what[160];
                snprintf(what, sizeof what, "attention %s [%s] %s", backend->name, row->name, parity_dtype_name(dtype));
                int equal_runs = gpu_test_bitwise_equal_runs(row, on_cuda(backend->name, dtype, dtype), DETERMINISM_RUNS, what);
                cr_log_info("attention %-17s %-4s %-58s %d runs bitwise equal", backend->name, parity_dtype_name(dtype),
                            row->name, equal_runs);
            }
        }
        proven++;
    }
    cr_expect(proven > 0, "no attention backend on cuda claims determinism (sdpa must)");
}
