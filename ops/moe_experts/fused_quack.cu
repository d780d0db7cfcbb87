// fused_quack.cu: value "fused_quack" of moe_experts on cuda: fused_triton's contract (same
// dispatch, same roundings, same saved tensors) with all six grouped GEMMs on SM90: TMA-fed wgmma
// with a persistent tile scheduler (grouped/sm90_gemm.h), bf16, f32 accumulation. SM90 only
// (min_compute_capability 90; the kernels are built for sm_90a). No expert parallelism (the seed's
// table: "no EP"), reported by leaving PARITY_CAP_EXPERT_PARALLEL unset.
//   dispatch   stable counting sort by expert (grouped/dispatch.h, fused_triton's)
//   gather     x_sorted (R, H) = hidden[permuted_rows / K]  (TMA loads boxes, it cannot gather rows)
//   gate_up    wgmma GEMM x_sorted W_e^T, SwiGLU in the epilogue: gate_up (R, 2I), h (R, I)
//   down       wgmma GEMM y (R, H) = h D_e^T
//   combine    output[t] = bf16(sum_k w[t, k] y[p(t, k)]) (dispatch.h)
// Backward:
//   dy, drouting_weights   moe_combine_backward (dispatch.h)
//   dgate_up   wgmma GEMM dh = dy (D_e^T)^T with D_e^T = down_proj[e]^T (E, I, H) transposed once
//              per call into scratch (E H I elements), SwiGLU backward in the epilogue
//   dx         wgmma GEMM dgate_up (W_e^T)^T with W_e^T (E, H, 2I) transposed likewise
//   dhidden    moe_dispatch_backward (dispatch.h)
//   ddown_proj[e] = dy_e^T h_e, dgate_up_proj[e] = dgate_up_e^T x_e: wgmma k-grouped GEMMs over the
//              experts' rows; both operands are first transposed into scratch with every expert's
//              rows padded with zeros to a multiple of 128 (sm90_gemm_weight_grad), so the same
//              K-major kernel runs them (x gathered through the sort inside that transpose)
// Deterministic: no atomics, one owner per output element, fixed sum orders (the wgmma K loop runs
// in slice order). No device-to-host read. H and I must be multiples of 8 (16-byte TMA strides);
// otherwise UNSUPPORTED with the same message as fused_triton's.
#include <stdio.h>

#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/moe_experts/grouped/dispatch.h"
#include "ops/moe_experts/grouped/fused_common.cuh"
#include "ops/moe_experts/grouped/sm90_gemm.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/registry.h"
}

using namespace parity_cuda;
using namespace parity_moe;
using bf16 = __nv_bfloat16;

namespace {

// The contract's checks, then what this backend needs: every tensor on the call's CUDA device, bf16,
// a device of compute capability 9.0 (sm_90a code only), H and I multiples of 8, 16-byte aligned
// GEMM operands.
parity_error *check_call(const parity_moe_experts_args *args, parity_moe_experts_sizes *sizes) {
    PARITY_TRY(fused_check_call("fused_quack", args, sizes));
    parity_device device = args->hidden->device;
    int major = 0, minor = 0;
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index));
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device.index));
    PARITY_CHECK(major == 9 && minor == 0, PARITY_ERROR_UNSUPPORTED,
                 "moe_experts: fused_quack is built for sm_90a (wgmma, TMA) and runs on compute capability 9.0 only, got %d.%d",
                 major, minor);
    return NULL;
}

