// cases_attention.c: attention rows (causal and not, MHA/GQA/MQA, D = 48, MLA's D != Dv, N = 1,
// varlen documents of length 1, a plain [B, T] batch, sliding windows, custom scales, and sequences
// longer than sdpa's 16-token tile) and invalid calls. Every row runs eager and, through the backend
// pair in op_cases.c, sdpa. Attention is smooth in all its inputs, so finite differences need no
// special inputs. And GPU-only rows of awkward shapes (attention_gpu_case_list).
#include <math.h>

#include "ops/attention/attention.h"
#include "ops/testing/op_cases.h"

#define ATTENTION_MAX_DOCUMENTS 6

typedef struct attention_params {
    int64_t query_heads, kv_heads, head_dim, value_dim;
    int64_t lengths[ATTENTION_MAX_DOCUMENTS]; // document lengths, 0-terminated
    bool causal;
    int64_t sliding_window;
    double scale; // 0 = head_dim^-0.5
} attention_params;

static parity_error *attention_setup(op_check_state *state, const void *raw) {
    const attention_params *params = raw;
    int64_t cu_seqlens[ATTENTION_MAX_DOCUMENTS + 1] = {0};
    int64_t documents = 0;
    while (documents < ATTENTION_MAX_DOCUMENTS && params->lengths[documents] > 0) {
        cu_seqlens[documents + 1] = cu_seqlens[documents] + params->lengths[documents];
        documents++;
    }
    int64_t n = cu_seqlens[documents];
    op_check_input(state, "query", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(n, params->query_heads, params->head_dim));
    op_check_input(state, "key", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(n, params->kv_heads, params->head_dim));
    op_check_input(state, "value", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(n, params->kv_heads, params->value_dim));
    op_check_indices(state, "cu_seqlens", cu_seqlens, PARITY_SHAPE(documents + 1));
    op_check_output(state, "output", true, PARITY_SHAPE(n, params->query_heads, params->value_dim));
    op_check_set_attributes(state, &(parity_attention_args){
        .scale = params->scale ? params->scale : 1.0 / sqrt((double)params->head_dim), .causal = params->causal,
        .sliding_window = params->sliding_window});
    return NULL;
}

// ATTENTION_ROW(label, Hq, Hk, D, Dv, causal, window, scale, document lengths...)
#define ATTENTION_ROW(label, hq, hk, d, dv, causal_, window, scale_, ...)                                   \
    {&parity_attention_op, label, attention_setup,                                                          \
     &(const attention_params){hq, hk, d, dv, {__VA_ARGS__}, causal_, window, scale_}, 0, 0}

