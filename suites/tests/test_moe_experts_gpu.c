// test_moe_experts_gpu.c: the grouped CUDA MoE experts backends of issue 14 (fused_triton: mma.sync,
// SM80+; fused_quack: TMA + wgmma, SM90 only) on the awkward rows of cases_moe_experts.c's moe_experts_gpu_case_list
// (E 5, 7, 11; top-k 1, 2, 8; an idle expert and one every token chose; H and I off the tiles; f32
// routing weights with bf16 activations), by flash-attention's rule, through the op engine's GPU mode
// (op_check.h: CPU-built inputs mirrored to cuda:0), as test_attention_gpu.c does for attention:
//   claims        (no GPU needed) each row's minimum compute capability, bf16, no expert parallelism;
//   registered    each backend row is registered on cuda, available on cuda:0, claims bf16 and
//                 determinism and its minimum compute capability (80, 90), and does not claim
//                 expert parallelism (no all-to-all yet; fused_quack never: "no EP");
//   2x eager      for output, dhidden, dgate_up_proj, ddown_proj and drouting_weights, with the inputs
//                 and cotangent rounded to bf16:
//                   max|backend - ref| <= 2 * max|eager_bf16 - ref| + 2 u max|ref| + 1e-5 * max|ref over the row|
//                 ref = cuda eager in fp64 on those inputs, eager_bf16 = cuda eager in bf16, u = 2^-8
//                 (bf16's unit roundoff), max|ref| the tensor's own. The 2 u max|ref| term is
//                 flash-attention's own floor (its tests add 2 * max|(ref + 0.3 - 0.3) - ref| in the
//                 output dtype): on a tensor of a few elements (the N = 1 row's two routing-weight
//                 gradients) eager's max error is one rounding's luck, and two correct f32 sums rounded
//                 to bf16 may land on neighbouring values one ulp apart. Every
//                 element is finite (outputs are poisoned with NaN first). Each (row, tensor) prints
//                 its max diff and the % of its allowance it uses;
//   unsupported   H or I not a multiple of 8 is UNSUPPORTED (a "not supported" outcome), not an error;
//   determinism   bitwise equal output and gradients over 50 runs on three rows (the large row, the
//                 top-8 row with a hot and an idle expert, and the row of more tiles than the H200's
//                 132 SMs, so fused_quack's persistent CTAs walk several tiles each).
// Without a GPU every test skips visibly (gpu_skip.h).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_backend.h"
#include "gpu_skip.h"
#include "ops/testing/op_cases.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/testing/worst_error.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static const char *const moe_backends[] = {"fused_triton", "fused_quack"};
static const int moe_backend_min_cc[] = {80, 90}; // mma.sync + cp.async; TMA + wgmma (sm_90a)

static op_check_run_options on_cuda(const char *backend, parity_dtype dtype, parity_dtype input_precision) {
    return (op_check_run_options){.backend = backend, .dtype = dtype, .input_precision = input_precision,
                                  .device = PARITY_CUDA(0)};
}

static const parity_backend *available_backend(const char *name) {
    return gpu_test_available_backend(PARITY_OP_MOE_EXPERTS, name, "issue 14 registers it there");
}

Test(moe_experts_gpu, every_backend_is_registered_and_available_on_cuda) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(moe_backends); b++) {
        const parity_backend *backend = available_backend(moe_backends[b]);
        if (!backend) continue;
        cr_expect(backend->dtypes & PARITY_DTYPE_BIT(PARITY_BF16), "moe_experts %s does not claim bf16", backend->name);
        cr_expect(backend->capabilities & PARITY_CAP_DETERMINISTIC, "moe_experts %s does not claim determinism",
                  backend->name);
        cr_expect_eq(backend->min_compute_capability, moe_backend_min_cc[b], "moe_experts %s claims SM%d, expected SM%d",
                     backend->name, backend->min_compute_capability, moe_backend_min_cc[b]);
        cr_expect(!(backend->capabilities & PARITY_CAP_EXPERT_PARALLEL),
                  "moe_experts %s claims expert parallelism, which has no all-to-all yet", backend->name);
        cr_log_info("moe_experts %-13s cuda: available, bf16, deterministic, SM%d+", backend->name,
                    backend->min_compute_capability);
    }
}

