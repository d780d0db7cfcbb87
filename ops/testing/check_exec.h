// check_exec.h: the execution contexts the op check engine (op_check.h) hands to kernels, one per
// device for the process (created on first use, kept until the process ends), so a check that calls
// a backend passes the same kind of context a model step does. Used by `parity check op`, `parity
// bench op`'s correctness column and the tests (suites/tests/exec_fixture.h wraps it).
#ifndef PARITY_OP_CHECK_EXEC_H
#define PARITY_OP_CHECK_EXEC_H

#include "ops/core/error.h"
#include "ops/core/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

// The context of `device` (cpu or cuda:N); UNAVAILABLE error for a device that cannot have one
// (absent GPU, CPU-only build), USAGE error for a device index beyond what is kept.
parity_error *op_check_exec(parity_device device, const parity_exec **out);

// The CPU context, for the invalid-call rows (ops/testing/invalid_call.h) that call a CPU kernel
// directly. Making a CPU context fails only when memory runs out; then this aborts with a message
// (these rows run only inside the test program).
const parity_exec *op_check_cpu_exec(void);

#ifdef __cplusplus
}
#endif

#endif