static const op_check_case attention_cases[] = {
    ATTENTION_ROW("causal N=7 Hq=Hk=2 D=16", 2, 2, 16, 16, true, 0, 0, 7),
    ATTENTION_ROW("non-causal N=6 Hq=Hk=3 D=8", 3, 3, 8, 8, false, 0, 0, 6),
    ATTENTION_ROW("causal gqa Hq=4 Hk=2 N=5 D=48", 4, 2, 48, 48, true, 0, 0, 5),
    ATTENTION_ROW("non-causal gqa Hq=4 Hk=2 N=5 D=48", 4, 2, 48, 48, false, 0, 0, 5),
    ATTENTION_ROW("causal mqa Hq=3 Hk=1 N=6 D=8", 3, 1, 8, 8, true, 0, 0, 6),
    ATTENTION_ROW("non-causal mqa Hq=3 Hk=1 N=6 D=8", 3, 1, 8, 8, false, 0, 0, 6),
    ATTENTION_ROW("causal mla D=24 Dv=16 Hq=2 N=5 scale=0.15", 2, 2, 24, 16, true, 0, 0.15, 5),
    ATTENTION_ROW("non-causal mla D=24 Dv=16 Hq=4 Hk=2 N=3", 4, 2, 24, 16, false, 0, 0, 3),
    ATTENTION_ROW("causal N=1 Hq=2 Hk=1 D=8", 2, 1, 8, 8, true, 0, 0, 1),
    ATTENTION_ROW("non-causal N=1 Hq=Hk=1 D=5", 1, 1, 5, 3, false, 0, 0, 1),
    ATTENTION_ROW("causal varlen {1,5,1,7} Hq=4 Hk=2 D=16", 4, 2, 16, 16, true, 0, 0, 1, 5, 1, 7),
    ATTENTION_ROW("non-causal varlen {1,5,1,7} Hq=4 Hk=2 D=16", 4, 2, 16, 16, false, 0, 0, 1, 5, 1, 7),
    ATTENTION_ROW("causal batch B=2 T=5 Hq=2 Hk=1 D=8", 2, 1, 8, 8, true, 0, 0, 5, 5),
    ATTENTION_ROW("non-causal batch B=2 T=5 Hq=2 Hk=1 D=8", 2, 1, 8, 8, false, 0, 0, 5, 5),
    ATTENTION_ROW("window=3 N=9 Hq=Hk=2 D=8", 2, 2, 8, 8, true, 3, 0, 9),
    ATTENTION_ROW("window=3 varlen {1,5,1,7} Hq=4 Hk=2 D=8", 4, 2, 8, 8, true, 3, 0, 1, 5, 1, 7),
    ATTENTION_ROW("causal scale=0.3 N=6 Hq=2 Hk=1 D=7", 2, 1, 7, 7, true, 0, 0.3, 6),
    ATTENTION_ROW("non-causal scale=0.3 N=6 Hq=2 Hk=1 D=7", 2, 1, 7, 7, false, 0, 0.3, 6),
    ATTENTION_ROW("causal long N=37 Hq=2 Hk=1 D=8 (3 sdpa tiles)", 2, 1, 8, 8, true, 0, 0, 37),
    ATTENTION_ROW("non-causal long N=37 Hq=2 Hk=1 D=8", 2, 1, 8, 8, false, 0, 0, 37),
    ATTENTION_ROW("window=3 long N=37 Hq=2 Hk=1 D=8", 2, 1, 8, 8, true, 3, 0, 37),
    ATTENTION_ROW("window=20 long varlen {37,1,19} Hq=2 Hk=1", 2, 1, 8, 8, true, 20, 0, 37, 1, 19),
};
const op_case_list attention_case_list = OP_CASE_LIST(attention_cases);

// GPU-only rows (test_ops_fused_gpu.c, and three of them in test_attention_gpu.c's determinism table;
// not in all_op_cases: too large for the CPU tests' finite differences): the awkward shapes of the CUDA attention kernels' tiles (T = 1, 17, 239, 1023, 4224; a 32- or
// 16-token tile boundary straddled by documents of 1, 15, 100, 300), the models' head sizes 64, 128,
// 192 with Dv 128 (MLA) and 256, GQA 32/8 and MQA, causal, non-causal and sliding windows. Kept to a
// few heads at long T: the CPU eager reference runs five times a row.
static const op_check_case attention_gpu_cases[] = {
    ATTENTION_ROW("gpu T=1 gqa Hq=4 Hk=2 D=64", 4, 2, 64, 64, true, 0, 0, 1),
    ATTENTION_ROW("gpu T=1 non-causal mla D=192 Dv=128 Hq=2 Hk=1", 2, 1, 192, 128, false, 0, 0, 1),
    ATTENTION_ROW("gpu T=17 gqa 32/8 D=64 causal", 32, 8, 64, 64, true, 0, 0, 17),
    ATTENTION_ROW("gpu T=17 gqa 32/8 mla D=192 Dv=128 window=5", 32, 8, 192, 128, true, 5, 0, 17),
    ATTENTION_ROW("gpu T=17 mqa Hq=8 Hk=1 D=128 non-causal", 8, 1, 128, 128, false, 0, 0, 17),
    ATTENTION_ROW("gpu T=239 mqa Hq=4 Hk=1 D=128 causal", 4, 1, 128, 128, true, 0, 0, 239),
    ATTENTION_ROW("gpu T=239 mla D=192 Dv=128 Hq=4 Hk=2 causal", 4, 2, 192, 128, true, 0, 0, 239),
    ATTENTION_ROW("gpu T=239 D=Dv=256 Hq=2 Hk=1 window=100", 2, 1, 256, 256, true, 100, 0, 239),
    ATTENTION_ROW("gpu T=1023 Hq=2 Hk=1 D=64 causal", 2, 1, 64, 64, true, 0, 0, 1023),
    ATTENTION_ROW("gpu T=1023 Hq=Hk=1 D=64 window=128", 1, 1, 64, 64, true, 128, 0, 1023),
    ATTENTION_ROW("gpu T=4224 Hq=Hk=1 D=64 causal", 1, 1, 64, 64, true, 0, 0, 4224),
    ATTENTION_ROW("gpu varlen {1,15,100,300} gqa Hq=4 Hk=2 D=64 causal", 4, 2, 64, 64, true, 0, 0, 1, 15, 100, 300),
    ATTENTION_ROW("gpu varlen {300,1,100,15} Hq=4 Hk=2 D=128 non-causal", 4, 2, 128, 128, false, 0, 0, 300, 1, 100,
                  15),
    ATTENTION_ROW("gpu varlen {1,15,100,300} mqa Hq=4 Hk=1 mla D=192 Dv=128 window=37", 4, 1, 192, 128, true, 37, 0, 1,
                  15, 100, 300),
    ATTENTION_ROW("gpu varlen {15,1,1,300,100} mqa Hq=8 Hk=1 D=64 scale=0.3 causal", 8, 1, 64, 64, true, 0, 0.3, 15, 1,
                  1, 300, 100),
};
const op_case_list attention_gpu_case_list = OP_CASE_LIST(attention_gpu_cases);

