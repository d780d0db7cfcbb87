// invalid_call.h: scratch tensors for invalid-call rows (op_cases.h), so each row is only the call
// it makes: allocate zero-filled CPU tensors, resolve the eager kernels, call, release everything.
//   invalid_call scratch = {0};
//   parity_tensor *x = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(4, 8));
//   const parity_linear_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_LINEAR);
//   if (!scratch.error) scratch.error = kernels->forward(op_check_cpu_exec(), &args, &scratch.saved);
//   return invalid_call_finish(&scratch);
#ifndef PARITY_INVALID_CALL_H
#define PARITY_INVALID_CALL_H

#include "ops/core/saved.h"
#include "ops/core/tensor.h"

#define INVALID_CALL_MAX_TENSORS 8

typedef struct invalid_call {
    parity_tensor tensors[INVALID_CALL_MAX_TENSORS];
    int count;
    parity_saved saved;
    parity_error *error; // the first setup error, then the call's result
} invalid_call;

// A zero-filled CPU tensor owned by the scratch (a valid empty tensor after a setup error).
parity_tensor *invalid_call_tensor(invalid_call *scratch, parity_dtype dtype, int ndim, const int64_t *shape);
// The eager CPU kernel table of `op` (NULL with scratch->error set when it is not registered).
const void *invalid_call_kernels(invalid_call *scratch, const char *op);
// Releases every tensor and returns the error (setup or call).
parity_error *invalid_call_finish(invalid_call *scratch);

#endif
