// engine.cu: the host side of the tensor-core attention engine (flash.h). Checks a call once
// (attention_cuda.h's checks, bf16, a head-size pair with kernels, grid limits, 16-byte aligned rows,
// for the block-mask schedule the model's mask), turns it into a flash_call and a flash_grid, picks the
// (D, Dv) kernels from a table resolved once per call and runs them on the exec's stream. Forward
// saves lse (N, Hq) f32; backward computes delta into a scratch tensor and reads lse back.
#include <stdint.h>
#include <stdlib.h>

#include "ops/attention/flash/flash.h"
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/attention/attention_cuda.h"
#include "ops/attention/block_mask.h"
}

using namespace parity_flash;
using parity_cuda::scoped_tensor;

parity_error *parity_flash::flash_allow_shared(const void *kernel, const char *name, size_t bytes, int device_index) {
    int limit = 0;
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_index));
    PARITY_CHECK(bytes <= (size_t)limit, PARITY_ERROR_UNSUPPORTED,
                 "attention: the flash %s needs %zu bytes of shared memory a block, cuda:%d has %d", name, bytes,
                 device_index, limit);
    PARITY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return NULL;
}

namespace {

typedef parity_error *(*flash_launcher)(const flash_call &, const flash_grid &, cudaStream_t);

struct head_size_kernels {
    int head_dim, value_dim;
    flash_launcher forward, backward;
};

#define PARITY_FLASH_TABLE_ROW(D, DV) {D, DV, flash_forward_for<D, DV>, flash_backward_for<D, DV>},
const head_size_kernels kernel_table[] = {PARITY_FLASH_HEAD_SIZES(PARITY_FLASH_TABLE_ROW)};

// "64, 96, 128, 192 (v 128), 192, 256" for messages.
void describe_head_sizes(char *buffer, size_t size) {
    size_t used = 0;
    buffer[0] = '\0';
    for (size_t i = 0; i < sizeof kernel_table / sizeof kernel_table[0] && used < size; i++) {
        const head_size_kernels &row = kernel_table[i];
        int n = row.head_dim == row.value_dim
                    ? snprintf(buffer + used, size - used, "%s%d", i ? ", " : "", row.head_dim)
                    : snprintf(buffer + used, size - used, "%s%d (v %d)", i ? ", " : "", row.head_dim, row.value_dim);
        if (n < 0) break;
        used += (size_t)n;
    }
}

bool aligned_16(const parity_tensor *tensor) { return !tensor || ((uintptr_t)tensor->data % 16) == 0; }

// The model's block mask, checked against the call (block_mask.h), with blocks the kernels' tiles divide.
parity_error *check_block_mask(const parity_attention_args *args, const parity_attention_dims &dims, const char *backend) {
    PARITY_TRY_CONTEXT(parity_attention_require_block_mask(args, &dims), "attention %s", backend);
    const parity_block_mask *mask = args->block_mask;
    PARITY_CHECK(mask->q_block % flash_mask_granule == 0 && mask->kv_block % flash_mask_granule == 0,
                 PARITY_ERROR_UNSUPPORTED,
                 "attention: %s on cuda takes block masks whose blocks are multiples of %d tokens (its tiles), got %lld x %lld",
                 backend, flash_mask_granule, (long long)mask->q_block, (long long)mask->kv_block);
    return NULL;
}

// Everything forward and backward share: the checks, the call, the grid and the kernels.
struct prepared {
    parity_attention_dims dims;
    flash_call call;
    flash_grid grid;
    const head_size_kernels *kernels;
    scoped_tensor offsets; // device cu_seqlens, when they came from the host
};

parity_error *prepare(const parity_attention_args *args, bool block_mask, const char *backend, prepared *p) {
    int64_t *host = NULL;
    PARITY_TRY(parity_attention_cuda_check(args, &p->dims, &host));
    const parity_attention_dims &dims = p->dims;
    parity_error *error = NULL;
    if (args->query->dtype != PARITY_BF16)
        error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "attention: %s on cuda runs bf16 (tensor cores), got %s", backend,
                             parity_dtype_name(args->query->dtype));
    p->kernels = NULL;
    for (const head_size_kernels &row : kernel_table)
        if (row.head_dim == dims.head_dim && row.value_dim == dims.value_dim) p->kernels = &row;
    if (!error && !p->kernels) {
        char sizes[128];
        describe_head_sizes(sizes, sizeof sizes);
        error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "attention: %s on cuda has kernels for head sizes %s, got D = %lld, Dv = %lld",
                             backend, sizes, (long long)dims.head_dim, (long long)dims.value_dim);
    }
    if (!error && (dims.query_heads > 65535 || dims.documents > 65535))
        error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                             "attention: %s on cuda takes up to 65535 query heads and documents (grid dimensions), got %lld "
                             "and %lld",
                             backend, (long long)dims.query_heads, (long long)dims.documents);
    if (!error && !(aligned_16(args->query) && aligned_16(args->key) && aligned_16(args->value) && aligned_16(args->output)))
        error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "attention: %s on cuda needs 16-byte aligned query/key/value/output",
                             backend);
    if (!error && block_mask) error = check_block_mask(args, dims, backend);
    if (!error && !block_mask && dims.tokens > 0) {
        if (args->cu_seqlens->device.type == PARITY_DEVICE_CUDA &&
            parity_device_equal(args->cu_seqlens->device, args->query->device) &&
            parity_tensor_is_contiguous(args->cu_seqlens))
            p->call.offsets = static_cast<const int64_t *>(args->cu_seqlens->data);
        else if (!(error = parity_cuda::upload_int64(p->offsets, host, args->cu_seqlens->numel, args->query->device)))
            p->call.offsets = p->offsets.data<int64_t>();
    }
    int64_t longest = 0;
    for (int64_t s = 0; host && s < dims.documents; s++)
        if (host[s + 1] - host[s] > longest) longest = host[s + 1] - host[s];
    free(host);
    PARITY_TRY(error);

    flash_call &c = p->call;
    c.q = static_cast<const bf16 *>(args->query->data);
    c.k = static_cast<const bf16 *>(args->key->data);
    c.v = static_cast<const bf16 *>(args->value->data);
    c.out = static_cast<bf16 *>(args->output->data);
    c.tokens = dims.tokens;
    c.query_heads = (int)dims.query_heads;
    c.kv_heads = (int)dims.kv_heads;
    c.group = (int)(dims.query_heads / dims.kv_heads);
    c.scale = (float)args->scale;
    c.scale_log2 = (float)(args->scale * 1.4426950408889634);
    c.causal = args->causal;
    c.window = args->sliding_window;
    p->grid.device_index = args->query->device.index;
    p->grid.block_mask = block_mask;
    if (block_mask) {
        const parity_block_mask *m = args->block_mask;
        c.kv_num = static_cast<const int32_t *>(m->kv_num_blocks.data);
        c.kv_index = static_cast<const int32_t *>(m->kv_indices.data);
        c.full_kv_num = static_cast<const int32_t *>(m->full_kv_num_blocks.data);
        c.full_kv_index = static_cast<const int32_t *>(m->full_kv_indices.data);
        c.q_num = static_cast<const int32_t *>(m->q_num_blocks.data);
        c.q_index = static_cast<const int32_t *>(m->q_indices.data);
        c.full_q_num = static_cast<const int32_t *>(m->full_q_num_blocks.data);
        c.full_q_index = static_cast<const int32_t *>(m->full_q_indices.data);
        c.document_ids = static_cast<const int32_t *>(m->mask_mod.document_ids.data);
        c.mask_heads = (int)m->heads;
        c.q_block = (int)m->q_block;
        c.kv_block = (int)m->kv_block;
        c.q_blocks = (int)m->q_blocks;
        c.kv_blocks = (int)m->kv_blocks;
        p->grid.longest = dims.tokens;
        p->grid.documents = 1;
    } else {
        p->grid.longest = longest;
        p->grid.documents = dims.documents;
    }
    return NULL;
}

} // namespace

