// flash_attention_2.cu: value "flash_attention_2" on cuda: the FlashAttention-2 algorithm (tiled
// online softmax with f32 accumulation, forward with log-sum-exp, backward with recomputation). bf16
// runs on tensor cores (the engine of flash/: mma.sync bf16 with f32 accumulation) on the documents
// schedule: varlen through cu_seqlens (a tile never straddles a document), GQA/MQA without repeating
// k/v, causal, sliding window, head sizes 64, 96, 128, 192 (v 128 or 192) and 256 (a bf16 call with
// another head size is UNSUPPORTED). f32 and f64 run on CUDA cores (attention_cuda_core.h, since the
// tensor cores here take bf16): the same algorithm, the same kernels and tiles as sdpa's (32 tokens
// for f32, 16 for f64; f64 accumulation for f64), head sizes up to 256. Neither backward has atomics,
// so it is always the deterministic mode.
#include "ops/attention/flash/flash.h"

extern "C" {
#include "ops/attention/attention_cuda_core.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

// f32 and f64 run on CUDA cores; bf16 (and any other dtype, which the engine refuses by name) on tensor cores.
bool on_cuda_cores(const parity_attention_args *args) {
    return args->query && (args->query->dtype == PARITY_F32 || args->query->dtype == PARITY_F64);
}

parity_error *flash_attention_2_forward(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved) {
    if (on_cuda_cores(args)) return parity_attention_cuda_core_forward(exec, args, saved, false, "flash_attention_2");
    return parity_flash_attention_forward(exec, args, saved, false, "flash_attention_2");
}

parity_error *flash_attention_2_backward(const parity_exec *exec, const parity_attention_args *args, const parity_saved *saved,
                                         const parity_attention_grads *grads) {
    if (on_cuda_cores(args))
        return parity_attention_cuda_core_backward(exec, args, saved, grads, false, "flash_attention_2");
    return parity_flash_attention_backward(exec, args, saved, grads, false, "flash_attention_2");
}

const parity_attention_kernels flash_attention_2_kernels = {flash_attention_2_forward, flash_attention_2_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(attention, flash_attention_2, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ATTENTION;
    backend.name = "flash_attention_2";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_DTYPE_BIT(PARITY_BF16) | PARITY_DTYPE_BIT(PARITY_F32) | PARITY_DTYPE_BIT(PARITY_F64);
    backend.min_compute_capability = 80; // mma.sync with bf16 operands
    // deterministic: no atomics, one owner per output element, fixed tile and sum orders
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_DETERMINISTIC;
    backend.kernels = &flash_attention_2_kernels;
    backend.description = "FlashAttention-2 (tiled online softmax, lse saved, recomputing deterministic backward), "
                          "varlen/GQA/causal/window: bf16 on tensor cores (mma.sync, f32 accumulate), head sizes 64-256 "
                          "and 192+128; f32/f64 on CUDA cores, same algorithm, same tiles as sdpa's, head sizes up to 256";
    return parity_registry_add(&backend);
}
