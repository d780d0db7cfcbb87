// eager.cu: rotary position embedding on the GPU (value "eager" on cuda), the CPU eager's math and
// rounding points (ops/rotary/eager.c), on query and key in one call:
//   inv_freq, attention_scaling   on the host (frequencies.h, HF's f32 emulation for f32/bf16 runs),
//                                 uploaded once per call
//   freqs = inv_freq * float(position);  cos, sin = cos(freqs) * scaling, sin(freqs) * scaling
//                                 (cos/sin in f64, rounded once), stored in the activation dtype
//   out = x * cos + rotate_half(x) * sin   each product and the sum rounded to the activation dtype
// over the first rotary_dim values (partial rotary: the rest passes through); the interleaved
// layout gathers pairs (2j, 2j + 1) into (j, j + rotary_dim / 2). Positions are read on the device.
// Saves cos and sin (N, rotary_dim / 2) in the activation dtype. Backward is the transposed
// rotation (sin negated), scattered back through the interleave permutation.
#include <stdlib.h>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/rotary/rotary.h"
}

using namespace parity_cuda;

template <parity_dtype D>
__global__ void rotary_cos_sin_kernel(const int64_t *positions,        // (N)
                                      const double *inv_freq,          // (half), values of the compute precision
                                      double attention_scaling,
                                      typename scalar<D>::storage *cos_table, // (N, half)
                                      typename scalar<D>::storage *sin_table, // (N, half)
                                      int64_t tokens, int64_t half) {
    using C = typename scalar<D>::compute;
    C scaling = to_compute<D>(attention_scaling);
    PARITY_CUDA_FOR_EACH(index, tokens * half) {
        int64_t n = index / half, i = index % half;
        C position = to_compute<D>((double)positions[n]); // position_ids.float()
        C angle = to_compute<D>(inv_freq[i] * (double)position);
        cos_table[index] = scalar<D>::store(mul_rn(to_compute<D>(cos((double)angle)), scaling));
        sin_table[index] = scalar<D>::store(mul_rn(to_compute<D>(sin((double)angle)), scaling));
    }
}

// One thread per rotated pair or passed-through value of one (token, head).
template <parity_dtype D>
__global__ void rotary_rotate_kernel(const typename scalar<D>::storage *in,        // (N, H, head_dim)
                                     typename scalar<D>::storage *out,             // (N, H, head_dim)
                                     const typename scalar<D>::storage *cos_table, // (N, half)
                                     const typename scalar<D>::storage *sin_table, // (N, half)
                                     int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim,
                                     bool interleaved, bool transpose) {
    using C = typename scalar<D>::compute;
    int64_t half = rotary_dim / 2, per_head = half + (head_dim - rotary_dim);
    PARITY_CUDA_FOR_EACH(index, tokens * heads * per_head) {
        int64_t j = index % per_head, head_index = index / per_head, n = head_index / heads;
        const typename scalar<D>::storage *x = in + head_index * head_dim;
        typename scalar<D>::storage *y = out + head_index * head_dim;
        if (j >= half) { // pass-through part of partial rotary
            int64_t at = rotary_dim + (j - half);
            y[at] = x[at];
            continue;
        }
        int64_t in_first = j, in_second = j + half, out_first = j, out_second = j + half;
        if (interleaved) {
            if (transpose) { out_first = 2 * j; out_second = 2 * j + 1; }
            else { in_first = 2 * j; in_second = 2 * j + 1; }
        }
        C c = scalar<D>::load(cos_table[n * half + j]), s = scalar<D>::load(sin_table[n * half + j]);
        if (transpose) s = -s;
        C x1 = scalar<D>::load(x[in_first]), x2 = scalar<D>::load(x[in_second]);
        y[out_first] = scalar<D>::store(round_storage<D>(mul_rn(x1, c)) - round_storage<D>(mul_rn(x2, s)));
        y[out_second] = scalar<D>::store(round_storage<D>(mul_rn(x2, c)) + round_storage<D>(mul_rn(x1, s)));
    }
}

static parity_error *check_devices(const parity_rotary_args *args) {
    parity_device device = args->query->device;
    PARITY_TRY(parity_cuda_check_tensor("rotary", "query", args->query, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "key", args->key, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "positions", args->positions, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "query_out", args->query_out, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "key_out", args->key_out, device));
    return use_device(device);
}

template <parity_dtype D>
static parity_error *rotate(const parity_exec *exec, const parity_tensor *input, parity_tensor *output,
                            const parity_tensor *cos_table, const parity_tensor *sin_table,
                            const parity_rotary_sizes &sizes, bool interleaved, bool transpose) {
    using T = typename scalar<D>::storage;
    int64_t heads = input->shape[1], per_head = sizes.rotary_dim / 2 + (sizes.head_dim - sizes.rotary_dim);
    int64_t count = sizes.tokens * heads * per_head;
    if (count == 0) return NULL;
    rotary_rotate_kernel<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
        (const T *)input->data, (T *)output->data, (const T *)cos_table->data, (const T *)sin_table->data, sizes.tokens,
        heads, sizes.head_dim, sizes.rotary_dim, interleaved, transpose);
    PARITY_CUDA_TRY_LAUNCH("rotary_rotate_kernel");
    return NULL;
}

