// flex_attention.cu: value "flex_attention" on cuda: attention driven by the model's block mask
// (block_mask.h, the seed's "native BlockMask"): each query tile walks the key blocks its mask row
// lists (partial blocks masked element by element with the mask_mod, full blocks unmasked, every other
// block skipped), and the dk/dv backward walks the transposed lists. A call without a mask is an
// error: the harness never invents visibility. bf16 runs on the tensor-core engine of flash/ with its
// block-mask schedule (blocks multiples of 128 tokens, torch's default BLOCK_SIZE; head sizes as
// flash_attention_2's). f32 and f64 run on sdpa's CUDA-core kernels driven by the same lists
// (attention_cuda_core.h: blocks multiples of 32 tokens for f32, 16 for f64; head sizes up to 256).
// Neither backward has atomics (deterministic).
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

parity_error *flex_attention_forward(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved) {
    if (on_cuda_cores(args)) return parity_attention_cuda_core_forward(exec, args, saved, true, "flex_attention");
    return parity_flash_attention_forward(exec, args, saved, true, "flex_attention");
}

parity_error *flex_attention_backward(const parity_exec *exec, const parity_attention_args *args, const parity_saved *saved,
                                      const parity_attention_grads *grads) {
    if (on_cuda_cores(args)) return parity_attention_cuda_core_backward(exec, args, saved, grads, true, "flex_attention");
    return parity_flash_attention_backward(exec, args, saved, grads, true, "flex_attention");
}

const parity_attention_kernels flex_attention_kernels = {flex_attention_forward, flex_attention_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(attention, flex_attention, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ATTENTION;
    backend.name = "flex_attention";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_DTYPE_BIT(PARITY_BF16) | PARITY_DTYPE_BIT(PARITY_F32) | PARITY_DTYPE_BIT(PARITY_F64);
    backend.min_compute_capability = 80; // mma.sync with bf16 operands
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_BLOCK_MASK;
    backend.kernels = &flex_attention_kernels;
    backend.description = "attention on the model's block mask (empty blocks skipped, full blocks unmasked, partial "
                          "blocks masked by its mask_mod), deterministic backward: bf16 on the tensor-core engine; "
                          "f32/f64 on CUDA cores, same algorithm, same tiles as sdpa's";
    return parity_registry_add(&backend);
}
