// cases_gated_delta_rule.c: gated_delta_rule rows (packed documents with length-1 documents, one
// token, prime head dims, value heads a multiple of key heads, head dim 48, q/k L2 norm on and off,
// g in the call's dtype or in f32 as Qwen3.5 computes it) and invalid calls. The chunk size only
// matters to the chunked backend ("fla", compared with eager on every row): rows with chunk 4 cut
// documents {1, 5, 1, 7} and {9, 13} into chunks that do and do not divide their lengths (a last
// chunk of 1 to 4 tokens), and one document of 70 tokens crosses fla's default chunk of 64.
// g is drawn in [-2, 0), beta in [0.1, 0.9] (a sigmoid's range). Without the in-kernel L2 norm, q and
// k are drawn with std Dk^-0.5 so |k| ~ 1 and the delta-rule update stays a contraction.
#include <math.h>

#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/testing/op_cases.h"

#define GDR_MAX_DOCUMENTS 8

typedef struct gated_delta_rule_params {
    int64_t key_heads, value_heads, key_dim, value_dim;
    bool use_qk_l2norm;
    bool g_in_compute_dtype; // g held in f32 for f32/bf16 runs (gdn_gating's output), else the call's dtype
    double scale;            // 0 = Dk^-0.5
    int64_t chunk_size;      // chunked backends; 0 = 64
    int document_count;      // 0 = no cu_seqlens (one document of `lengths[0]` tokens)
    int64_t lengths[GDR_MAX_DOCUMENTS];
} gated_delta_rule_params;

static parity_error *gated_delta_rule_setup(op_check_state *state, const void *raw) {
    const gated_delta_rule_params *p = raw;
    int64_t tokens = 0;
    for (int i = 0; i < (p->document_count ? p->document_count : 1); i++) tokens += p->lengths[i];
    double qk_std = p->use_qk_l2norm ? 1.0 : 1.0 / sqrt((double)p->key_dim);
    op_check_input(state, "query", true, OP_CHECK_NORMAL, 0, qk_std, PARITY_SHAPE(tokens, p->key_heads, p->key_dim));
    op_check_input(state, "key", true, OP_CHECK_NORMAL, 0, qk_std, PARITY_SHAPE(tokens, p->key_heads, p->key_dim));
    op_check_input(state, "value", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(tokens, p->value_heads, p->value_dim));
    if (p->g_in_compute_dtype)
        op_check_input_compute(state, "g", true, OP_CHECK_UNIFORM, -2, 0, PARITY_SHAPE(tokens, p->value_heads));
    else
        op_check_input(state, "g", true, OP_CHECK_UNIFORM, -2, 0, PARITY_SHAPE(tokens, p->value_heads));
    op_check_input(state, "beta", true, OP_CHECK_UNIFORM, 0.1, 0.9, PARITY_SHAPE(tokens, p->value_heads));
    if (p->document_count) {
        int64_t offsets[GDR_MAX_DOCUMENTS + 1] = {0};
        for (int i = 0; i < p->document_count; i++) offsets[i + 1] = offsets[i] + p->lengths[i];
        op_check_indices(state, "cu_seqlens", offsets, PARITY_SHAPE(p->document_count + 1));
    }
    op_check_output(state, "output", true, PARITY_SHAPE(tokens, p->value_heads, p->value_dim));
    op_check_set_attributes(
        state, &(parity_gated_delta_rule_args){.scale = p->scale, .use_qk_l2norm = p->use_qk_l2norm, .chunk_size = p->chunk_size});
    return NULL;
}

#define GDR_CHUNKED_ROW(label, hk, hv, dk, dv, l2norm, g_compute, scale_, chunk_, count_, ...)                         \
    {&parity_gated_delta_rule_op, label, gated_delta_rule_setup,                                                       \
     &(const gated_delta_rule_params){hk, hv, dk, dv, l2norm, g_compute, scale_, chunk_, count_, {__VA_ARGS__}}, 0, 0}