// Without a GPU too (the claims are the registration's): each backend row built into this binary
// claims its minimum compute capability, bf16 only and no expert parallelism. A CUDA-off build
// registers neither and skips.
Test(moe_experts_gpu, grouped_backends_claim_their_compute_capability) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    int found = 0;
    for (size_t b = 0; b < ROWS(moe_backends); b++) {
        const parity_backend *backend = parity_registry_find(PARITY_OP_MOE_EXPERTS, moe_backends[b], PARITY_DEVICE_CUDA);
        if (!backend) continue;
        found++;
        cr_expect_eq(backend->min_compute_capability, moe_backend_min_cc[b], "moe_experts %s claims SM%d, expected SM%d",
                     backend->name, backend->min_compute_capability, moe_backend_min_cc[b]);
        cr_expect_eq(backend->dtypes, PARITY_DTYPE_BIT(PARITY_BF16), "moe_experts %s claims dtypes other than bf16",
                     backend->name);
        cr_expect(!(backend->capabilities & PARITY_CAP_EXPERT_PARALLEL), "moe_experts %s claims expert parallelism",
                  backend->name);
    }
    if (!found) cr_skip_test("no grouped moe_experts backend built (a CUDA-off build)");
    cr_expect_eq(found, (int)ROWS(moe_backends), "%d of %zu grouped moe_experts backends are built", found,
                 ROWS(moe_backends));
}

enum { MAX_COMPARED = 8, COMPARED = 5 }; // output, dhidden, dgate_up_proj, ddown_proj, drouting_weights

static void check_backend(const char *backend, const op_check_case *row, const op_check_state *reference,
                          const op_check_max_error *eager, int eager_count, double row_floor) {
    op_check_state run;
    char what[256];
    snprintf(what, sizeof what, "moe_experts %s [%s] bf16", backend, row->name);
    parity_error *error = op_check_run(row, on_cuda(backend, PARITY_BF16, PARITY_BF16), &run);
    if (error) op_check_release(&run);
    assert_ok(error, what);
    op_check_max_error errors[MAX_COMPARED];
    int count = 0;
    assert_ok(op_check_max_errors(reference, &run, errors, MAX_COMPARED, &count), what);
    cr_expect_eq(count, eager_count, "%s: %d tensors compared, eager compared %d", what, count, eager_count);
    cr_expect_eq(count, COMPARED, "%s: %d tensors compared, expected output and four gradients", what, count);
    for (int t = 0; t < count && t < eager_count; t++) {
        const double bf16_roundoff = 0x1p-8;
        double floor = 2 * bf16_roundoff * eager[t].max_reference + row_floor;
        double allowance = 2 * eager[t].max_error + floor;
        cr_log_info("moe_experts %-13s %-56s %-16s max diff %.2e eager %.2e allowance %.2e (%5.1f%%)", backend, row->name,
                    errors[t].tensor, errors[t].max_error, eager[t].max_error, allowance,
                    100 * errors[t].max_error / allowance);
        cr_expect(!isnan(errors[t].max_error), "%s: %s has NaN/Inf elements", what, errors[t].tensor);
        cr_expect(!parity_test_worse(errors[t].max_error, allowance),
                  "%s: %s max|backend - fp64| = %.3e > 2 x eager's %.3e + floor %.2e (%.0f%% of the allowance)", what,
                  errors[t].tensor, errors[t].max_error, eager[t].max_error, floor,
                  100 * errors[t].max_error / allowance);
    }
    op_check_release(&run);
}

