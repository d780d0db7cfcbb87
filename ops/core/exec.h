// exec.h: the execution context of a step: the device, the stream every kernel, GEMM and
// stream-ordered copy of the step is queued on, and what the step's kernels make on demand (a
// scratch buffer on each side, the cuBLAS handle bound to the stream, a second context with its own
// stream for communication). Every op's forward and backward and every CUDA launcher takes one
// (`const parity_exec *exec`, first argument), as llm.c's launchers take a stream; whoever runs a
// step creates it (the harness per device and run, `parity bench` once, the tests per device).
//
// The CUDA stream is made with cudaStreamCreate: a blocking stream, ordered with the legacy default
// stream. So the synchronous copies, memsets and allocations that still run there (parity_tensor_to,
// parity_tensor_zeros, ...) stay ordered with the step's kernels, by construction. A NULL exec stands
// for that legacy default stream (parity_exec_stream(NULL) == NULL): only code outside a step passes
// one (weights being loaded or converted, a test preparing inputs). On the CPU the stream is NULL and
// the work is synchronous.
//
// An exec is used by one thread at a time; the on-demand parts are made lazily behind the const
// pointer the kernels receive.
#ifndef PARITY_EXEC_H
#define PARITY_EXEC_H

#include <stddef.h>

#include "ops/core/device.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_exec_resources parity_exec_resources;

typedef struct parity_exec {
    parity_device device;
    void *stream;                     // cudaStream_t of the step; NULL on the cpu
    parity_exec_resources *resources; // scratch, cuBLAS handle, communication context (exec.c)
} parity_exec;

// A context for `device`: on cuda:N a new blocking stream on that device (UNAVAILABLE error when the
// device is absent or parity was built without CUDA); on the cpu no stream.
parity_error *parity_exec_create(parity_device device, parity_exec **out);
// Waits for the context's queued work, then frees its stream, scratch, cuBLAS handle and
// communication context. NULL is a no-op.
void parity_exec_destroy(parity_exec *exec);
// Returns once everything queued on the stream so far has finished (cpu: at once).
parity_error *parity_exec_synchronize(const parity_exec *exec);

// The stream to launch on (a cudaStream_t): exec->stream, or NULL (the legacy default stream) for a
// NULL exec.
void *parity_exec_stream(const parity_exec *exec);

// A buffer of at least `bytes` on the context's device (host memory on the cpu), owned by the
// context and reused by the next call: valid until the next parity_exec_device_scratch call on this
// context, and only for work queued on its stream (stream order is what makes the reuse safe).
// Growing waits for the stream first, so no queued kernel still reads the old buffer.
parity_error *parity_exec_device_scratch(const parity_exec *exec, size_t bytes, void **out);
// The same on the host, page-locked on a CUDA context (so a cudaMemcpyAsync into it is really
// asynchronous: synchronize the stream before reading it).
parity_error *parity_exec_host_scratch(const parity_exec *exec, size_t bytes, void **out);

// The cuBLAS handle (a cublasHandle_t) of a CUDA context, bound to its stream with parity's math
// mode (ops/core/cuda/blas.h), created on first use. USAGE error on a cpu context.
parity_error *parity_exec_blas_handle(const parity_exec *exec, void **out);

// The communication context: the same device with a second stream of its own (and its own scratch
// and cuBLAS handle), created on first use and destroyed with `exec`. Work queued there overlaps
// the step's unless ordered with parity_exec_wait. On the cpu a second cpu context.
parity_error *parity_exec_comm(const parity_exec *exec, const parity_exec **out);
// That context's stream (a cudaStream_t; NULL on the cpu), for calls that take a raw stream.
parity_error *parity_exec_comm_stream(const parity_exec *exec, void **out);
// Work queued on `waiter` after this call starts only once everything queued on `producer` before it
// has finished (a CUDA event recorded on producer's stream, waited for on waiter's). Both contexts
// on one device; nothing to do on the cpu.
parity_error *parity_exec_wait(const parity_exec *waiter, const parity_exec *producer);

#ifdef __cplusplus
}
#endif
#endif
