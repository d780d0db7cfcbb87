// fused_common.cuh: what the two fused MoE experts backends (fused_triton.cu, fused_quack.cu) share on
// the host: their checks of a call (the contract's, then every tensor on the call's CUDA device, bf16,
// H and I multiples of 8, at most 6000 experts, 16-byte aligned GEMM operands), of the gradients, the
// layout of what the forward saves and the views the kernels take. For .cu files only.
#ifndef PARITY_MOE_GROUPED_FUSED_COMMON_CUH
#define PARITY_MOE_GROUPED_FUSED_COMMON_CUH

#include <stdint.h>

#include <new>

#include "ops/core/cuda/eager_support.cuh"
#include "ops/moe_experts/grouped/grouped_gemm.h"

extern "C" {
#include "ops/moe_experts/moe_experts.h"
}

namespace parity_moe {

// The forward's saved tensors, in parity_saved order.
enum fused_saved_slot { SAVED_OFFSETS, SAVED_TILES, SAVED_PERMUTED, SAVED_POSITION, SAVED_GATE_UP, SAVED_H, SAVED_Y, SAVED_COUNT };

template <typename T> T *data_of(const parity_tensor *tensor) { return static_cast<T *>(tensor ? tensor->data : nullptr); }
inline const __nv_bfloat16 *bf16_of(const parity_tensor *tensor) { return data_of<const __nv_bfloat16>(tensor); }

inline bool aligned_16(const parity_tensor *tensor) { return !tensor || ((uintptr_t)tensor->data % 16) == 0; }

// The contract's checks, then what both fused backends need (named `backend` in the messages);
// selects the call's device.
inline parity_error *fused_check_call(const char *backend, const parity_moe_experts_args *args,
                                      parity_moe_experts_sizes *sizes) {
    PARITY_TRY(parity_moe_experts_check(args, sizes));
    parity_device device = args->hidden->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return parity_cuda_check_tensor("moe_experts", "hidden", args->hidden, parity_cuda::cuda_device(0));
    const parity_tensor *tensors[] = {args->hidden, args->gate_up_proj, args->down_proj, args->expert_indices,
                                      args->routing_weights, args->output};
    const char *names[] = {"hidden", "gate_up_proj", "down_proj", "expert_indices", "routing_weights", "output"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_cuda_check_tensor("moe_experts", names[i], tensors[i], device));
    PARITY_CHECK(args->hidden->dtype == PARITY_BF16, PARITY_ERROR_UNSUPPORTED,
                 "moe_experts: %s on cuda runs bf16 (tensor cores), got %s", backend, parity_dtype_name(args->hidden->dtype));
    PARITY_CHECK(sizes->hidden % 8 == 0 && sizes->intermediate % 8 == 0, PARITY_ERROR_UNSUPPORTED,
                 "moe_experts: %s on cuda needs hidden and intermediate sizes that are multiples of 8, got H = %lld, I = %lld",
                 backend, (long long)sizes->hidden, (long long)sizes->intermediate);
    PARITY_CHECK(sizes->experts <= 6000, PARITY_ERROR_UNSUPPORTED, "moe_experts: %s handles up to 6000 experts, got %lld",
                 backend, (long long)sizes->experts);
    PARITY_CHECK(aligned_16(args->hidden) && aligned_16(args->gate_up_proj) && aligned_16(args->down_proj),
                 PARITY_ERROR_UNSUPPORTED, "moe_experts: %s on cuda needs 16-byte aligned hidden and weights", backend);
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

// The contract's gradient checks, and every gradient on the call's device.
inline parity_error *fused_check_grads(const parity_moe_experts_args *args, const parity_moe_experts_grads *grads) {
    PARITY_TRY(parity_moe_experts_check_grads(args, grads));
    const parity_tensor *tensors[] = {grads->doutput, grads->dhidden, grads->dgate_up_proj, grads->ddown_proj,
                                      grads->drouting_weights};
    const char *names[] = {"doutput", "dhidden", "dgate_up_proj", "ddown_proj", "drouting_weights"};
    for (int i = 0; i < 5; i++)
        PARITY_TRY(parity_cuda_check_tensor("moe_experts", names[i], tensors[i], args->hidden->device));
    return NULL;
}

// The forward's saved tensors, each checked against the call.
inline parity_error *fused_saved_tensors(const char *backend, const parity_saved *saved, const parity_moe_experts_sizes &s,
                                         const parity_tensor **out) {
    const int64_t R = s.tokens * s.top_k;
    const int64_t numel[SAVED_COUNT] = {s.experts + 1, s.experts + 1, R, R, R * 2 * s.intermediate, R * s.intermediate,
                                        R * s.hidden};
    for (int i = 0; i < SAVED_COUNT; i++) {
        PARITY_TRY(parity_saved_get(saved, i, &out[i]));
        PARITY_CHECK(out[i]->numel == numel[i], PARITY_ERROR_INTERNAL,
                     "moe_experts: %s's saved tensor %d has %lld values, the call needs %lld", backend, i,
                     (long long)out[i]->numel, (long long)numel[i]);
    }
    return NULL;
}

// The grouped GEMMs' view of the sort: R rows, E experts, their row and tile offsets.
inline grouped_rows rows_of(const parity_moe_experts_sizes &s, const parity_tensor *offsets, const parity_tensor *tiles) {
    grouped_rows g;
    g.rows = s.tokens * s.top_k;
    g.experts = (int)s.experts;
    g.expert_offsets = data_of<const int64_t>(offsets);
    g.tile_offsets = data_of<const int64_t>(tiles);
    return g;
}

} // namespace parity_moe

// One backend's gate_up part (moe_experts.h): prepare runs the backend's own forward once (so the
// sort, the saved gate_up and h buffers and their views are exactly the forward's), plus the sorted
// copy of x where the backend's GEMM reads one; run launches the forward's gate_up GEMM again.
struct parity_moe_experts_part {
    parity_saved saved{};
    const parity_tensor *kept[parity_moe::SAVED_COUNT]{};
    parity_moe_experts_sizes sizes{};
    parity_moe_experts_args args{};
    parity_cuda::scoped_tensor x_sorted; // (R, H), fused_quack only
    ~parity_moe_experts_part() { parity_saved_release(&saved); }
};

namespace parity_moe {

inline void fused_part_release(parity_moe_experts_part *part) { delete part; }

// prepare's shared half: `check` (the backend's checks of the call), then its `forward` into the part.
template <typename Check>
parity_error *fused_part_prepare(const char *backend, const parity_exec *exec, const parity_moe_experts_args *args,
                                 Check check, const parity_moe_experts_kernels *kernels, parity_moe_experts_part **out) {
    *out = nullptr;
    parity_moe_experts_sizes s;
    PARITY_TRY(check(args, &s));
    parity_moe_experts_part *part = new (std::nothrow) parity_moe_experts_part();
    if (!part) return PARITY_ERROR(PARITY_ERROR_MEMORY, "moe_experts: %s's gate_up part", backend);
    part->sizes = s;
    part->args = *args;
    parity_error *error = kernels->forward(exec, args, &part->saved);
    if (!error) error = fused_saved_tensors(backend, &part->saved, s, part->kept);
    if (error) {
        delete part;
        return error;
    }
    *out = part;
    return NULL;
}

} // namespace parity_moe

#endif
