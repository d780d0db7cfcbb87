// bench_check.h: the correctness check of ops/testing/op_verdict.h on the inputs `parity bench op`
// times (its correctness column), and on inputs of any shape in an op's bench format (`parity check op
// --shapes`). A bench's inputs become a row of the op check engine: each slot's tensor copied to the
// host (a float one at the run's dtype, or its compute dtype where the bench holds it so), the
// attributes as the bench set them, and the engine's own cotangents.
#ifndef PARITY_BENCH_CHECK_H
#define PARITY_BENCH_CHECK_H

#include <stdint.h>

#include "harness/bench/bench_ops.h"
#include "ops/testing/op_verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_bench_check_case {
    op_check_case test_case;              // setup copies `inputs`; params point back here
    const parity_bench_inputs *inputs;    // the caller's, kept until the case's last run
    parity_bench_inputs *owned;           // made by parity_bench_check_case_for_shape (released with the case)
    char name[96];                        // "shape 16384x4096": the row's name
} parity_bench_check_case;

// A case over existing inputs (not owned).
void parity_bench_check_case_init(parity_bench_check_case *out, const parity_bench_op *op, const parity_bench_inputs *inputs,
                                  const char *name);
// A case over new inputs of `shape` (the op's bench format), made on the CPU in `dtype` (a float
// tensor's values are then exact in that dtype, so runs in it see the same numbers).
parity_error *parity_bench_check_case_for_shape(parity_bench_check_case *out, const parity_bench_op *op,
                                                const parity_bench_shape *shape, parity_dtype dtype);
void parity_bench_check_case_release(parity_bench_check_case *check_case);

// The largest tensor of the inputs, in elements (what the check's host-side work grows with).
int64_t parity_bench_check_largest(const parity_bench_op *op, const parity_bench_inputs *inputs);

#ifdef __cplusplus
}
#endif
#endif