#define GDR_ROW(label, hk, hv, dk, dv, l2norm, g_compute, scale_, count_, ...) \
    GDR_CHUNKED_ROW(label, hk, hv, dk, dv, l2norm, g_compute, scale_, 0, count_, __VA_ARGS__)

static const op_check_case gated_delta_rule_cases[] = {
    GDR_ROW("H=2 Dk=16 Dv=8 docs=1,5,1,7 l2norm", 2, 2, 16, 8, true, false, 0, 4, 1, 5, 1, 7),
    GDR_ROW("H=2 Dk=16 Dv=8 one document N=9", 2, 2, 16, 8, false, false, 0, 0, 9),
    GDR_ROW("Hk=1 Hv=2 Dk=5 Dv=3 docs=1,5,1,7 l2norm", 1, 2, 5, 3, true, false, 0, 4, 1, 5, 1, 7),
    GDR_ROW("Hk=2 Hv=4 Dk=5 Dv=3 docs=1,5,1,7 scale=0.3", 2, 4, 5, 3, false, false, 0.3, 4, 1, 5, 1, 7),
    GDR_ROW("Hk=2 Hv=4 Dk=16 Dv=8 docs=6 l2norm g=f32", 2, 4, 16, 8, true, true, 0, 1, 6),
    GDR_ROW("Hk=1 Hv=3 Dk=48 Dv=7 docs=3,4 l2norm g=f32", 1, 3, 48, 7, true, true, 0, 2, 3, 4),
    GDR_ROW("H=1 Dk=3 Dv=2 N=1 l2norm", 1, 1, 3, 2, true, false, 0, 1, 1),
    GDR_CHUNKED_ROW("H=2 Dk=16 Dv=8 docs=1,5,1,7 l2norm chunk=4", 2, 2, 16, 8, true, false, 0, 4, 4, 1, 5, 1, 7),
    GDR_CHUNKED_ROW("Hk=1 Hv=2 Dk=5 Dv=3 docs=9,13 chunk=4", 1, 2, 5, 3, false, false, 0, 4, 2, 9, 13),
    GDR_CHUNKED_ROW("Hk=2 Hv=4 Dk=6 Dv=4 docs=1,5,1,7 l2norm g=f32 chunk=4", 2, 4, 6, 4, true, true, 0, 4, 4, 1, 5, 1, 7),
    GDR_CHUNKED_ROW("H=1 Dk=4 Dv=3 docs=12 scale=0.4 chunk=3", 1, 1, 4, 3, false, false, 0.4, 3, 1, 12),
    GDR_ROW("H=1 Dk=8 Dv=4 docs=70,3 l2norm (crosses chunk 64)", 1, 1, 8, 4, true, false, 0, 2, 70, 3),
};
const op_case_list gated_delta_rule_case_list = OP_CASE_LIST(gated_delta_rule_cases);

// The GPU backends' awkward rows (test_gated_delta_rule_gpu.c): T = 1, 63, 65 (around fla's chunk of 64)
// and 1000; documents of 1, 15, 100, 300 and 1200 tokens; 1, 3 and 16 heads; Dk = Dv = 128 (Qwen3.5)
// and Dk != Dv, with and without the in-kernel L2 norm; g in f32 as Qwen3.5 computes it; a row of many
// documents x heads.
static const op_check_case gated_delta_rule_gpu_cases[] = {
    GDR_ROW("H=1 Dk=Dv=128 T=1 l2norm g=f32", 1, 1, 128, 128, true, true, 0, 0, 1),
    GDR_ROW("H=3 Dk=Dv=128 T=63 l2norm g=f32", 3, 3, 128, 128, true, true, 0, 0, 63),
    GDR_ROW("Hk=1 Hv=3 Dk=128 Dv=64 T=65 l2norm g=f32", 1, 3, 128, 64, true, true, 0, 0, 65),
    GDR_ROW("H=16 Dk=Dv=128 T=1000 l2norm g=f32", 16, 16, 128, 128, true, true, 0, 0, 1000),
    GDR_ROW("H=3 Dk=Dv=128 docs=1,15,100,300,1200 l2norm g=f32", 3, 3, 128, 128, true, true, 0, 5, 1, 15, 100, 300, 1200),
    GDR_ROW("Hk=2 Hv=4 Dk=64 Dv=96 docs=1,15,100,300 scale=0.3", 2, 4, 64, 96, false, false, 0.3, 4, 1, 15, 100, 300),
    // 5 documents x 16 heads x 8 column blocks > the SMs: the tensor-core state pass takes 32 columns
    // a block (one document alone: 16)
    GDR_ROW("H=16 Dk=Dv=128 docs=1,15,100,300,1200 l2norm g=f32", 16, 16, 128, 128, true, true, 0, 5, 1, 15, 100, 300, 1200),
};
const op_case_list gated_delta_rule_gpu_case_list = OP_CASE_LIST(gated_delta_rule_gpu_cases);