bool parity_flash_attention_covers(const parity_attention_args *args) {
    if (!args->query || !args->value || args->query->ndim != 3 || args->value->ndim != 3 ||
        args->query->dtype != PARITY_BF16)
        return false;
    for (const head_size_kernels &row : kernel_table)
        if (row.head_dim == args->query->shape[2] && row.value_dim == args->value->shape[2]) return true;
    return false;
}

parity_error *parity_flash_attention_forward(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved,
                                             bool block_mask, const char *backend) {
    prepared p{};
    PARITY_TRY(prepare(args, block_mask, backend, &p));
    parity_tensor *lse;
    int64_t shape[2] = {p.dims.tokens, p.dims.query_heads}; // (N, Hq)
    PARITY_TRY(parity_saved_alloc(saved, &lse, PARITY_F32, args->query->device, 2, shape));
    if (p.dims.tokens == 0) return NULL; // S = 0 documents: an empty call, as on the CPU
    PARITY_TRY(parity_cuda::use_device(args->query->device));
    p.call.lse = static_cast<float *>(lse->data);
    return p.kernels->forward(p.call, p.grid, parity_cuda_stream(exec));
}

parity_error *parity_flash_attention_backward(const parity_exec *exec, const parity_attention_args *args,
                                              const parity_saved *saved, const parity_attention_grads *grads,
                                              bool block_mask, const char *backend) {
    prepared p{};
    PARITY_TRY(prepare(args, block_mask, backend, &p));
    PARITY_TRY(parity_attention_cuda_check_grads(args, grads));
    for (const parity_tensor *t : {grads->doutput, (const parity_tensor *)grads->dquery, (const parity_tensor *)grads->dkey,
                                   (const parity_tensor *)grads->dvalue})
        PARITY_CHECK(aligned_16(t), PARITY_ERROR_UNSUPPORTED, "attention: %s on cuda needs 16-byte aligned gradients",
                     backend);
    const parity_tensor *lse;
    PARITY_TRY(parity_saved_get(saved, 0, &lse));
    PARITY_CHECK(lse->numel == p.dims.tokens * p.dims.query_heads && lse->dtype == PARITY_F32 &&
                     parity_device_equal(lse->device, args->query->device),
                 PARITY_ERROR_INTERNAL, "attention: %s's saved lse (%lld values, %s) does not match the call (%lld x %lld, f32)",
                 backend, (long long)lse->numel, parity_dtype_name(lse->dtype), (long long)p.dims.tokens,
                 (long long)p.dims.query_heads);
    if (p.dims.tokens == 0) return NULL;
    PARITY_TRY(parity_cuda::use_device(args->query->device));
    scoped_tensor delta; // (N, Hq) f32
    PARITY_TRY(delta.alloc_1d(PARITY_F32, args->query->device, p.dims.tokens * p.dims.query_heads));
    flash_call &c = p.call;
    c.lse = const_cast<float *>(static_cast<const float *>(lse->data));
    c.dout = static_cast<const bf16 *>(grads->doutput->data);
    c.delta = delta.data<float>();
    c.dq = grads->dquery ? static_cast<bf16 *>(grads->dquery->data) : nullptr;
    c.dk = grads->dkey ? static_cast<bf16 *>(grads->dkey->data) : nullptr;
    c.dv = grads->dvalue ? static_cast<bf16 *>(grads->dvalue->data) : nullptr;
    return p.kernels->backward(c, p.grid, parity_cuda_stream(exec));
}
