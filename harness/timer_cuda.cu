// timer_cuda.cu: CUDA-event timing of a `parity run` step (timer.h). Two events on the step's stream
// (the execution context's: every kernel of the step is queued there, and its synchronous copies on the
// legacy default stream, which that blocking stream is ordered with) bracket the step; `end` waits for
// the second and reads the elapsed device time. A step copies its loss and gradient norms to the host,
// so the events measure the whole step as the device saw it, host gaps inside the step included.
#include "ops/core/cuda/cuda_check.h"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "harness/timer.h"
}

namespace {

struct event_pair {
    cudaEvent_t start, stop;
    cudaStream_t stream; // the execution context's
};

parity_error *events_begin(parity_timer *timer) {
    event_pair *events = (event_pair *)timer->state;
    PARITY_CUDA_TRY(cudaSetDevice(timer->device.index));
    PARITY_CUDA_TRY(cudaEventRecord(events->start, events->stream));
    return NULL;
}

parity_error *events_end(parity_timer *timer, double *elapsed_ms) {
    event_pair *events = (event_pair *)timer->state;
    PARITY_CUDA_TRY(cudaSetDevice(timer->device.index));
    PARITY_CUDA_TRY(cudaEventRecord(events->stop, events->stream));
    PARITY_CUDA_TRY(cudaEventSynchronize(events->stop));
    float milliseconds = 0;
    PARITY_CUDA_TRY(cudaEventElapsedTime(&milliseconds, events->start, events->stop));
    *elapsed_ms = milliseconds;
    return NULL;
}

void events_release(parity_timer *timer) {
    event_pair *events = (event_pair *)timer->state;
    if (!events) return;
    cudaSetDevice(timer->device.index);
    if (events->start) cudaEventDestroy(events->start);
    if (events->stop) cudaEventDestroy(events->stop);
    delete events;
    timer->state = nullptr;
}

} // namespace

extern "C" parity_error *parity_timer_cuda_events(const parity_exec *exec, parity_timer *out) {
    parity_device device = exec->device;
    *out = parity_timer_wall_clock(device);
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    event_pair *events = new event_pair();
    events->stream = parity_cuda_stream(exec);
    cudaError_t status = cudaEventCreate(&events->start);
    if (status == cudaSuccess) status = cudaEventCreate(&events->stop);
    out->state = events;
    out->release = events_release;
    if (status != cudaSuccess) {
        events_release(out);
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "timer: creating CUDA events on cuda:%d: %s", device.index,
                            cudaGetErrorString(status));
    }
    out->method = "CUDA events (the step's stream)";
    out->begin = events_begin;
    out->end = events_end;
    return NULL;
}
