// op_cases.c: every op's rows, listed once. Adding an op = one line in each table below.
#include "ops/testing/op_cases.h"

const op_case_list *const all_op_cases[] = {
    &rms_norm_case_list,
    &cross_entropy_case_list,
    &attention_case_list,
    &causal_conv1d_case_list,
    &l2_norm_case_list,
    &gated_delta_rule_case_list,
    &gdn_gating_case_list,
    &linear_case_list,
    &matmul_case_list,
    &embedding_case_list,
    &add_case_list,
    &sigmoid_gate_case_list,
    &concat_case_list,
    &split_case_list,
    &broadcast_heads_case_list,
    &rotary_case_list,
    &swiglu_case_list,
    &rms_norm_gated_case_list,
    &moe_router_case_list,
    &moe_experts_case_list,
    &load_balancing_loss_case_list,
};
const size_t all_op_case_list_count = sizeof all_op_cases / sizeof all_op_cases[0];

const op_invalid_list *const all_invalid_cases[] = {
    &rms_norm_invalid_list,
    &cross_entropy_invalid_list,
    &attention_invalid_list,
    &causal_conv1d_invalid_list,
    &l2_norm_invalid_list,
    &gated_delta_rule_invalid_list,
    &gdn_gating_invalid_list,
    &linear_invalid_list,
    &matmul_invalid_list,
    &embedding_invalid_list,
    &add_invalid_list,
    &sigmoid_gate_invalid_list,
    &concat_invalid_list,
    &split_invalid_list,
    &broadcast_heads_invalid_list,
    &rotary_invalid_list,
    &swiglu_invalid_list,
    &rms_norm_gated_invalid_list,
    &moe_router_invalid_list,
    &moe_experts_invalid_list,
    &load_balancing_loss_invalid_list,
};
const size_t all_invalid_case_list_count = sizeof all_invalid_cases / sizeof all_invalid_cases[0];

// The rows for GPU runs only (large or awkward for the tile sizes of CUDA kernels; CPU finite
// differences would take too long on them): `parity check op --device cuda` adds them to the op's rows.
const op_case_list *const all_gpu_op_cases[] = {
    &attention_gpu_case_list,
    &attention_backend_gpu_case_list,
    &gated_delta_rule_gpu_case_list,
    &moe_experts_gpu_case_list,
};
const size_t all_gpu_op_case_list_count = sizeof all_gpu_op_cases / sizeof all_gpu_op_cases[0];

// Non-eager backends, each compared with eager on every row of its op.
const op_backend_pair all_backend_pairs[] = {
    {PARITY_OP_CROSS_ENTROPY, "chunk_loss", 1e-12},
    {PARITY_OP_ATTENTION, "sdpa", 1e-12},
    {PARITY_OP_GATED_DELTA_RULE, "fla", 1e-12},
};
const size_t all_backend_pair_count = sizeof all_backend_pairs / sizeof all_backend_pairs[0];
