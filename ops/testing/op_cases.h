// op_cases.h: the master table of op test rows. Each op's cases live in ops/testing/cases/cases_<op>.c
// and are listed once in op_cases.c; test_ops.c runs every row through every check.
#ifndef PARITY_OP_CASES_H
#define PARITY_OP_CASES_H

#include <stddef.h>

#include "ops/testing/op_check.h"

typedef struct op_case_list {
    const op_check_case *cases;
    size_t count;
} op_case_list;

// A call with invalid arguments and a piece of the message it must produce.
typedef struct op_invalid_case {
    const char *op;
    const char *name;
    parity_error *(*call)(void);
    const char *expected_message; // substring, must name the op and the mismatch
} op_invalid_case;

typedef struct op_invalid_list {
    const op_invalid_case *cases;
    size_t count;
} op_invalid_list;

// Other backend compared with eager on every row of an op: max relative error in f64, and
// whether bf16 must stay within what eager bf16 shows.
typedef struct op_backend_pair {
    const char *op;
    const char *backend;
    double f64_tolerance;
} op_backend_pair;

extern const op_case_list *const all_op_cases[];
extern const size_t all_op_case_list_count;
extern const op_case_list *const all_gpu_op_cases[]; // rows for GPU runs only (op_cases.c)
extern const size_t all_gpu_op_case_list_count;
extern const op_invalid_list *const all_invalid_cases[];
extern const size_t all_invalid_case_list_count;
extern const op_backend_pair all_backend_pairs[];
extern const size_t all_backend_pair_count;

#define OP_CASE_LIST(array) {(array), sizeof(array) / sizeof((array)[0])}

// Each cases_<op>.c exports these.
extern const op_case_list rms_norm_case_list;
extern const op_invalid_list rms_norm_invalid_list;
extern const op_case_list cross_entropy_case_list;
extern const op_invalid_list cross_entropy_invalid_list;
extern const op_case_list attention_case_list;
extern const op_invalid_list attention_invalid_list;
extern const op_case_list attention_gpu_case_list; // GPU tests only (large rows, not in all_op_cases)
extern const op_case_list attention_backend_gpu_case_list; // test_attention_gpu.c: every CUDA attention backend
extern const op_case_list causal_conv1d_case_list;
extern const op_invalid_list causal_conv1d_invalid_list;
extern const op_case_list l2_norm_case_list;
extern const op_invalid_list l2_norm_invalid_list;
extern const op_case_list gated_delta_rule_case_list;
extern const op_case_list gated_delta_rule_gpu_case_list; // test_gated_delta_rule_gpu.c only (awkward GPU rows)
extern const op_invalid_list gated_delta_rule_invalid_list;
extern const op_case_list gdn_gating_case_list;
extern const op_invalid_list gdn_gating_invalid_list;
extern const op_case_list linear_case_list;
extern const op_invalid_list linear_invalid_list;
extern const op_case_list matmul_case_list;
extern const op_invalid_list matmul_invalid_list;
extern const op_case_list embedding_case_list;
extern const op_invalid_list embedding_invalid_list;
extern const op_case_list add_case_list;
extern const op_invalid_list add_invalid_list;
extern const op_case_list sigmoid_gate_case_list;
extern const op_invalid_list sigmoid_gate_invalid_list;
extern const op_case_list concat_case_list;
extern const op_invalid_list concat_invalid_list;
extern const op_case_list split_case_list;
extern const op_invalid_list split_invalid_list;
extern const op_case_list broadcast_heads_case_list;
extern const op_invalid_list broadcast_heads_invalid_list;
extern const op_case_list rotary_case_list;
extern const op_invalid_list rotary_invalid_list;
extern const op_case_list swiglu_case_list;
extern const op_invalid_list swiglu_invalid_list;
extern const op_case_list rms_norm_gated_case_list;
extern const op_invalid_list rms_norm_gated_invalid_list;
extern const op_case_list moe_router_case_list;
extern const op_invalid_list moe_router_invalid_list;
extern const op_case_list moe_experts_case_list;
extern const op_case_list moe_experts_gpu_case_list; // test_moe_experts_gpu.c only (grouped backends' rows)
extern const op_invalid_list moe_experts_invalid_list;
extern const op_case_list load_balancing_loss_case_list;
extern const op_invalid_list load_balancing_loss_invalid_list;

#endif