// ---- invalid calls ----
static parity_error *call_forward(int64_t tokens, int64_t key_heads, int64_t value_heads, const int64_t *offsets,
                                  int64_t offset_count) {
    enum { key_dim = 4, value_dim = 3 };
    parity_tensor query = {0}, key = {0}, value = {0}, g = {0}, beta = {0}, output = {0}, cu_seqlens = {0};
    parity_error *error = parity_tensor_zeros(&query, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, key_heads, key_dim));
    if (!error) error = parity_tensor_zeros(&key, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, key_heads, key_dim));
    if (!error) error = parity_tensor_zeros(&value, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, value_heads, value_dim));
    if (!error) error = parity_tensor_zeros(&g, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, value_heads));
    if (!error) error = parity_tensor_zeros(&beta, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, value_heads));
    if (!error) error = parity_tensor_zeros(&output, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, value_heads, value_dim));
    if (!error) error = parity_tensor_alloc(&cu_seqlens, PARITY_I64, PARITY_CPU, 1, (int64_t[]){offset_count});
    if (!error) {
        for (int64_t i = 0; i < offset_count; i++) ((int64_t *)cu_seqlens.data)[i] = offsets[i];
        parity_saved saved = {0};
        const parity_backend *backend;
        error = parity_registry_resolve(PARITY_OP_GATED_DELTA_RULE, "eager", PARITY_CPU, &backend);
        if (!error) {
            parity_gated_delta_rule_args args = {&query, &key, &value, &g, &beta, &cu_seqlens, 0, true, &output, 0};
            error = ((const parity_gated_delta_rule_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
        }
        parity_saved_release(&saved);
    }
    parity_tensor *all[] = {&query, &key, &value, &g, &beta, &output, &cu_seqlens};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_tensor_release(all[i]);
    return error;
}

static parity_error *call_with_short_cu_seqlens(void) { return call_forward(14, 2, 2, (int64_t[]){0, 1, 6, 7, 12}, 5); }
static parity_error *call_with_indivisible_heads(void) { return call_forward(6, 2, 3, (int64_t[]){0, 6}, 2); }
static parity_error *call_with_cu_seqlens_not_from_zero(void) { return call_forward(6, 1, 2, (int64_t[]){1, 6}, 2); }

static const op_invalid_case gated_delta_rule_invalid_cases[] = {
    {PARITY_OP_GATED_DELTA_RULE, "cu_seqlens does not end at N", call_with_short_cu_seqlens,
     "gated_delta_rule: cu_seqlens ends at 12, expected 14 (the token count)"},
    {PARITY_OP_GATED_DELTA_RULE, "key heads do not divide value heads", call_with_indivisible_heads,
     "gated_delta_rule: 2 key heads do not divide 3 value heads"},
    {PARITY_OP_GATED_DELTA_RULE, "cu_seqlens does not start at 0", call_with_cu_seqlens_not_from_zero,
     "gated_delta_rule: cu_seqlens starts at 1, expected 0"},
};
const op_invalid_list gated_delta_rule_invalid_list = OP_CASE_LIST(gated_delta_rule_invalid_cases);
