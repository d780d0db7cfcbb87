// fields.c: the kernel-selection vocabulary table (seeds/000, "Kernel Selection in VeOmni").
// One row per value the seed names. Target devices follow one rule so the table stays honest:
//   eager       -> cpu, cuda, and npu where the seed's NPU guidance allows eager;
//   sdpa        -> cpu, cuda;  chunk_loss -> cpu, cuda, npu;
//   npu, fused_npu, npu_ascendc -> npu;  every other optimized value -> cuda.
// Exception, a choice of ours: attention on npu accepts eager, sdpa and flash_attention_2 (the seed
// has no NPU attention table; these are the three torch_npu serves through the HF attention
// interface, and VeOmni never normalizes attention, so its GPU default must stay usable there).
#include "harness/config/fields.h"

#include <string.h>

#include "ops/registry.h"

#define CPU_CUDA (PARITY_TARGET_CPU | PARITY_TARGET_CUDA)
#define CPU_CUDA_NPU (PARITY_TARGET_CPU | PARITY_TARGET_CUDA | PARITY_TARGET_NPU)
#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

// Columns: name, targets, min SM, sequence parallel, SP facade, model restriction, description.
static const parity_kernel_value attention_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "PyTorch attention (reference)"},
    {"sdpa", CPU_CUDA_NPU, 0, false, NULL, NULL, "F.scaled_dot_product_attention"},
    {"flash_attention_2", PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, true, "veomni_flash_attention_2_with_sp", NULL,
     "Flash Attention v2 (flash-attn)"},
    {"flash_attention_3", PARITY_TARGET_CUDA, 90, true, "veomni_flash_attention_3_with_sp", NULL,
     "Flash Attention v3 (flash-attn-interface)"},
    {"flash_attention_4", PARITY_TARGET_CUDA, 0, true, "veomni_flash_attention_4_with_sp", NULL,
     "Flash Attention v4 (flash-attn.cute)"},
    {"flex_attention", PARITY_TARGET_CUDA, 0, true, "veomni_flex_attention_with_sp", NULL,
     "PyTorch FlexAttention with a model-provided native BlockMask"},
    {"native-sparse", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "Sparse attention"},
};

static const parity_kernel_value dsa_indexer_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "reference DSA indexer"},
    {"cudnn", PARITY_TARGET_CUDA, 0, false, NULL, "GLM-DSA", "cuDNN DSA indexer"},
    {"tilelang", PARITY_TARGET_CUDA, 90, false, NULL, "DeepSeek-V4",
     "TileLang indexer, packed dynamic batches"},
};

static const parity_kernel_value dsa_attention_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "reference DSA sparse attention"},
    {"flashmla_cudnn", PARITY_TARGET_CUDA, 0, false, NULL, "GLM-DSA", "FlashMLA / cuDNN sparse attention"},
    {"tilelang", PARITY_TARGET_CUDA, 90, false, NULL, "DeepSeek-V4",
     "TileLang sparse attention, packed dynamic batches"},
};

static const parity_kernel_value mhc_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "original Transformers mHC"},
    {"tilelang", PARITY_TARGET_CUDA, 90, false, NULL, "DeepSeek-V4",
     "TileKernels mHC pre/Sinkhorn/collapse, post-mix and head (tile-kernels)"},
};

static const parity_kernel_value cross_entropy_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "eager_cross_entropy (PyTorch F.cross_entropy)"},
    {"liger_kernel", PARITY_TARGET_CUDA, 0, false, NULL, NULL,
     "fused linear + cross-entropy that never holds the full logits (liger-kernel)"},
    {"chunk_loss", CPU_CUDA_NPU, 0, false, NULL, NULL, "chunked causal-LM loss (chunk_loss_function)"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL,
     "chunk_loss_function on torch_npu (ForCausalLM, ForConditionalGeneration)"},
};