Test(moe_experts_gpu, every_backend_within_2x_eager_error_of_fp64_on_awkward_rows, .timeout = 600) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    bool present[ROWS(moe_backends)];
    for (size_t b = 0; b < ROWS(moe_backends); b++) present[b] = available_backend(moe_backends[b]) != NULL;
    for (size_t r = 0; r < moe_experts_gpu_case_list.count; r++) {
        const op_check_case *row = &moe_experts_gpu_case_list.cases[r];
        op_check_state reference, eager;
        assert_ok(op_check_run(row, on_cuda("eager", PARITY_F64, PARITY_BF16), &reference), row->name);
        assert_ok(op_check_run(row, on_cuda("eager", PARITY_BF16, PARITY_BF16), &eager), row->name);
        op_check_max_error eager_errors[MAX_COMPARED];
        int eager_count = 0;
        assert_ok(op_check_max_errors(&reference, &eager, eager_errors, MAX_COMPARED, &eager_count), row->name);
        op_check_release(&eager);
        double magnitude = 0;
        for (int t = 0; t < eager_count; t++) {
            cr_expect(!isnan(eager_errors[t].max_error), "eager bf16 [%s]: %s has NaN/Inf elements", row->name,
                      eager_errors[t].tensor);
            magnitude = parity_test_max(magnitude, eager_errors[t].max_reference);
        }
        for (size_t b = 0; b < ROWS(moe_backends); b++)
            if (present[b]) check_backend(moe_backends[b], row, &reference, eager_errors, eager_count, 1e-5 * magnitude);
        op_check_release(&reference);
    }
}

Test(moe_experts_gpu, sizes_off_multiples_of_8_are_not_supported) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const op_check_case *row = NULL;
    for (size_t r = 0; r < moe_experts_case_list.count; r++)
        if (strcmp(moe_experts_case_list.cases[r].name, "E=5 K=3 N=11 H=13 I=7 expert 4 idle") == 0)
            row = &moe_experts_case_list.cases[r];
    cr_assert_not_null(row, "no moe_experts row with H = 13, I = 7");
    for (size_t b = 0; b < ROWS(moe_backends); b++) {
        if (!available_backend(moe_backends[b])) continue;
        op_check_state run;
        parity_error *error = op_check_run(row, on_cuda(moe_backends[b], PARITY_BF16, PARITY_BF16), &run);
        op_check_release(&run);
        cr_expect_not_null(error, "moe_experts %s ran H = 13, I = 7", moe_backends[b]);
        if (!error) continue;
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNSUPPORTED, "moe_experts %s on H = 13: %s", moe_backends[b],
                     parity_error_message(error));
        cr_expect(strstr(parity_error_message(error), "multiples of 8") != NULL, "moe_experts %s: %s", moe_backends[b],
                  parity_error_message(error));
        parity_error_free(error);
    }
}

static const char *const determinism_rows[] = {
    "gpu E=7 K=2 N=512 H=256 I=136",
    "gpu E=11 K=8 N=96 H=136 I=72 expert 0 hot expert 5 idle",
    "gpu E=7 K=2 N=4096 H=512 I=256 expert 3 idle",
};
enum { DETERMINISM_RUNS = 50 };

Test(moe_experts_gpu, backends_are_bitwise_equal_over_50_runs, .timeout = 600) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(moe_backends); b++) {
        if (!available_backend(moe_backends[b])) continue;
        for (size_t r = 0; r < ROWS(determinism_rows); r++) {
            const op_check_case *row = NULL;
            for (size_t i = 0; i < moe_experts_gpu_case_list.count; i++)
                if (strcmp(moe_experts_gpu_case_list.cases[i].name, determinism_rows[r]) == 0)
                    row = &moe_experts_gpu_case_list.cases[i];
            cr_assert_not_null(row, "no moe_experts GPU row '%s'", determinism_rows[r]);
            char what[160];
            snprintf(what, sizeof what, "moe_experts %s [%s] bf16", moe_backends[b], row->name);
            int equal_runs =
                gpu_test_bitwise_equal_runs(row, on_cuda(moe_backends[b], PARITY_BF16, PARITY_BF16), DETERMINISM_RUNS, what);
            cr_log_info("moe_experts %-13s %-56s %d runs bitwise equal", moe_backends[b], row->name, equal_runs);
        }
    }
}