// The rows every CUDA attention backend (sdpa, flash_attention_2, flex_attention) runs in
// test_attention_gpu.c against an fp64 eager reference (issue 13, deliverable 6): single documents of
// T = 1, 17, 239, 1023, 4224 (no tile size of 16, 32, 64 or 128 divides them: the last query and key
// tiles are partial, their padding rows fully masked), one packed row of documents 1, 15, 100, 300,
// 1200 (in three orders), head sizes 64, 96, 128, 256 and MLA's 192 with Dv 128, GQA 32/8, MQA
// (Hk = 1), causal, non-causal and sliding windows. Heads are few where T is long: the references
// (cuda eager in fp64 and in the run's dtype) materialize T x T scores, and the host builds and
// compares every tensor. The rows named in test_attention_gpu.c's determinism table must stay.
static const op_check_case attention_backend_gpu_cases[] = {
    ATTENTION_ROW("T=1 gqa Hq=4 Hk=2 D=64 causal", 4, 2, 64, 64, true, 0, 0, 1),
    ATTENTION_ROW("T=1 mqa Hq=4 Hk=1 mla D=192 Dv=128 non-causal", 4, 1, 192, 128, false, 0, 0, 1),
    ATTENTION_ROW("T=17 gqa 32/8 D=128 causal", 32, 8, 128, 128, true, 0, 0, 17),
    ATTENTION_ROW("T=17 mqa Hq=8 Hk=1 D=96 non-causal", 8, 1, 96, 96, false, 0, 0, 17),
    ATTENTION_ROW("T=239 gqa 32/8 D=64 causal", 32, 8, 64, 64, true, 0, 0, 239),
    ATTENTION_ROW("T=239 Hq=4 Hk=2 D=256 window=100", 4, 2, 256, 256, true, 100, 0, 239),
    ATTENTION_ROW("T=239 Hq=4 Hk=2 mla D=192 Dv=128 causal", 4, 2, 192, 128, true, 0, 0, 239),
    ATTENTION_ROW("T=1023 gqa 32/8 D=64 causal", 32, 8, 64, 64, true, 0, 0, 1023),
    ATTENTION_ROW("T=1023 mqa Hq=8 Hk=1 D=96 window=256", 8, 1, 96, 96, true, 256, 0, 1023),
    ATTENTION_ROW("T=1023 Hq=Hk=2 D=256 non-causal", 2, 2, 256, 256, false, 0, 0, 1023),
    ATTENTION_ROW("T=1023 Hq=4 Hk=1 mla D=192 Dv=128 non-causal", 4, 1, 192, 128, false, 0, 0, 1023),
    ATTENTION_ROW("T=4224 gqa Hq=8 Hk=2 D=128 causal", 8, 2, 128, 128, true, 0, 0, 4224),
    ATTENTION_ROW("T=4224 Hq=Hk=2 D=64 window=1024", 2, 2, 64, 64, true, 1024, 0, 4224),
    ATTENTION_ROW("T=4224 mqa Hq=2 Hk=1 D=128 non-causal", 2, 1, 128, 128, false, 0, 0, 4224),
    ATTENTION_ROW("varlen {1,15,100,300,1200} gqa Hq=8 Hk=2 D=128 causal", 8, 2, 128, 128, true, 0, 0, 1, 15, 100, 300,
                  1200),
    ATTENTION_ROW("varlen {1200,300,100,15,1} mqa Hq=4 Hk=1 mla D=192 Dv=128 non-causal", 4, 1, 192, 128, false, 0, 0,
                  1200, 300, 100, 15, 1),
    ATTENTION_ROW("varlen {15,1,1200,1,100} Hq=4 Hk=2 D=64 window=37", 4, 2, 64, 64, true, 37, 0, 15, 1, 1200, 1, 100),
    ATTENTION_ROW("varlen {1,15,100,300,1200} Hq=4 Hk=2 D=256 causal", 4, 2, 256, 256, true, 0, 0, 1, 15, 100, 300, 1200),
    ATTENTION_ROW("varlen {300,1200,1,15,100} gqa 32/8 D=96 scale=0.3 causal", 32, 8, 96, 96, true, 0, 0.3, 300, 1200, 1,
                  15, 100),
};
const op_case_list attention_backend_gpu_case_list = OP_CASE_LIST(attention_backend_gpu_cases);