static const parity_kernel_value rms_norm_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "HuggingFace default {Model}RMSNorm"},
    {"liger_kernel", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "LigerRMSNorm"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "torch_npu.npu_rms_norm"},
    {"triton", PARITY_TARGET_CUDA, 0, false, NULL, "DeepSeek-V3, per-model",
     "model-specific Triton kernel via extra_backends (batch-invariant RMSNorm)"},
};

static const parity_kernel_value swiglu_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "HuggingFace default {Model}MLP"},
    {"liger_kernel", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "LigerSwiGLUMLP"},
};

static const parity_kernel_value rotary_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "HuggingFace default apply_rotary_pos_emb"},
    {"liger_kernel", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "liger_rotary_pos_emb"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "torch_npu.npu_rotary_mul"},
    {"triton", PARITY_TARGET_CUDA, 0, false, NULL, "DeepSeek-V3, per-model",
     "model-specific Triton kernel via extra_backends (deterministic RoPE)"},
};

// Vision rotary: the seed normalizes the eager default to npu on NPU and names no NPU eager path.
static const parity_kernel_value rotary_vision_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "HuggingFace default vision rotary embedding"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "torch_npu vision rotary embedding"},
};

// Qwen3.5 GatedDeltaNet: the seed's NPU column lists only npu (and npu_ascendc); the eager
// fallbacks have no cu_seqlens path, so eager is not an NPU value for these three fields.
static const parity_kernel_value rms_norm_gated_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "HuggingFace reference Qwen3_5MoeRMSNormGated"},
    {"fla", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "flash-linear-attention FusedRMSNormGated"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "torch_npu gated RMSNorm"},
};

static const parity_kernel_value causal_conv1d_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "PyTorch causal Conv1D reference (no cu_seqlens path)"},
    {"fla", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "flash-linear-attention causal Conv1D"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "NPU causal Conv1D (torch_npu + triton-ascend)"},
};

static const parity_kernel_value gated_delta_rule_values[] = {
    {"eager", CPU_CUDA, 0, false, NULL, NULL, "torch_chunk_gated_delta_rule reference (no cu_seqlens path)"},
    // Exception to the header's rule: fla's chunked algorithm also runs on the CPU (ops/gated_delta_rule/chunked.c).
    {"fla", CPU_CUDA, 0, false, NULL, NULL, "flash-linear-attention chunk_gated_delta_rule"},
    {"flash_qla", PARITY_TARGET_CUDA, 90, false, NULL, NULL, "FlashQLA gated delta rule (SM90 only)"},
    {"npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "vendored MindSpeed-MM Triton kernel (triton-ascend)"},
    {"npu_ascendc", PARITY_TARGET_NPU, 0, false, NULL, NULL,
     "AscendC fused torch.ops.npu path (manual fla_npu install)"},
};

static const parity_kernel_value load_balancing_loss_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "pure-PyTorch reference (load_balancing_loss_pytorch)"},
    {"triton", PARITY_TARGET_CUDA, 0, false, NULL, NULL, "fused Triton kernel (CUDA only)"},
};

static const parity_kernel_value moe_values[] = {
    {"eager", CPU_CUDA_NPU, 0, false, NULL, NULL, "PyTorch expert loop (very slow, debug only)"},
    {"fused_triton", PARITY_TARGET_CUDA, 70, false, NULL, NULL, "Triton group-GEMM, expert-parallel capable"},
    {"fused_quack", PARITY_TARGET_CUDA, 90, false, NULL, NULL, "Quack CUTLASS/CuTe group-GEMM (no EP)"},
    {"fused_npu", PARITY_TARGET_NPU, 0, false, NULL, NULL, "NPU group-GEMM, expert-parallel capable"},
};