parity_error *moe_experts_fused_quack_forward(const parity_exec *exec, const parity_moe_experts_args *args,
                                              parity_saved *saved) {
    parity_moe_experts_sizes s;
    PARITY_TRY(check_call(args, &s));
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

    scoped_tensor counts, bases, x_sorted; // (chunks, E + 1) each; (R, H)
    int64_t chunks = dispatch_chunks(R);
    PARITY_TRY(counts.alloc_1d(PARITY_I32, device, chunks * (E + 1)));
    PARITY_TRY(bases.alloc_1d(PARITY_I64, device, chunks * (E + 1)));
    PARITY_TRY(x_sorted.alloc_1d(PARITY_BF16, device, R * H));
    dispatch_plan plan = {data_of<int64_t>(offsets), data_of<int64_t>(tiles), data_of<int64_t>(permuted),
                          data_of<int64_t>(position)};
    PARITY_TRY(moe_dispatch(data_of<const int64_t>(args->expert_indices), R, (int)E, kGroupTileRows, counts.data<int>(),
                            bases.data<int64_t>(), plan, stream));
    grouped_rows g = rows_of(s, offsets, tiles);
    PARITY_TRY(sm90_gather_rows(bf16_of(args->hidden), plan.permuted_rows, K, R, H, x_sorted.data<bf16>(), stream));
    PARITY_TRY(sm90_gemm_gate_up_swiglu(g, x_sorted.data<bf16>(), bf16_of(args->gate_up_proj), H, I, data_of<bf16>(gate_up),
                                        data_of<bf16>(h), stream));
    PARITY_TRY(sm90_gemm_rows(g, data_of<const bf16>(h), bf16_of(args->down_proj), I, H, data_of<bf16>(y), stream));
    return moe_combine(data_of<const bf16>(y), plan.row_position, plan.expert_offsets, (int)E, args->routing_weights->data,
                       args->routing_weights->dtype, N, K, H, data_of<bf16>(args->output), stream);
}

parity_error *moe_experts_fused_quack_backward(const parity_exec *exec, const parity_moe_experts_args *args,
                                               const parity_saved *saved, const parity_moe_experts_grads *grads) {
    parity_moe_experts_sizes s;
    PARITY_TRY(check_call(args, &s));
    PARITY_TRY(fused_check_grads(args, grads));
    parity_device device = args->hidden->device;
    const parity_tensor *kept[SAVED_COUNT];
    PARITY_TRY(fused_saved_tensors("fused_quack", saved, s, kept));
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
    const int64_t P = sm90_padded_rows(g); // the weight gradients' padded row count
    if (grads->ddown_proj) { // (E, H, I) = dy_e^T h_e
        scoped_tensor dy_t, h_t; // (H, P), (I, P)
        PARITY_TRY(dy_t.alloc_1d(PARITY_BF16, device, H * P));
        PARITY_TRY(h_t.alloc_1d(PARITY_BF16, device, I * P));
        PARITY_TRY(sm90_gemm_weight_grad(g, dy.data<bf16>(), h, nullptr, 1, H, I, dy_t.data<bf16>(), h_t.data<bf16>(),
                                         data_of<bf16>(grads->ddown_proj), stream));
    }
    if (!grads->dgate_up_proj && !grads->dhidden) return NULL;
    scoped_tensor down_t, dgate_up; // (E, I, H); (R, 2I) sorted
    PARITY_TRY(down_t.alloc_1d(PARITY_BF16, device, E * I * H));
    PARITY_TRY(dgate_up.alloc_1d(PARITY_BF16, device, R * 2 * I));
    PARITY_TRY(sm90_transpose_experts(bf16_of(args->down_proj), E, H, I, down_t.data<bf16>(), stream));
    PARITY_TRY(sm90_gemm_down_dgrad_swiglu(g, dy.data<bf16>(), down_t.data<bf16>(), H, I, gate_up, dgate_up.data<bf16>(),
                                           stream));
    if (grads->dgate_up_proj) { // (E, 2I, H) = dgate_up_e^T x_e, x gathered through the sort
        scoped_tensor dgate_up_t, x_t; // (2I, P), (H, P)
        PARITY_TRY(dgate_up_t.alloc_1d(PARITY_BF16, device, 2 * I * P));
        PARITY_TRY(x_t.alloc_1d(PARITY_BF16, device, H * P));
        PARITY_TRY(sm90_gemm_weight_grad(g, dgate_up.data<bf16>(), bf16_of(args->hidden), permuted, K, 2 * I, H,
                                         dgate_up_t.data<bf16>(), x_t.data<bf16>(), data_of<bf16>(grads->dgate_up_proj),
                                         stream));
    }
    if (!grads->dhidden) return NULL;
    scoped_tensor gate_up_t, dx; // (E, H, 2I); (R, H) sorted
    PARITY_TRY(gate_up_t.alloc_1d(PARITY_BF16, device, E * H * 2 * I));
    PARITY_TRY(dx.alloc_1d(PARITY_BF16, device, R * H));
    PARITY_TRY(sm90_transpose_experts(bf16_of(args->gate_up_proj), E, 2 * I, H, gate_up_t.data<bf16>(), stream));
    PARITY_TRY(sm90_gemm_rows(g, dgate_up.data<bf16>(), gate_up_t.data<bf16>(), 2 * I, H, dx.data<bf16>(), stream));
    return moe_dispatch_backward(dx.data<bf16>(), position, g.expert_offsets, (int)E, N, K, H, data_of<bf16>(grads->dhidden),
                                 stream);
}

