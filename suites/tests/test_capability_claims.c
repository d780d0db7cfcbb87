// test_capability_claims.c: a backend's capability flags (ops/registry.h) are claims, and a claim needs
// a test that could refute it.
//   Batch invariance (PARITY_CAP_BATCH_INVARIANT): on every row of the op's cases (op_cases.c), in f32
//   and bf16, a row's outputs and its input gradients are bitwise the same whether computed in the
//   whole batch or in another: one row alone, a run of rows, a shuffled handful with repeats, the whole
//   batch twice over; for the sequence ops (cu_seqlens), whole documents: the last alone, all reversed,
//   all twice over (op_check_run_rows, op_check_rows_equal). Every CPU backend that claims it is proven
//   here; every CUDA backend on cuda:0 (skipped visibly without a GPU); and, without a GPU too, every
//   claimant must have a layout row below, so a new claim cannot go untested. A backend whose output
//   depends on the batch size is caught (the check can see).
//   Sequence- and expert-parallel safety (PARITY_CAP_SEQUENCE_PARALLEL, PARITY_CAP_EXPERT_PARALLEL):
//   every CPU backend that claims one has a row below naming the layout rows of
//   test_parallel_layouts.c that run it under sp / ep against the one-rank result (and the parallel
//   suite runs it against the goldens); a claim without a row, or a row whose backend does not claim
//   it, fails. (Off the CPU no layout runs yet, so claims there are not acted on; the per-token CUDA
//   ops' sequence-parallel flag says only that they are local to a token.)
// (The wider batch-invariance rows of test_ops_fused_gpu.c, pools of 1500 rows up to 4096 wide, stay
// for the fused CUDA kernels whose grids change with the batch.)
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_skip.h"
#include "ops/testing/op_cases.h"
#include "ops/rms_norm/rms_norm.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct invariance_layout {
    const char *op;
    op_check_row_layout layout;
    bool documents; // a sequence op: batches are whole documents of its cu_seqlens
} invariance_layout;

static const char *const weight[] = {"weight", NULL};
static const char *const gating_parameters[] = {"A_log", "dt_bias", NULL};
static const char *const correction_bias[] = {"correction_bias", NULL};

// Per op: which leading dimensions make a row, and which slots are shared by all rows.
static const invariance_layout layouts[] = {
    {PARITY_OP_RMS_NORM, {1, weight}, false},
    {PARITY_OP_RMS_NORM_GATED, {1, weight}, false},
    {"l2_norm", {1, NULL}, false},
    {PARITY_OP_SWIGLU, {1, NULL}, false},
    {PARITY_OP_ROTARY, {1, NULL}, false},
    {"gdn_gating", {1, gating_parameters}, false},
    {"moe_router", {1, correction_bias}, false},
    {"add", {2, NULL}, false},
    {"sigmoid_gate", {2, NULL}, false},
    {"split", {2, NULL}, false},
    {"concat", {2, NULL}, false},
    {"broadcast_heads", {2, NULL}, false},
    {"embedding", {2, weight}, false},
    {PARITY_OP_ATTENTION, {1, NULL}, true},
    {PARITY_OP_GATED_DELTA_RULE, {1, NULL}, true},
    {PARITY_OP_CAUSAL_CONV1D, {1, weight}, true},
};

static const invariance_layout *layout_of(const char *op) {
    for (size_t i = 0; i < ROWS(layouts); i++)
        if (strcmp(layouts[i].op, op) == 0) return &layouts[i];
    return NULL;
}

static const op_case_list *cases_of(const char *op) {
    for (size_t list = 0; list < all_op_case_list_count; list++)
        if (all_op_cases[list]->count && strcmp(all_op_cases[list]->cases[0].op->name, op) == 0) return all_op_cases[list];
    return NULL;
}

// Row batches of a batch of n rows; `rows` holds 2n + 8. Returns the count, 0 past the last.
static int64_t row_batch(int which, int64_t n, int64_t *rows) {
    switch (which) {
    case 0: rows[0] = n / 2; return 1;
    case 1: {
        int64_t start = n / 4, count = n - start < 37 ? n - start : 37;
        for (int64_t i = 0; i < count; i++) rows[i] = start + i;
        return count;
    }
    case 2: {
        const int64_t picks[] = {n - 1, 0, n / 2, 0, n / 3, 1, n - 1, n / 4};
        for (int i = 0; i < 8; i++) rows[i] = picks[i] % n;
        return 8;
    }
    case 3:
        for (int64_t i = 0; i < 2 * n; i++) rows[i] = (i * 7 + 3) % n;
        return 2 * n;
    default: return 0;
    }
}