// ---- invalid calls ----
typedef struct attention_call {
    const char *backend;
    int64_t tokens, query_heads, kv_heads, head_dim, key_head_dim, value_dim;
    int64_t cu_seqlens[4];
    int64_t boundaries; // entries of cu_seqlens used
    bool causal;
    int64_t sliding_window;
    bool wrong_dkey; // forward succeeds, backward gets a dkey with one extra column
} attention_call;

static parity_error *call_attention(attention_call call) {
    parity_tensor q = {0}, k = {0}, v = {0}, y = {0}, cu = {0}, dy = {0}, dk = {0};
    parity_error *error =
        parity_tensor_zeros(&q, PARITY_F64, PARITY_CPU, PARITY_SHAPE(call.tokens, call.query_heads, call.head_dim));
    if (!error)
        error = parity_tensor_zeros(&k, PARITY_F64, PARITY_CPU,
                                    PARITY_SHAPE(call.tokens, call.kv_heads, call.key_head_dim));
    if (!error)
        error =
            parity_tensor_zeros(&v, PARITY_F64, PARITY_CPU, PARITY_SHAPE(call.tokens, call.kv_heads, call.value_dim));
    if (!error)
        error = parity_tensor_zeros(&y, PARITY_F64, PARITY_CPU,
                                    PARITY_SHAPE(call.tokens, call.query_heads, call.value_dim));
    if (!error)
        error = parity_tensor_zeros(&dy, PARITY_F64, PARITY_CPU,
                                    PARITY_SHAPE(call.tokens, call.query_heads, call.value_dim));
    if (!error)
        error = parity_tensor_zeros(&dk, PARITY_F64, PARITY_CPU,
                                    PARITY_SHAPE(call.tokens, call.kv_heads, call.key_head_dim + 1));
    if (!error) error = parity_tensor_alloc(&cu, PARITY_I64, PARITY_CPU, PARITY_SHAPE(call.boundaries));
    parity_saved saved = {0};
    const parity_backend *backend = NULL;
    if (!error) {
        for (int64_t i = 0; i < call.boundaries; i++) ((int64_t *)cu.data)[i] = call.cu_seqlens[i];
        error = parity_registry_resolve(PARITY_OP_ATTENTION, call.backend, PARITY_CPU, &backend);
    }
    parity_attention_args args = {&q, &k, &v, &cu, 0.5, call.causal, call.sliding_window, &y, NULL};
    const parity_attention_kernels *kernels = backend ? backend->kernels : NULL;
    if (!error) error = kernels->forward(op_check_cpu_exec(), &args, &saved);
    if (!error && call.wrong_dkey)
        error = kernels->backward(op_check_cpu_exec(), &args, &saved, &(parity_attention_grads){&dy, NULL, &dk, NULL});
    parity_saved_release(&saved);
    parity_tensor *all[] = {&q, &k, &v, &y, &cu, &dy, &dk};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_tensor_release(all[i]);
    return error;
}

