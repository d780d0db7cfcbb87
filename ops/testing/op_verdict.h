// op_verdict.h: one row of an op judged the way `parity check op` (harness/cli/command_check.c) and
// the correctness column of `parity bench op` judge it, ggml test-backend-ops style, with
// flash-attention's rule:
//   truth      eager in fp64 on the reference device, on the candidate's inputs (rounded to its dtype);
//   eager      eager in the candidate's dtype on the reference device (skipped in fp64: eager is the truth);
//   candidate  the backend under test, on its device, in its dtype, every tensor it writes between
//              sentinel bytes (op_check.h), outputs and gradients poisoned with NaN before each call.
// For every output and input gradient: the normalized mean squared error ||c - t||^2 / ||t||^2, the
// max error relative to the tensor's largest magnitude max|c - t| / max|t|, and the ratio of
// max|c - t| to the allowance 2 max|eager - t| + floor(dtype) max|t| (at most 2x eager's own error in
// that dtype, the floor, the op tests' (suites/tests/test_ops_gpu.c), covering an
// eager whose error is ~0: bf16 1e-3, fp32 1e-6, fp64 1e-12; in fp64 eager is the truth). The row passes
// when nothing is NaN/Inf, no sentinel was overwritten, every ratio is <= 1 and, for a backend that
// claims PARITY_CAP_DETERMINISTIC, `repeats` runs are bitwise equal. A backend that refuses the row
// (an UNSUPPORTED error, or a dtype it does not declare) is the third outcome, with its reason.
#ifndef PARITY_OP_VERDICT_H
#define PARITY_OP_VERDICT_H

#include <stdbool.h>

#include "ops/testing/op_check.h"

typedef enum op_verdict_outcome {
    OP_VERDICT_PASS,
    OP_VERDICT_FAIL,
    OP_VERDICT_UNSUPPORTED,
} op_verdict_outcome;

const char *op_verdict_outcome_name(op_verdict_outcome outcome); // "pass", "FAIL", "not supported"

typedef struct op_verdict_tensor {
    char tensor[48];           // "y" (an output), "dx" (an input's gradient)
    double nmse;               // ||c - t||^2 / ||t||^2 (NaN with NaN/Inf in c)
    double max_relative;       // max|c - t| / max|t| (max|c - t| when t is all zeros)
    double eager_max_relative; // the same for eager in the candidate's dtype (0 in fp64)
    double allowance;          // 2 max|eager - t| + floor max|t|, absolute
    double ratio;              // max|c - t| / allowance; NaN with NaN/Inf in c
} op_verdict_tensor;

typedef struct op_verdict {
    op_verdict_outcome outcome;
    char reason[320];            // FAIL: the first failure (NaN/Inf, then out-of-bounds, then ratio, then
                                 // determinism); UNSUPPORTED: the backend's reason; "" on a pass
    op_verdict_tensor tensors[OP_CHECK_MAX_TENSORS];
    int tensor_count;
    int worst;                   // index of the largest ratio (NaN counts as largest); -1 when none
    char non_finite[64];         // the first NaN/Inf element of the candidate ("dweight[3]"), or ""
    char guard_damage[128];      // the first overwritten sentinel (op_check_state.guard_damage), or ""
    int repeats;                 // runs of the candidate compared bitwise (1: not checked)
    bool deterministic;          // all `repeats` runs bitwise equal
    char differing[48];          // the first tensor that differed between runs, or ""
    bool claims_deterministic;   // the backend declares PARITY_CAP_DETERMINISTIC
} op_verdict;

typedef struct op_verdict_options {
    const char *backend;             // the backend under test (registered on `device`)
    parity_device device;            // where it runs
    parity_dtype dtype;              // its dtype (bf16, fp32, fp64)
    parity_device reference_device;  // where eager computes the truth and its own error
    int repeats;                     // candidate runs compared bitwise: 0 = 2 for a backend claiming
                                     // determinism, 1 otherwise; more to look harder
    uint64_t seed;                   // 0 = the engine's default
} op_verdict_options;

// The allowance's floor of a dtype, relative to max|truth|.
double op_verdict_floor(parity_dtype dtype);

// The two eager runs a row's candidates are judged against, made once for every backend of the row.
typedef struct op_verdict_reference {
    op_check_state truth;  // eager, fp64, inputs rounded to `dtype`
    op_check_state eager;  // eager in `dtype` (unused when dtype is fp64)
    bool with_eager;
    parity_dtype dtype;
    parity_device device;
    uint64_t seed;
} op_verdict_reference;

parity_error *op_verdict_reference_run(const op_check_case *test_case, parity_dtype dtype, parity_device device,
                                       uint64_t seed, op_verdict_reference *out);
void op_verdict_reference_release(op_verdict_reference *reference);

// Judges one row of `options.backend` against `reference` (made for the same row, dtype and seed).
// An error is a failure to judge (a device failure, a mismatched reference), never the candidate's
// numbers: those are the verdict.
parity_error *op_verdict_judge(const op_check_case *test_case, op_verdict_options options,
                               const op_verdict_reference *reference, op_verdict *verdict);

// op_verdict_reference_run + op_verdict_judge + release, for one backend.
parity_error *op_verdict_check(const op_check_case *test_case, op_verdict_options options, op_verdict *verdict);

#endif