extern const parity_moe_experts_kernels moe_experts_fused_quack_kernels;

// The gate_up part (moe_experts.h): prepare also gathers x into sorted order (the forward's step
// before its GEMM; torch's grouped_mm peer is timed on rows already sorted too); run is the TMA +
// wgmma GEMM with the SwiGLU epilogue.
parity_error *fused_quack_part_prepare(const parity_exec *exec, const parity_moe_experts_args *args,
                                       parity_moe_experts_part **out) {
    PARITY_TRY(fused_part_prepare("fused_quack", exec, args, check_call, &moe_experts_fused_quack_kernels, out));
    parity_moe_experts_part *part = *out;
    const int64_t R = part->sizes.tokens * part->sizes.top_k, H = part->sizes.hidden;
    parity_error *error = part->x_sorted.alloc_1d(PARITY_BF16, args->hidden->device, R * H);
    if (!error)
        error = sm90_gather_rows(bf16_of(args->hidden), data_of<const int64_t>(part->kept[SAVED_PERMUTED]), part->sizes.top_k,
                                 R, H, part->x_sorted.data<bf16>(), parity_cuda_stream(exec));
    if (error) {
        fused_part_release(part);
        *out = nullptr;
    }
    return error;
}

parity_error *fused_quack_part_run(const parity_exec *exec, parity_moe_experts_part *part) {
    const parity_moe_experts_sizes &s = part->sizes;
    grouped_rows g = rows_of(s, part->kept[SAVED_OFFSETS], part->kept[SAVED_TILES]);
    return sm90_gemm_gate_up_swiglu(g, part->x_sorted.data<bf16>(), bf16_of(part->args.gate_up_proj), s.hidden,
                                    s.intermediate, data_of<bf16>(part->kept[SAVED_GATE_UP]),
                                    data_of<bf16>(part->kept[SAVED_H]), parity_cuda_stream(exec));
}

const parity_moe_experts_part_kernels fused_quack_gate_up_part = {fused_quack_part_prepare, fused_quack_part_run,
                                                                  fused_part_release};

const parity_moe_experts_kernels moe_experts_fused_quack_kernels = {
    moe_experts_fused_quack_forward, moe_experts_fused_quack_backward, &fused_quack_gate_up_part};

} // namespace

PARITY_BACKEND_REGISTRATION(moe_experts, fused_quack, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_MOE_EXPERTS;
    backend.name = "fused_quack";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_DTYPE_BIT(PARITY_BF16);
    backend.min_compute_capability = 90; // TMA + wgmma, built for sm_90a
    // deterministic: no atomics on floats, one owner per output element, fixed sum orders. No expert
    // parallelism (the seed's table: "no EP"): PARITY_CAP_EXPERT_PARALLEL stays unset.
    backend.capabilities = PARITY_CAP_DETERMINISTIC;
    backend.kernels = &moe_experts_fused_quack_kernels;
    backend.description = "fused MoE experts on SM90, no EP: stable counting-sort dispatch, every grouped GEMM on TMA-fed "
                          "wgmma with a persistent tile scheduler (f32 accumulate): gate_up (SwiGLU fused), down, down "
                          "dgrad (SwiGLU backward fused), dx and both weight gradients; weighted combine; bf16, H and I "
                          "multiples of 8";
    return parity_registry_add(&backend);
}