static parity_error *call_with_key_head_size_mismatch(void) {
    return call_attention((attention_call){"eager", 5, 2, 2, 24, 16, 16, {0, 5}, 2, true, 0, false});
}
static parity_error *call_with_heads_not_a_multiple(void) {
    return call_attention((attention_call){"eager", 5, 3, 2, 8, 8, 8, {0, 5}, 2, true, 0, false});
}
static parity_error *call_with_boundaries_short_of_n(void) {
    return call_attention((attention_call){"eager", 5, 2, 1, 8, 8, 8, {0, 2, 4}, 3, true, 0, false});
}
static parity_error *call_with_decreasing_boundaries(void) {
    return call_attention((attention_call){"eager", 5, 2, 1, 8, 8, 8, {0, 3, 2, 5}, 4, true, 0, false});
}
static parity_error *call_with_window_but_not_causal(void) {
    return call_attention((attention_call){"eager", 5, 2, 1, 8, 8, 8, {0, 5}, 2, false, 3, false});
}
static parity_error *call_backward_with_wrong_dkey(void) {
    return call_attention((attention_call){"eager", 5, 2, 1, 8, 8, 8, {0, 5}, 2, true, 0, true});
}
static parity_error *call_sdpa_with_key_head_size_mismatch(void) {
    return call_attention((attention_call){"sdpa", 5, 2, 2, 24, 16, 16, {0, 5}, 2, true, 0, false});
}
static parity_error *call_sdpa_with_decreasing_boundaries(void) {
    return call_attention((attention_call){"sdpa", 5, 2, 1, 8, 8, 8, {0, 3, 2, 5}, 4, true, 0, false});
}
static parity_error *call_sdpa_backward_with_wrong_dkey(void) {
    return call_attention((attention_call){"sdpa", 5, 2, 1, 8, 8, 8, {0, 5}, 2, true, 0, true});
}

static const op_invalid_case attention_invalid_cases[] = {
    {PARITY_OP_ATTENTION, "key head size differs from query", call_with_key_head_size_mismatch,
     "attention: key has shape (5, 2, 16), expected (5, *, 24)"},
    {PARITY_OP_ATTENTION, "query heads not a multiple of kv heads", call_with_heads_not_a_multiple,
     "attention: 3 query heads is not a multiple of 2 kv heads"},
    {PARITY_OP_ATTENTION, "cu_seqlens does not end at N", call_with_boundaries_short_of_n,
     "attention: cu_seqlens ends at 4, expected N = 5"},
    {PARITY_OP_ATTENTION, "cu_seqlens decreases", call_with_decreasing_boundaries,
     "attention: cu_seqlens must increase strictly, but cu_seqlens[2] = 2 <= cu_seqlens[1] = 3"},
    {PARITY_OP_ATTENTION, "sliding window without causal", call_with_window_but_not_causal,
     "attention: sliding_window 3 needs causal attention"},
    {PARITY_OP_ATTENTION, "backward dkey shape differs from key", call_backward_with_wrong_dkey,
     "attention: dkey has shape (5, 1, 9), expected (5, 1, 8)"},
    {PARITY_OP_ATTENTION, "sdpa: key head size differs from query", call_sdpa_with_key_head_size_mismatch,
     "attention: key has shape (5, 2, 16), expected (5, *, 24)"},
    {PARITY_OP_ATTENTION, "sdpa: cu_seqlens decreases", call_sdpa_with_decreasing_boundaries,
     "attention: cu_seqlens must increase strictly, but cu_seqlens[2] = 2 <= cu_seqlens[1] = 3"},
    {PARITY_OP_ATTENTION, "sdpa: backward dkey shape differs from key", call_sdpa_backward_with_wrong_dkey,
     "attention: dkey has shape (5, 1, 9), expected (5, 1, 8)"},
};
const op_invalid_list attention_invalid_list = OP_CASE_LIST(attention_invalid_cases);