static const char *const row_batch_names[] = {"one row", "a run of rows", "8 shuffled rows with repeats", "the batch twice over"};
static const char *const document_batch_names[] = {"the last document alone", "the documents reversed",
                                                   "the documents twice over"};

// Document batches of the offsets `whole` (documents + 1 entries): the documents chosen, in order.
static int64_t document_batch(int which, int64_t documents, int64_t *chosen) {
    switch (which) {
    case 0: chosen[0] = documents - 1; return 1;
    case 1: for (int64_t d = 0; d < documents; d++) chosen[d] = documents - 1 - d; return documents;
    case 2: for (int64_t d = 0; d < 2 * documents; d++) chosen[d] = d % documents; return 2 * documents;
    default: return 0;
    }
}

// The token rows and new offsets of the chosen documents.
static int64_t document_rows(const int64_t *offsets, const int64_t *chosen, int64_t count, int64_t *rows, int64_t *new_offsets) {
    int64_t tokens = 0;
    new_offsets[0] = 0;
    for (int64_t c = 0; c < count; c++) {
        for (int64_t t = offsets[chosen[c]]; t < offsets[chosen[c] + 1]; t++) rows[tokens++] = t;
        new_offsets[c + 1] = tokens;
    }
    return tokens;
}

typedef struct proof {
    int rows_proven, rows_unsupported;
} proof;

// One case row of `backend` in `dtype` on `device`: every batch of it against the whole.
static void prove_row(const parity_backend *backend, const invariance_layout *layout, const op_check_case *test_case,
                      parity_dtype dtype, parity_device device, proof *result) {
    op_check_state whole;
    parity_error *error = op_check_run(test_case, (op_check_run_options){.backend = backend->name, .dtype = dtype, .device = device},
                                       &whole);
    if (error && parity_error_kind_of(error) == PARITY_ERROR_UNSUPPORTED) {
        cr_log_info("%s %s [%s] %s: not supported (%s), not counted", backend->op, backend->name, test_case->name,
                    parity_dtype_name(dtype), parity_error_message(error));
        parity_error_free(error);
        op_check_release(&whole);
        result->rows_unsupported++;
        return;
    }
    assert_ok(error, test_case->name);
    int64_t n;
    assert_ok(op_check_row_count(&whole, &layout->layout, &n), test_case->name);
    const parity_tensor *offsets = NULL;
    for (int i = 0; i < whole.tensor_count; i++)
        if (strcmp(whole.tensors[i].name, "cu_seqlens") == 0) offsets = &whole.tensors[i].value;
    if (layout->documents && !offsets) { // one sequence: no documents to regroup
        op_check_release(&whole);
        return;
    }
    int64_t documents = offsets ? offsets->numel - 1 : 0;
    int64_t *rows = malloc((size_t)(2 * n + 8) * sizeof *rows), *chosen = malloc((size_t)(2 * documents + 1) * sizeof *chosen);
    int64_t *new_offsets = malloc((size_t)(2 * documents + 2) * sizeof *new_offsets);
    cr_assert(rows && chosen && new_offsets);
    for (int which = 0;; which++) {
        int64_t count, picked = 0;
        const char *what;
        if (layout->documents) {
            picked = document_batch(which, documents, chosen);
            if (!picked) break;
            count = document_rows(offsets->data, chosen, picked, rows, new_offsets);
            what = document_batch_names[which];
        } else {
            count = row_batch(which, n, rows);
            if (!count) break;
            what = row_batch_names[which];
        }
        op_check_state part;
        assert_ok(op_check_run_rows(test_case, &whole, &layout->layout, rows, count, layout->documents ? new_offsets : NULL, picked,
                                   &part),
                 test_case->name);
        char differing[160] = "";
        cr_expect(op_check_rows_equal(&whole, &part, &layout->layout, rows, count, differing, sizeof differing),
                  "%s %s on %s [%s] %s, %s (%lld rows): %s differs from the whole batch's", backend->op, backend->name,
                  parity_device_type_name(device.type), test_case->name, parity_dtype_name(dtype), what, (long long)count,
                  differing);
        op_check_release(&part);
    }
    free(rows);
    free(chosen);
    free(new_offsets);
    op_check_release(&whole);
    result->rows_proven++;
}

