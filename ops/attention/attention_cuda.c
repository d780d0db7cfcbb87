// attention_cuda.c: the host-side checks of the CUDA attention backends (attention_cuda.h).
#include "ops/attention/attention_cuda.h"

#include <stdlib.h>

#include "ops/core/cuda/device_args.h"

parity_error *parity_attention_cuda_check(const parity_attention_args *args, parity_attention_dims *dims,
                                          int64_t **offsets) {
    *offsets = NULL;
    PARITY_TRY(parity_attention_check(args, dims));
    parity_device device = args->query->device;
    if (device.type != PARITY_DEVICE_CUDA) return parity_cuda_check_tensor("attention", "query", args->query, PARITY_CUDA(0));
    PARITY_TRY(parity_cuda_check_tensor("attention", "query", args->query, device));
    PARITY_TRY(parity_cuda_check_tensor("attention", "key", args->key, device));
    PARITY_TRY(parity_cuda_check_tensor("attention", "value", args->value, device));
    PARITY_TRY(parity_cuda_check_tensor("attention", "output", args->output, device));
    // the boundaries on the host (cu_seqlens may live on either side)
    int64_t *host = NULL;
    PARITY_TRY(parity_cuda_indices_to_host(args->cu_seqlens, "attention cu_seqlens", &host));
    parity_error *error = parity_attention_check_boundaries(host, args->cu_seqlens->numel, dims->tokens);
    if (error) {
        free(host);
        return error;
    }
    *offsets = host;
    return NULL;
}

parity_error *parity_attention_cuda_check_grads(const parity_attention_args *args, const parity_attention_grads *grads) {
    PARITY_TRY(parity_attention_check_grads(args, grads));
    parity_device device = args->query->device;
    PARITY_TRY(parity_cuda_check_tensor("attention", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("attention", "dquery", grads->dquery, device));
    PARITY_TRY(parity_cuda_check_tensor("attention", "dkey", grads->dkey, device));
    return parity_cuda_check_tensor("attention", "dvalue", grads->dvalue, device);
}
