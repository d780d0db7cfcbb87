// flash_attention_4.c: cuda `flash_attention_4` as a refusing probe (see flash_attention_4.h). The
// registry entry makes `parity list backends --device cuda`, the run matrix and `parity bench op
// attention` say why it cannot run on this device (the probe sees the device's real SM) instead of
// "not built yet". Its kernel table answers UNSUPPORTED with the same words should anything call it
// past the registry's check.
#include "ops/attention/flash_attention_4.h"

#include <stdio.h>

#include "ops/attention/attention.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

const char *parity_flash_attention_4_reason(int compute_capability, char *buffer, size_t size) {
    if (compute_capability < PARITY_FLASH_ATTENTION_4_MIN_SM)
        snprintf(buffer, size, "needs SM%d (Blackwell); device is SM%d", PARITY_FLASH_ATTENTION_4_MIN_SM,
                 compute_capability);
    else
        snprintf(buffer, size, "not built yet: parity has no FlashAttention-4 (SM%d) kernels; device is SM%d",
                 PARITY_FLASH_ATTENTION_4_MIN_SM, compute_capability);
    return buffer;
}

static bool flash_attention_4_probe(const parity_backend *backend, const parity_device_info *info, char *reason,
                                    size_t reason_size) {
    (void)backend;
    parity_flash_attention_4_reason(info->compute_capability, reason, reason_size);
    return false;
}

static parity_error *refuse(const parity_exec *exec) {
    parity_device_info info;
    parity_error *error = parity_device_query(exec->device, &info);
    if (error) return error;
    char reason[128];
    return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "attention flash_attention_4: %s",
                        parity_flash_attention_4_reason(info.compute_capability, reason, sizeof reason));
}

static parity_error *flash_attention_4_forward(const parity_exec *exec, const parity_attention_args *args,
                                               parity_saved *saved) {
    (void)args, (void)saved;
    return refuse(exec);
}

static parity_error *flash_attention_4_backward(const parity_exec *exec, const parity_attention_args *args,
                                                const parity_saved *saved, const parity_attention_grads *grads) {
    (void)args, (void)saved, (void)grads;
    return refuse(exec);
}

static const parity_attention_kernels flash_attention_4_kernels = {flash_attention_4_forward,
                                                                   flash_attention_4_backward};

PARITY_BACKEND_REGISTRATION(attention, flash_attention_4, cuda) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ATTENTION,
        .name = "flash_attention_4",
        .device = PARITY_DEVICE_CUDA,
        .dtypes = 0, // claims nothing: it never runs
        .capabilities = 0,
        .probe = flash_attention_4_probe,
        .kernels = &flash_attention_4_kernels,
        .description = "FlashAttention-4 needs SM100 (Blackwell): a probe that refuses with the device's SM, "
                       "never replaced by another backend",
    });
}
