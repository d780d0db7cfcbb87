// fused_triton.cu: value "fused_triton" of moe_experts on cuda: the fused-MoE algorithm of VeOmni's
// Triton group GEMM as parity's own CUDA, bf16 on tensor cores (SM80+, mma.sync, f32 accumulation):
//   dispatch   stable counting sort of the N K (token, slot) rows by expert (grouped/dispatch.h)
//   gate_up    one grouped GEMM over every expert's rows, x gathered through the sort, SwiGLU in its
//              epilogue: gate_up (R, 2I) and h = bf16(silu(gate) up) (R, I), gate and up rounded to
//              bf16 first (what is saved is what h used)
//   down       one grouped GEMM: y (R, H) in sorted order
//   combine    output[t] = bf16(sum_k w[t, k] y[p(t, k)]) in f32, k in order
// Saved for backward: expert_offsets, tile_offsets, permuted_rows, row_position, gate_up, h, y.
// Backward (every gradient may be NULL; its work is skipped):
//   dy[p] = bf16(doutput[t] w[t, k]), dw[t, k] = sum_h doutput[t, h] y[p, h] (f32, one warp a row)
//   dgate_up = SwiGLU backward of dh = dy D_e (the dgrad GEMM's epilogue; dh stays f32)
//   ddown_proj[e] = dy_e^T h_e, dgate_up_proj[e] = dgate_up_e^T x_e   (k-grouped GEMMs)
//   dx = dgate_up W_e (row-grouped), dhidden[t] = bf16(sum_k dx[p(t, k)])
// Fewer roundings than eager (which rounds gate_up, silu, the product, y, y w and the output after
// every add): f32 between the GEMMs' accumulators and each stored tensor. No atomics, one owner per
// output element, fixed sum orders: deterministic. No host loop over experts and no device-to-host
// read: the grids cover the worst case and empty tiles exit. Not expert-parallel yet (issue 14,
// point 3: the dispatch and combine are split out for the all-to-all that will go between).
// H and I must be multiples of 8 (16-byte cp.async rows): otherwise UNSUPPORTED.
#include <stdio.h>

#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/moe_experts/grouped/dispatch.h"
#include "ops/moe_experts/grouped/fused_common.cuh"
#include "ops/moe_experts/grouped/grouped_gemm.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/registry.h"
}

using namespace parity_cuda;
using namespace parity_moe;
using bf16 = __nv_bfloat16;

