// timer_cuda_without_cuda.c: CUDA-event timing in a CPU-only build: no such clock (left out of CUDA
// builds, which use timer_cuda.cu).
#include "harness/timer.h"

parity_error *parity_timer_cuda_events(const parity_exec *exec, parity_timer *out) {
    *out = parity_timer_wall_clock(exec->device);
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "CUDA-event timing: parity was built without CUDA");
}