static parity_error *rotary_cuda_forward(const parity_exec *exec, const parity_rotary_args *args, parity_saved *saved) {
    parity_rotary_sizes sizes;
    PARITY_TRY(parity_rotary_check(args, &sizes));
    PARITY_TRY(check_devices(args));
    parity_dtype dtype = args->query->dtype;
    parity_device device = args->query->device;
    int64_t half = sizes.rotary_dim / 2;
    double *inv_freq = (double *)malloc((size_t)half * sizeof *inv_freq);
    if (!inv_freq) return PARITY_ERROR(PARITY_ERROR_MEMORY, "rotary: %lld inverse frequencies", (long long)half);
    double attention_scaling;
    parity_error *error = parity_rotary_frequencies(args->rope, sizes.rotary_dim, dtype, inv_freq, &attention_scaling);
    parity_tensor device_inv_freq = {};
    if (!error) {
        parity_tensor host = parity_tensor_wrap(inv_freq, PARITY_F64, PARITY_CPU, PARITY_CUDA_SHAPE(half));
        error = parity_tensor_to(&device_inv_freq, &host, device, PARITY_F64);
    }
    free(inv_freq);
    parity_tensor *cos_table = NULL, *sin_table = NULL;
    if (!error) error = parity_saved_alloc(saved, &cos_table, dtype, device, PARITY_CUDA_SHAPE(sizes.tokens, half));
    if (!error) error = parity_saved_alloc(saved, &sin_table, dtype, device, PARITY_CUDA_SHAPE(sizes.tokens, half));
    if (!error && sizes.tokens > 0)
        error = dispatch_float(dtype, "rotary", [&](auto tag) -> parity_error * {
            constexpr parity_dtype D = decltype(tag)::value;
            using T = typename scalar<D>::storage;
            rotary_cos_sin_kernel<D><<<grid_for(sizes.tokens * half), 256, 0, parity_cuda_stream(exec)>>>(
                (const int64_t *)args->positions->data, (const double *)device_inv_freq.data, attention_scaling,
                (T *)cos_table->data, (T *)sin_table->data, sizes.tokens, half);
            PARITY_CUDA_TRY_LAUNCH("rotary_cos_sin_kernel");
            bool interleaved = args->rope->layout == PARITY_ROTARY_INTERLEAVED;
            PARITY_TRY(rotate<D>(exec, args->query, args->query_out, cos_table, sin_table, sizes, interleaved, false));
            return rotate<D>(exec, args->key, args->key_out, cos_table, sin_table, sizes, interleaved, false);
        });
    // the uploaded frequencies must outlive the kernel that reads them
    if (!error) {
        cudaError_t status = cudaStreamSynchronize(parity_cuda_stream(exec));
        if (status != cudaSuccess)
            error = PARITY_ERROR(PARITY_ERROR_DEVICE, "rotary forward: %s", cudaGetErrorString(status));
    }
    parity_tensor_release(&device_inv_freq);
    return error;
}

static parity_error *rotary_cuda_backward(const parity_exec *exec, const parity_rotary_args *args,
                                          const parity_saved *saved, const parity_rotary_grads *grads) {
    parity_rotary_sizes sizes;
    PARITY_TRY(parity_rotary_check(args, &sizes));
    PARITY_TRY(parity_rotary_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->query->device;
    PARITY_TRY(parity_cuda_check_tensor("rotary", "dquery_out", grads->dquery_out, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "dkey_out", grads->dkey_out, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "dquery", grads->dquery, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "dkey", grads->dkey, device));
    const parity_tensor *cos_table, *sin_table;
    PARITY_TRY(parity_saved_get(saved, 0, &cos_table));
    PARITY_TRY(parity_saved_get(saved, 1, &sin_table));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "saved cos", cos_table, device));
    PARITY_TRY(parity_cuda_check_tensor("rotary", "saved sin", sin_table, device));
    bool interleaved = args->rope->layout == PARITY_ROTARY_INTERLEAVED;
    return dispatch_float(args->query->dtype, "rotary", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        if (grads->dquery)
            PARITY_TRY(
                rotate<D>(exec, grads->dquery_out, grads->dquery, cos_table, sin_table, sizes, interleaved, true));
        if (grads->dkey)
            PARITY_TRY(rotate<D>(exec, grads->dkey_out, grads->dkey, cos_table, sin_table, sizes, interleaved, true));
        return NULL;
    });
}

static const parity_rotary_kernels rotary_cuda_kernels = {rotary_cuda_forward, rotary_cuda_backward};

PARITY_BACKEND_REGISTRATION(rotary, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ROTARY;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_PARTIAL_ROTARY | PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT |
                           PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &rotary_cuda_kernels;
    backend.description = "RoPE on query and key on the GPU (default/linear/llama3/yarn, half-split or interleaved, "
                          "partial), f64/f32/bf16";
    return parity_registry_add(&backend);
}
