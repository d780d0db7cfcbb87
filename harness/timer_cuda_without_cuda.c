// timer_cuda_without_cuda.c: CUDA-event timing in a CPU-only build: no such clock (left out of CUDA
// builds, which use timer_cuda.cu).
#include "harness/timer.h"

parity_error *parity_timer_cuda_events(parity_device device, parity_timer *out) {
    *out = parity_timer_wall_clock(device);
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "CUDA-event timing: parity was built without CUDA");
}