// The GPU-only rows that also prove the CUDA claims: shapes the small CPU rows cannot reach (the
// gated delta rule's tensor-core path needs Dk, Dv multiples of 16, and its 16- or 32-column state
// split changes with the number of documents x heads, so a document alone and in a batch take
// different splits).
static const op_case_list *gpu_cases_of(const char *op) {
    if (strcmp(op, PARITY_OP_GATED_DELTA_RULE) == 0) return &gated_delta_rule_gpu_case_list;
    return NULL;
}

// Every backend registered on `device`'s type that claims batch invariance, on every row of its op.
static int prove_claims(parity_device device) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const parity_dtype dtypes[] = {PARITY_F32, PARITY_BF16};
    int backends = 0;
    for (size_t i = 0; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (backend->device != device.type || !(backend->capabilities & PARITY_CAP_BATCH_INVARIANT)) continue;
        const invariance_layout *layout = layout_of(backend->op);
        const op_case_list *cases = cases_of(backend->op);
        cr_assert(layout && cases, "%s %s claims batch invariance; no layout or case rows to prove it", backend->op, backend->name);
        proof result = {0};
        for (size_t d = 0; d < ROWS(dtypes); d++) {
            if (!(backend->dtypes & PARITY_DTYPE_BIT(dtypes[d]))) continue;
            for (size_t row = 0; row < cases->count; row++)
                prove_row(backend, layout, &cases->cases[row], dtypes[d], device, &result);
            const op_case_list *gpu_cases = device.type == PARITY_DEVICE_CUDA ? gpu_cases_of(backend->op) : NULL;
            for (size_t row = 0; gpu_cases && row < gpu_cases->count; row++)
                prove_row(backend, layout, &gpu_cases->cases[row], dtypes[d], device, &result);
        }
        cr_log_info("%s %s on %s: batch invariance proven on %d rows x dtypes (%d not supported)", backend->op, backend->name,
                    parity_device_type_name(device.type), result.rows_proven, result.rows_unsupported);
        cr_expect_gt(result.rows_proven, 0, "%s %s claims batch invariance; no row proves it", backend->op, backend->name);
        backends++;
    }
    return backends;
}

Test(capability_claims, cpu_batch_invariance_is_proven_on_every_row) {
    int backends = prove_claims(PARITY_CPU);
    cr_expect_gt(backends, 0);
}

Test(capability_claims, cuda_batch_invariance_is_proven_on_every_row) {
    parity_test_require_gpu();
    int backends = prove_claims(PARITY_CUDA(0));
    cr_expect_gt(backends, 0);
}

// The check can see: an RMSNorm whose output depends on how many rows the batch has (y * (1 + N/1024),
// a stand-in for a kernel whose reduction order follows the grid) is caught on the first batch.
static parity_error *batch_dependent_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    const parity_rms_norm_kernels *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
    PARITY_TRY(eager->forward(exec, args, saved));
    int64_t rows = args->output->numel / args->output->shape[args->output->ndim - 1];
    for (int64_t i = 0; i < args->output->numel; i++)
        parity_tensor_set(args->output, i, parity_tensor_get(args->output, i) * (1 + (double)rows / 1024));
    return NULL;
}
static parity_error *eager_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                    const parity_rms_norm_grads *grads) {
    const parity_rms_norm_kernels *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
    return eager->backward(exec, args, saved, grads);
}
static const parity_rms_norm_kernels batch_dependent = {batch_dependent_forward, eager_backward};