// Columns: field, alias, op, default, NPU target, NPU needs an explicit value, values.
const parity_kernel_field parity_kernel_fields[PARITY_KERNEL_FIELD_COUNT] = {
    {"attn_implementation", "attn", PARITY_OP_ATTENTION, "flash_attention_2", NULL, false, attention_values,
     COUNT(attention_values)},
    {"dsa_indexer_implementation", "dsa_indexer", PARITY_OP_DSA_INDEXER, "eager", NULL, false, dsa_indexer_values,
     COUNT(dsa_indexer_values)},
    {"dsa_attention_implementation", "dsa_attn", PARITY_OP_DSA_ATTENTION, "eager", NULL, false, dsa_attention_values,
     COUNT(dsa_attention_values)},
    {"mhc_implementation", "mhc", PARITY_OP_MHC, "eager", NULL, false, mhc_values, COUNT(mhc_values)},
    {"cross_entropy_loss_implementation", "ce", PARITY_OP_CROSS_ENTROPY, "liger_kernel", "npu", false,
     cross_entropy_values, COUNT(cross_entropy_values)},
    {"rms_norm_implementation", "rms_norm", PARITY_OP_RMS_NORM, "liger_kernel", "npu", false, rms_norm_values,
     COUNT(rms_norm_values)},
    {"swiglu_mlp_implementation", "swiglu", PARITY_OP_SWIGLU, "liger_kernel", "eager", false, swiglu_values,
     COUNT(swiglu_values)},
    {"rotary_pos_emb_implementation", "rope", PARITY_OP_ROTARY, "liger_kernel", "npu", false, rotary_values,
     COUNT(rotary_values)},
    {"rotary_pos_emb_vision_implementation", "rope_vision", PARITY_OP_ROTARY_VISION, "eager", "npu", false,
     rotary_vision_values, COUNT(rotary_vision_values)},
    {"rms_norm_gated_implementation", "rms_norm_gated", PARITY_OP_RMS_NORM_GATED, "fla", NULL, true,
     rms_norm_gated_values, COUNT(rms_norm_gated_values)},
    {"causal_conv1d_implementation", "conv1d", PARITY_OP_CAUSAL_CONV1D, "fla", NULL, true, causal_conv1d_values,
     COUNT(causal_conv1d_values)},
    {"chunk_gated_delta_rule_implementation", "gdr", PARITY_OP_GATED_DELTA_RULE, "fla", NULL, true,
     gated_delta_rule_values, COUNT(gated_delta_rule_values)},
    {"load_balancing_loss_implementation", "lb_loss", PARITY_OP_LOAD_BALANCING_LOSS, "triton", "eager", false,
     load_balancing_loss_values, COUNT(load_balancing_loss_values)},
    {"moe_implementation", "moe", PARITY_OP_MOE_EXPERTS, "fused_triton", "fused_npu", false, moe_values,
     COUNT(moe_values)},
};

const parity_kernel_field *parity_kernel_field_find(const char *name, bool accept_alias) {
    if (!name) return NULL;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        const parity_kernel_field *field = &parity_kernel_fields[i];
        if (strcmp(field->name, name) == 0) return field;
        if (accept_alias && strcmp(field->alias, name) == 0) return field;
    }
    return NULL;
}

const parity_kernel_field *parity_kernel_field_for_op(const char *op) {
    if (!op) return NULL;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++)
        if (strcmp(parity_kernel_fields[i].op, op) == 0) return &parity_kernel_fields[i];
    return NULL;
}

size_t parity_kernel_field_index(const parity_kernel_field *field) {
    return (size_t)(field - parity_kernel_fields);
}

const parity_kernel_value *parity_kernel_field_value(const parity_kernel_field *field, const char *value) {
    if (!field || !value) return NULL;
    for (size_t i = 0; i < field->value_count; i++)
        if (strcmp(field->values[i].name, value) == 0) return &field->values[i];
    return NULL;
}

bool parity_kernel_value_targets(const parity_kernel_value *value, parity_device_type device) {
    return value && (unsigned)device < PARITY_DEVICE_TYPE_COUNT && (value->targets & PARITY_TARGET(device)) != 0;
}
