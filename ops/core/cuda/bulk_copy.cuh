// bulk_copy.cuh: Hopper bulk asynchronous copies (cp.async.bulk, sm_90) from global into shared
// memory, completing on an mbarrier. For .cu files only.
// Why: a memory-bound row kernel that loads a row into registers stalls its loads while it reduces
// the row; a copy engine filling the next rows' shared-memory stages keeps bytes in flight through
// the reduction without costing registers (the pipelined RMSNorm kernels of rms_norm_cuda.cu).
// Use: one thread arms a stage's barrier with the bytes to expect and issues the copies
// (global and shared addresses 16-byte aligned, sizes multiples of 16); the consumers wait on the
// barrier's phase parity, which flips once per completed fill of the stage.
#ifndef PARITY_CUDA_BULK_COPY_CUH
#define PARITY_CUDA_BULK_COPY_CUH

#include <stdint.h>

namespace parity_fused {

__device__ __forceinline__ uint32_t shared_address(const void *pointer) {
    return (uint32_t)__cvta_generic_to_shared(pointer);
}

// Barrier of one arrival per phase (the arming thread's), then the expected transaction bytes.
__device__ __forceinline__ void barrier_init(uint64_t *barrier, uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(barrier)), "r"(arrivals) : "memory");
}

// Makes the initialized barriers visible to the copy engine (the async proxy).
__device__ __forceinline__ void barrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void barrier_arrive_expect(uint64_t *barrier, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)), "r"(bytes)
                 : "memory");
}

// Blocks until the phase of parity `phase` has completed.
__device__ __forceinline__ void barrier_wait(uint64_t *barrier, uint32_t phase) {
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n"
                 "}" ::"r"(shared_address(barrier)),
                 "r"(phase)
                 : "memory");
}

// `bytes` from global `source` into shared `destination`, completing on `barrier`.
__device__ __forceinline__ void bulk_load(void *destination, const void *source, uint32_t bytes, uint64_t *barrier) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(destination)),
                 "l"(source), "r"(bytes), "r"(shared_address(barrier))
                 : "memory");
}

} // namespace parity_fused

#endif