Test(capability_claims, a_batch_dependent_backend_is_caught) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const parity_backend *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU);
    assert_ok(parity_registry_add(&(parity_backend){
                 .op = PARITY_OP_RMS_NORM, .name = "test_checker_batch_dependent", .device = PARITY_DEVICE_CPU,
                 .dtypes = eager->dtypes, .capabilities = eager->capabilities | PARITY_CAP_TEST_ONLY, .kernels = &batch_dependent,
                 .description = "test: output depends on the batch size", .origin = "test_capability_claims"}),
             "registering");
    const op_case_list *cases = cases_of(PARITY_OP_RMS_NORM);
    const op_check_case *test_case = &cases->cases[0]; // "standard rows=7 hidden=13"
    const invariance_layout *layout = layout_of(PARITY_OP_RMS_NORM);
    op_check_state whole, part;
    assert_ok(op_check_run(test_case, (op_check_run_options){.backend = "test_checker_batch_dependent", .dtype = PARITY_F32}, &whole),
             "whole");
    int64_t rows[8 * 2 + 8], n;
    assert_ok(op_check_row_count(&whole, &layout->layout, &n), "rows");
    cr_assert_eq(n, 7);
    int64_t count = row_batch(0, n, rows);
    assert_ok(op_check_run_rows(test_case, &whole, &layout->layout, rows, count, NULL, 0, &part), "part");
    char differing[160] = "";
    cr_expect(!op_check_rows_equal(&whole, &part, &layout->layout, rows, count, differing, sizeof differing),
              "a batch-dependent output passed");
    cr_expect_str_eq(differing, "y row 0 (row 3 of the whole batch)");
    op_check_release(&part);
    op_check_release(&whole);
    // and eager itself passes the same batch: the check compares the rows, not the batches
    assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_F32}, &whole), "eager whole");
    assert_ok(op_check_run_rows(test_case, &whole, &layout->layout, rows, count, NULL, 0, &part), "eager part");
    cr_expect(op_check_rows_equal(&whole, &part, &layout->layout, rows, count, differing, sizeof differing), "eager: %s", differing);
    op_check_release(&part);
    op_check_release(&whole);
}

// Without a GPU too: every backend that claims batch invariance, on any device, has a layout and rows.
Test(capability_claims, every_batch_invariance_claim_has_rows_to_prove_it) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    int claims = 0;
    for (size_t i = 0; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (!(backend->capabilities & PARITY_CAP_BATCH_INVARIANT)) continue;
        claims++;
        cr_expect_not_null(layout_of(backend->op), "%s %s on %s claims batch invariance; test_capability_claims.c has no layout for %s",
                           backend->op, backend->name, parity_device_type_name(backend->device), backend->op);
        const op_case_list *cases = cases_of(backend->op);
        cr_expect(cases && cases->count > 0, "%s %s claims batch invariance; %s has no op case rows", backend->op, backend->name,
                  backend->op);
    }
    cr_expect_gt(claims, 0);
}

// The CPU backends allowed to claim parallel safety, each with the layout rows that prove it.
static const struct {
    const char *op, *name;
    uint32_t claims;
    const char *proof; // rows of suites/tests/test_parallel_layouts.c (layout_rows)
} parallel_claims[] = {
    {PARITY_OP_ATTENTION, "eager", PARITY_CAP_SEQUENCE_PARALLEL,
     "layout_rows: llama3_tiny sp=2 (plain and packed), dp=2,sp=2; qwen3_tiny sp=4; deepseek_v3_tiny sp=2"},
    {PARITY_OP_MOE_EXPERTS, "eager", PARITY_CAP_EXPERT_PARALLEL,
     "layout_rows: qwen3_moe_tiny ep=2, sp=2,ep=2, fsdp=2,sp=2,ep=2, dp=2,sp=2,ep=4; deepseek_v3_tiny and "
     "qwen3_5_moe_tiny fsdp=2,ep=2"},
};

Test(capability_claims, every_cpu_parallel_safety_claim_has_its_layout_rows) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const uint32_t parallel = PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    int cpu_backends = 0;
    for (size_t i = 0; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        // off the CPU no layout runs yet (model_parallel.c refuses it), so a claim there is not acted on
        if (backend->device != PARITY_DEVICE_CPU) continue;
        cpu_backends++;
        uint32_t allowed = 0;
        for (size_t c = 0; c < ROWS(parallel_claims); c++)
            if (strcmp(parallel_claims[c].op, backend->op) == 0 && strcmp(parallel_claims[c].name, backend->name) == 0)
                allowed = parallel_claims[c].claims;
        char names[128];
        cr_expect_eq(backend->capabilities & parallel, allowed, "cpu %s %s claims %s; test_capability_claims.c's rows allow %s",
                     backend->op, backend->name, parity_capability_names(backend->capabilities & parallel, names, sizeof names),
                     allowed ? "other claims" : "none");
    }
    cr_expect_gt(cpu_backends, 0);
    for (size_t c = 0; c < ROWS(parallel_claims); c++) {
        const parity_backend *backend = parity_registry_find(parallel_claims[c].op, parallel_claims[c].name, PARITY_DEVICE_CPU);
        cr_expect(backend && (backend->capabilities & parallel_claims[c].claims) == parallel_claims[c].claims,
                  "row %s %s: the backend does not make the claim (%s)", parallel_claims[c].op, parallel_claims[c].name,
                  parallel_claims[c].proof);
    }
}
