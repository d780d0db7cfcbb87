// cases_rotary.c: rotary rows (head_dim 48/32/8, partial rotary 0.25 and 0.5, kv heads < heads,
// one token, packed positions that restart at 0, the interleaved layout, every rope type) and
// invalid calls. Positions are integers, not differentiable; the engine checks query and key.
#include <stdlib.h>

#include "ops/rotary/rotary.h"
#include "ops/testing/op_cases.h"

#define ROTARY_MAX_TOKENS 64

typedef struct rotary_params {
    int64_t tokens, query_heads, key_heads, head_dim;
    const int64_t *positions; // (tokens); NULL means 0, 1, ..., tokens - 1
    parity_rope_description rope;
} rotary_params;

static parity_error *rotary_setup(op_check_state *state, const void *raw) {
    const rotary_params *params = raw;
    if (params->tokens > ROTARY_MAX_TOKENS)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "rotary case: at most %d tokens", ROTARY_MAX_TOKENS);
    int64_t positions[ROTARY_MAX_TOKENS];
    for (int64_t n = 0; n < params->tokens; n++) positions[n] = params->positions ? params->positions[n] : n;
    op_check_input(state, "query", true, OP_CHECK_NORMAL, 0, 1,
                   PARITY_SHAPE(params->tokens, params->query_heads, params->head_dim));
    op_check_input(state, "key", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(params->tokens, params->key_heads, params->head_dim));
    op_check_indices(state, "positions", positions, PARITY_SHAPE(params->tokens));
    op_check_output(state, "query_out", true, PARITY_SHAPE(params->tokens, params->query_heads, params->head_dim));
    op_check_output(state, "key_out", true, PARITY_SHAPE(params->tokens, params->key_heads, params->head_dim));
    op_check_set_attributes(state, &params->rope);
    return NULL;
}

#define ROTARY_ROW(label, tokens_, query_heads_, key_heads_, head_dim_, positions_, ...)                    \
    {&parity_rotary_op, label, rotary_setup,                                                                \
     &(const rotary_params){tokens_, query_heads_, key_heads_, head_dim_, positions_, {__VA_ARGS__}}, 0, 0}

static const int64_t packed_positions[] = {0, 1, 2, 0, 1};           // two documents, packed
static const int64_t packed_with_single[] = {0, 1, 2, 3, 0, 0, 1};   // documents of 4, 1 and 2 tokens
static const int64_t single_position[] = {5};
static const int64_t spread_positions[] = {0, 3, 17, 100, 1000, 2047};
static const int64_t long_context_positions[] = {0, 1, 31, 255, 1024, 2000, 0, 7};

static const op_check_case rotary_cases[] = {
    ROTARY_ROW("default N=7 Hq=4 Hk=2 D=48", 7, 4, 2, 48, NULL, .theta = 10000),
    ROTARY_ROW("default N=33 Hq=32 Hk=8 D=128 (16-byte path)", 33, 32, 8, 128, NULL, .theta = 500000),
    ROTARY_ROW("default N=1 Hq=1 Hk=1 D=8 position=5", 1, 1, 1, 8, single_position, .theta = 10000),
    ROTARY_ROW("default packed 0 1 2 0 1 Hq=3 Hk=1 D=32", 5, 3, 1, 32, packed_positions, .theta = 1e6),
    ROTARY_ROW("partial 0.25 D=32 packed Hq=2 Hk=1 (Qwen3.5)", 5, 2, 1, 32, packed_positions, .theta = 1e7,
               .partial_rotary_factor = 0.25),
    ROTARY_ROW("partial 0.25 D=48 N=7 Hq=3 Hk=1 doc of 1", 7, 3, 1, 48, packed_with_single, .theta = 10000,
               .partial_rotary_factor = 0.25),
    ROTARY_ROW("partial 0.5 D=8 N=3 Hq=2 Hk=1", 3, 2, 1, 8, NULL, .theta = 10000, .partial_rotary_factor = 0.5),
    ROTARY_ROW("interleaved D=8 packed Hq=2 Hk=1 (DeepSeek-V3)", 5, 2, 1, 8, packed_positions, .theta = 10000,
               .layout = PARITY_ROTARY_INTERLEAVED),
    ROTARY_ROW("interleaved partial 0.5 D=48 N=7 Hq=2 Hk=2", 7, 2, 2, 48, packed_with_single, .theta = 10000,
               .layout = PARITY_ROTARY_INTERLEAVED, .partial_rotary_factor = 0.5),
    ROTARY_ROW("linear factor=4 D=16 N=6 Hq=2 Hk=2", 6, 2, 2, 16, spread_positions, .type = PARITY_ROPE_LINEAR,
               .theta = 10000, .factor = 4),
    ROTARY_ROW("llama3 D=48 all three bands N=8 Hq=4 Hk=1", 8, 4, 1, 48, long_context_positions,
               .type = PARITY_ROPE_LLAMA3, .theta = 500000, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
               .original_max_position_embeddings = 8192),
    ROTARY_ROW("llama3 D=16 orig=32 Hq=4 Hk=1 (llama3_tiny)", 6, 4, 1, 16, spread_positions, .type = PARITY_ROPE_LLAMA3,
               .theta = 500000, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
               .original_max_position_embeddings = 32),
    ROTARY_ROW("yarn interleaved D=16 factor=40 mscale=1/1 Hq=3 Hk=1", 8, 3, 1, 16, long_context_positions,
               .type = PARITY_ROPE_YARN, .layout = PARITY_ROTARY_INTERLEAVED, .theta = 10000, .factor = 40,
               .original_max_position_embeddings = 4096, .mscale = 1, .mscale_all_dim = 1),
    ROTARY_ROW("yarn scaled cos/sin partial 0.5 D=32 Hq=2 Hk=1", 6, 2, 1, 32, spread_positions, .type = PARITY_ROPE_YARN,
               .theta = 10000, .factor = 4, .original_max_position_embeddings = 64, .partial_rotary_factor = 0.5),
    ROTARY_ROW("yarn no truncate D=32 factor=32 Hq=2 Hk=1 (gpt-oss)", 8, 2, 1, 32, long_context_positions,
               .type = PARITY_ROPE_YARN, .theta = 150000, .factor = 32, .original_max_position_embeddings = 4096,
               .yarn_no_truncate = true),
};
const op_case_list rotary_case_list = OP_CASE_LIST(rotary_cases);