namespace {

parity_error *moe_experts_fused_triton_forward(const parity_exec *exec, const parity_moe_experts_args *args,
                                               parity_saved *saved) {
    parity_moe_experts_sizes s;
    PARITY_TRY(fused_check_call("fused_triton", args, &s));
    const int64_t N = s.tokens, H = s.hidden, E = s.experts, I = s.intermediate, K = s.top_k, R = N * K;
    parity_device device = args->hidden->device;
    cudaStream_t stream = parity_cuda_stream(exec);
    parity_tensor *offsets, *tiles, *permuted, *position, *gate_up, *h, *y;
    PARITY_TRY(parity_saved_alloc(saved, &offsets, PARITY_I64, device, PARITY_CUDA_SHAPE(E + 1)));
    PARITY_TRY(parity_saved_alloc(saved, &tiles, PARITY_I64, device, PARITY_CUDA_SHAPE(E + 1)));
    PARITY_TRY(parity_saved_alloc(saved, &permuted, PARITY_I64, device, PARITY_CUDA_SHAPE(R)));       // (R)
    PARITY_TRY(parity_saved_alloc(saved, &position, PARITY_I64, device, PARITY_CUDA_SHAPE(R)));       // (R)
    PARITY_TRY(parity_saved_alloc(saved, &gate_up, PARITY_BF16, device, PARITY_CUDA_SHAPE(R, 2 * I))); // (R, 2I)
    PARITY_TRY(parity_saved_alloc(saved, &h, PARITY_BF16, device, PARITY_CUDA_SHAPE(R, I)));           // (R, I)
    PARITY_TRY(parity_saved_alloc(saved, &y, PARITY_BF16, device, PARITY_CUDA_SHAPE(R, H)));           // (R, H)

    scoped_tensor counts, bases; // (chunks, E + 1) each
    int64_t chunks = dispatch_chunks(R);
    PARITY_TRY(counts.alloc_1d(PARITY_I32, device, chunks * (E + 1)));
    PARITY_TRY(bases.alloc_1d(PARITY_I64, device, chunks * (E + 1)));
    dispatch_plan plan = {data_of<int64_t>(offsets), data_of<int64_t>(tiles), data_of<int64_t>(permuted),
                          data_of<int64_t>(position)};
    PARITY_TRY(moe_dispatch(data_of<const int64_t>(args->expert_indices), R, (int)E, kGroupTileRows, counts.data<int>(),
                            bases.data<int64_t>(), plan, stream));
    grouped_rows g = rows_of(s, offsets, tiles);
    PARITY_TRY(moe_gemm_gate_up_swiglu(g, bf16_of(args->hidden), plan.permuted_rows, K, bf16_of(args->gate_up_proj), H, I,
                                       data_of<bf16>(gate_up), data_of<bf16>(h), stream));
    PARITY_TRY(moe_gemm_rows(g, data_of<const bf16>(h), bf16_of(args->down_proj), false, I, H, data_of<bf16>(y), stream));
    return moe_combine(data_of<const bf16>(y), plan.row_position, plan.expert_offsets, (int)E, args->routing_weights->data,
                       args->routing_weights->dtype, N, K, H, data_of<bf16>(args->output), stream);
}

parity_error *moe_experts_fused_triton_backward(const parity_exec *exec, const parity_moe_experts_args *args,
                                                const parity_saved *saved, const parity_moe_experts_grads *grads) {
    parity_moe_experts_sizes s;
    PARITY_TRY(fused_check_call("fused_triton", args, &s));
    PARITY_TRY(fused_check_grads(args, grads));
    parity_device device = args->hidden->device;
    const parity_tensor *kept[SAVED_COUNT];
    PARITY_TRY(fused_saved_tensors("fused_triton", saved, s, kept));
    const int64_t N = s.tokens, H = s.hidden, E = s.experts, I = s.intermediate, K = s.top_k, R = N * K;
    cudaStream_t stream = parity_cuda_stream(exec);
    grouped_rows g = rows_of(s, kept[SAVED_OFFSETS], kept[SAVED_TILES]);
    const int64_t *permuted = data_of<const int64_t>(kept[SAVED_PERMUTED]), *position = data_of<const int64_t>(kept[SAVED_POSITION]);
    const bf16 *gate_up = bf16_of(kept[SAVED_GATE_UP]), *h = bf16_of(kept[SAVED_H]), *y = bf16_of(kept[SAVED_Y]);
    const bool weights_path = grads->ddown_proj || grads->dgate_up_proj || grads->dhidden;

    scoped_tensor dy; // (R, H) sorted
    PARITY_TRY(dy.alloc_1d(PARITY_BF16, device, R * H));
    if (weights_path || grads->drouting_weights)
        PARITY_TRY(moe_combine_backward(bf16_of(grads->doutput), y, position, g.expert_offsets, (int)E,
                                        args->routing_weights->data, data_of<void>(grads->drouting_weights),
                                        args->routing_weights->dtype, N, K, H, dy.data<bf16>(), stream));
    if (grads->ddown_proj) // (E, H, I) = dy_e^T h_e
        PARITY_TRY(moe_gemm_weight_grad(g, dy.data<bf16>(), h, nullptr, 1, H, I, data_of<bf16>(grads->ddown_proj), stream));
    if (!grads->dgate_up_proj && !grads->dhidden) return NULL;
    scoped_tensor dgate_up; // (R, 2I) sorted
    PARITY_TRY(dgate_up.alloc_1d(PARITY_BF16, device, R * 2 * I));
    PARITY_TRY(moe_gemm_down_dgrad_swiglu(g, dy.data<bf16>(), bf16_of(args->down_proj), H, I, gate_up, dgate_up.data<bf16>(),
                                          stream));
    if (grads->dgate_up_proj) // (E, 2I, H) = dgate_up_e^T x_e, x gathered through the sort
        PARITY_TRY(moe_gemm_weight_grad(g, dgate_up.data<bf16>(), bf16_of(args->hidden), permuted, K, 2 * I, H,
                                        data_of<bf16>(grads->dgate_up_proj), stream));
    if (!grads->dhidden) return NULL;
    scoped_tensor dx; // (R, H) sorted
    PARITY_TRY(dx.alloc_1d(PARITY_BF16, device, R * H));
    PARITY_TRY(moe_gemm_rows(g, dgate_up.data<bf16>(), bf16_of(args->gate_up_proj), true, 2 * I, H, dx.data<bf16>(), stream));
    return moe_dispatch_backward(dx.data<bf16>(), position, g.expert_offsets, (int)E, N, K, H, data_of<bf16>(grads->dhidden),
                                 stream);
}

extern const parity_moe_experts_kernels moe_experts_fused_triton_kernels;

// The gate_up part (moe_experts.h): x is gathered through the sort inside the GEMM, as in the forward.
parity_error *fused_triton_part_prepare(const parity_exec *exec, const parity_moe_experts_args *args,
                                        parity_moe_experts_part **part) {
    auto check = [](const parity_moe_experts_args *call, parity_moe_experts_sizes *sizes) {
        return fused_check_call("fused_triton", call, sizes);
    };
    return fused_part_prepare("fused_triton", exec, args, check, &moe_experts_fused_triton_kernels, part);
}

parity_error *fused_triton_part_run(const parity_exec *exec, parity_moe_experts_part *part) {
    const parity_moe_experts_sizes &s = part->sizes;
    grouped_rows g = rows_of(s, part->kept[SAVED_OFFSETS], part->kept[SAVED_TILES]);
    return moe_gemm_gate_up_swiglu(g, bf16_of(part->args.hidden), data_of<const int64_t>(part->kept[SAVED_PERMUTED]),
                                   s.top_k, bf16_of(part->args.gate_up_proj), s.hidden, s.intermediate,
                                   data_of<bf16>(part->kept[SAVED_GATE_UP]), data_of<bf16>(part->kept[SAVED_H]),
                                   parity_cuda_stream(exec));
}

const parity_moe_experts_part_kernels fused_triton_gate_up_part = {fused_triton_part_prepare, fused_triton_part_run,
                                                                   fused_part_release};

const parity_moe_experts_kernels moe_experts_fused_triton_kernels = {
    moe_experts_fused_triton_forward, moe_experts_fused_triton_backward, &fused_triton_gate_up_part};

} // namespace

PARITY_BACKEND_REGISTRATION(moe_experts, fused_triton, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_MOE_EXPERTS;
    backend.name = "fused_triton";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_DTYPE_BIT(PARITY_BF16);
    backend.min_compute_capability = 80; // mma.sync with bf16 operands, cp.async
    // deterministic: no atomics on floats, one owner per output element, fixed sum orders. No
    // PARITY_CAP_EXPERT_PARALLEL until the all-to-all between dispatch and combine exists.
    backend.capabilities = PARITY_CAP_DETERMINISTIC;
    backend.kernels = &moe_experts_fused_triton_kernels;
    backend.description = "fused MoE experts: stable counting-sort dispatch, grouped GEMMs on tensor cores (mma.sync, f32 "
                          "accumulate) with SwiGLU fused into the gate_up epilogue and its backward into the down dgrad, "
                          "weighted combine; bf16, H and I multiples of 8";
    return parity_registry_add(&backend);
}
