// op_cases.c: every op's rows, listed once. Adding an op = one line in each table below.
#include "op_cases.h"

const op_case_list *const all_op_cases[] = {
    &rms_norm_case_list,
    &moe_router_case_list,
    &moe_experts_case_list,
    &load_balancing_loss_case_list,
};
const size_t all_op_case_list_count = sizeof all_op_cases / sizeof all_op_cases[0];

const op_invalid_list *const all_invalid_cases[] = {
    &rms_norm_invalid_list,
    &moe_router_invalid_list,
    &moe_experts_invalid_list,
    &load_balancing_loss_invalid_list,
};
const size_t all_invalid_case_list_count = sizeof all_invalid_cases / sizeof all_invalid_cases[0];

// Non-eager backends, each compared with eager on every row of its op.
const op_backend_pair all_backend_pairs[] = {
    {NULL, NULL, 0}, // sentinel: rows land with the sdpa / chunk_loss backends
};
const size_t all_backend_pair_count = sizeof all_backend_pairs / sizeof all_backend_pairs[0];