// ---- invalid calls ----
typedef struct rotary_call {
    int64_t query_shape[3], key_shape[3];
    parity_dtype positions_dtype;
    parity_rope_description rope;
} rotary_call;

static parity_error *call_rotary_forward(const rotary_call *call) {
    parity_tensor query = {0}, key = {0}, positions = {0}, query_out = {0}, key_out = {0};
    parity_error *error = parity_tensor_zeros(&query, PARITY_F64, PARITY_CPU, 3, call->query_shape);
    if (!error) error = parity_tensor_zeros(&key, PARITY_F64, PARITY_CPU, 3, call->key_shape);
    if (!error) error = parity_tensor_zeros(&positions, call->positions_dtype, PARITY_CPU, PARITY_SHAPE(call->query_shape[0]));
    if (!error) error = parity_tensor_zeros(&query_out, PARITY_F64, PARITY_CPU, 3, call->query_shape);
    if (!error) error = parity_tensor_zeros(&key_out, PARITY_F64, PARITY_CPU, 3, call->key_shape);
    parity_saved saved = {0};
    const parity_backend *backend;
    if (!error) error = parity_registry_resolve(PARITY_OP_ROTARY, "eager", PARITY_CPU, &backend);
    if (!error) {
        parity_rotary_args args = {&query, &key, &positions, &call->rope, &query_out, &key_out};
        error = ((const parity_rotary_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    }
    parity_saved_release(&saved);
    parity_tensor_release(&query);
    parity_tensor_release(&key);
    parity_tensor_release(&positions);
    parity_tensor_release(&query_out);
    parity_tensor_release(&key_out);
    return error;
}

static parity_error *call_with_key_head_dim_mismatch(void) {
    return call_rotary_forward(&(rotary_call){{5, 2, 16}, {5, 1, 8}, PARITY_I64, {.theta = 10000}});
}

static parity_error *call_with_float_positions(void) {
    return call_rotary_forward(&(rotary_call){{5, 2, 16}, {5, 1, 16}, PARITY_F64, {.theta = 10000}});
}

static parity_error *call_with_odd_rotary_dim(void) {
    return call_rotary_forward(
        &(rotary_call){{3, 1, 6}, {3, 1, 6}, PARITY_I64, {.theta = 10000, .partial_rotary_factor = 0.5}});
}

static parity_error *call_yarn_without_context(void) {
    return call_rotary_forward(
        &(rotary_call){{3, 1, 8}, {3, 1, 8}, PARITY_I64, {.type = PARITY_ROPE_YARN, .theta = 10000, .factor = 4}});
}

static const op_invalid_case rotary_invalid_cases[] = {
    {PARITY_OP_ROTARY, "key head_dim differs from query", call_with_key_head_dim_mismatch,
     "rotary: key has shape (5, 1, 8), expected (5, *, 16)"},
    {PARITY_OP_ROTARY, "positions are not int64", call_with_float_positions, "rotary: positions is fp64, expected int64"},
    {PARITY_OP_ROTARY, "odd rotary_dim", call_with_odd_rotary_dim,
     "rotary: rotary_dim 3 (head_dim 6 x partial_rotary_factor 0.5) must be even"},
    {PARITY_OP_ROTARY, "yarn without original_max_position_embeddings", call_yarn_without_context,
     "rotary: yarn original_max_position_embeddings 0 must be > 0"},
};
const op_invalid_list rotary_invalid_list = OP_CASE_LIST(rotary_invalid_cases);
