// eager.cu: the causal-LM cross-entropy on the GPU (value "eager" on cuda), the CPU eager's math
// and rounding points (ops/cross_entropy/eager.c, cross_entropy_cpu.h), as HF's ForCausalLM on a GPU:
//   logits = hidden @ weight^T        one cuBLAS GEMM (blas.h), activation dtype, f32 accumulation
//   logp   = log_softmax(logits.float())     one block per row, compute precision (f32, or f64),
//                                            exp/log in f64 rounded once, fixed-order tree sums
//   loss   = sum(-logp[i, t_i] over valid i) / divisor   one thread, in row order (the CPU's order)
// divisor = num_items_in_batch, or the valid count (0 / 0 = NaN for an all-ignored mean, as PyTorch).
// The targets are copied to the host once per call to be validated and counted.
// Saves logp (N, V) in the compute precision. Backward:
//   g = -(dloss / divisor);  dlogits = g * (onehot - softmax) rounded to the activation dtype (0 on
//   ignored rows);  dhidden = dlogits @ W,  dweight = dlogits^T @ hidden  (two cuBLAS GEMMs)
#include <stdlib.h>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cpu_math.h"
#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/device_args.h"
#include "ops/core/cuda_api.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

static const int log_softmax_threads = 256;

template <parity_dtype D>
__global__ void cross_entropy_log_softmax_kernel(const typename scalar<D>::storage *logits, // (N, V)
                                                 typename scalar<D>::compute *log_probs,    // (N, V)
                                                 int64_t rows, int64_t vocab) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const typename scalar<D>::storage *x = logits + row * vocab;
        C max = -INFINITY;
        for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) max = fmax(max, scalar<D>::load(x[j]));
        max = block_max(max, scratch);
        C partial = 0;
        for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) partial = partial + precise_exp(scalar<D>::load(x[j]) - max);
        C log_sum = precise_log(block_sum(partial, scratch));
        for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
            log_probs[row * vocab + j] = (scalar<D>::load(x[j]) - max) - log_sum;
    }
}

// loss = (sum over valid rows of -logp[row, target], in row order) / divisor.
template <typename C>
__global__ void cross_entropy_loss_kernel(const C *log_probs,    // (N, V)
                                          const int64_t *targets, // (N)
                                          C *loss,               // ()
                                          int64_t rows, int64_t vocab, int64_t ignore_index, C divisor) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    C sum = 0;
    for (int64_t row = 0; row < rows; row++)
        if (targets[row] != ignore_index) sum = sum - log_probs[row * vocab + targets[row]];
    *loss = sum / divisor;
}

template <parity_dtype D>
__global__ void cross_entropy_dlogits_kernel(const typename scalar<D>::compute *log_probs, // (N, V)
                                             const int64_t *targets,                      // (N)
                                             typename scalar<D>::storage *dlogits,        // (N, V)
                                             int64_t rows, int64_t vocab, int64_t ignore_index,
                                             typename scalar<D>::compute g) {
    using C = typename scalar<D>::compute;
    PARITY_CUDA_FOR_EACH(index, rows * vocab) {
        int64_t row = index / vocab, j = index % vocab, target = targets[row];
        if (target == ignore_index) {
            dlogits[index] = scalar<D>::store(C(0));
            continue;
        }
        C probability = precise_exp(log_probs[index]);
        C onehot = j == target ? g : C(0);
        dlogits[index] = scalar<D>::store(onehot - mul_rn(probability, g));
    }
}

static parity_error *check_devices(const parity_cross_entropy_args *args) {
    parity_device device = args->hidden->device;
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "hidden", args->hidden, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "targets", args->targets, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "loss", args->loss, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "logits", args->logits, device));
    return use_device(device);
}

// Validates the targets (a host copy) and counts the valid ones.
static parity_error *count_valid_targets(const parity_cross_entropy_args *args, int64_t vocab, int64_t *valid_count) {
    parity_tensor host_targets = {};
    PARITY_TRY_CONTEXT(parity_tensor_to(&host_targets, args->targets, PARITY_CPU, PARITY_I64),
                       "cross_entropy: copying targets to the host");
    parity_cross_entropy_args host_args = *args;
    host_args.targets = &host_targets;
    int64_t *targets = NULL;
    parity_error *error = parity_cross_entropy_load_targets(&host_args, vocab, &targets, valid_count);
    free(targets);
    parity_tensor_release(&host_targets);
    return error;
}

static unsigned row_grid(int64_t rows) { return (unsigned)(rows < 65535 * 4 ? rows : 65535 * 4); }

static parity_error *cross_entropy_cuda_forward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                                parity_saved *saved) {
    int64_t tokens, hidden, vocab, valid_count;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_TRY(check_devices(args));
    PARITY_TRY(count_valid_targets(args, vocab, &valid_count));
    parity_dtype dtype = args->hidden->dtype, compute = parity_compute_dtype(dtype);
    parity_device device = args->hidden->device;
    parity_tensor *log_probs;
    PARITY_TRY(parity_saved_alloc(saved, &log_probs, compute, device, PARITY_CUDA_SHAPE(tokens, vocab)));
    parity_tensor scratch_logits = {};
    parity_tensor *logits = args->logits;
    if (!logits) {
        PARITY_TRY(parity_tensor_alloc(&scratch_logits, dtype, device, PARITY_CUDA_SHAPE(tokens, vocab)));
        logits = &scratch_logits;
    }
    parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(dtype, 1, tokens, vocab, hidden, false, true, args->hidden->data,
                                                         args->weight->data, logits->data);
    parity_error *error = parity_cuda_gemm(exec, &gemm);
    double divisor = parity_round_compute((double)(args->num_items_in_batch > 0 ? args->num_items_in_batch : valid_count),
                                          dtype);
    if (!error)
        error = dispatch_float(dtype, "cross_entropy", [&](auto tag) -> parity_error * {
            constexpr parity_dtype D = decltype(tag)::value;
            using T = typename scalar<D>::storage;
            using C = typename scalar<D>::compute;
            cross_entropy_log_softmax_kernel<D><<<row_grid(tokens), log_softmax_threads, 0, parity_cuda_stream(exec)>>>(
                (const T *)logits->data, (C *)log_probs->data, tokens, vocab);
            PARITY_CUDA_TRY_LAUNCH("cross_entropy_log_softmax_kernel");
            cross_entropy_loss_kernel<C><<<1, 1, 0, parity_cuda_stream(exec)>>>(
                (const C *)log_probs->data, (const int64_t *)args->targets->data, (C *)args->loss->data, tokens, vocab,
                args->ignore_index, (C)divisor);
            PARITY_CUDA_TRY_LAUNCH("cross_entropy_loss_kernel");
            return NULL;
        });
    parity_tensor_release(&scratch_logits); // freed on the legacy stream, after the kernels queued before (ops/core/cuda/cuda_runtime.cu): no wait
    if (!error && args->valid_count) *args->valid_count = valid_count;
    return error;
}

static parity_error *cross_entropy_cuda_backward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                                 const parity_saved *saved, const parity_cross_entropy_grads *grads) {
    int64_t tokens, hidden, vocab, valid_count;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_TRY(parity_cross_entropy_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->hidden->device;
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "dloss", grads->dloss, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "dhidden", grads->dhidden, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "dweight", grads->dweight, device));
    const parity_tensor *log_probs;
    PARITY_TRY(parity_saved_get(saved, 0, &log_probs));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "saved log_probs", log_probs, device));
    if (!grads->dhidden && !grads->dweight) return NULL;
    PARITY_TRY(count_valid_targets(args, vocab, &valid_count));
    parity_dtype dtype = args->hidden->dtype;
    double divisor = parity_round_compute((double)(args->num_items_in_batch > 0 ? args->num_items_in_batch : valid_count),
                                          dtype);
    parity_tensor host_dloss = {};
    PARITY_TRY_CONTEXT(parity_tensor_to(&host_dloss, grads->dloss, PARITY_CPU, grads->dloss->dtype),
                       "cross_entropy: copying dloss to the host");
    double g = -parity_round_compute(parity_tensor_get(&host_dloss, 0) / divisor, dtype);
    parity_tensor_release(&host_dloss);

    parity_tensor dlogits = {};
    PARITY_TRY(parity_tensor_alloc(&dlogits, dtype, device, PARITY_CUDA_SHAPE(tokens, vocab)));
    parity_error *error = dispatch_float(dtype, "cross_entropy", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        cross_entropy_dlogits_kernel<D><<<grid_for(tokens * vocab), 256, 0, parity_cuda_stream(exec)>>>(
            (const C *)log_probs->data, (const int64_t *)args->targets->data, (T *)dlogits.data, tokens, vocab,
            args->ignore_index, (C)g);
        PARITY_CUDA_TRY_LAUNCH("cross_entropy_dlogits_kernel");
        return NULL;
    });
    if (!error && grads->dhidden) {
        parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(dtype, 1, tokens, hidden, vocab, false, false, dlogits.data,
                                                             args->weight->data, grads->dhidden->data);
        error = parity_cuda_gemm(exec, &gemm);
    }
    if (!error && grads->dweight) {
        parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(dtype, 1, vocab, hidden, tokens, true, false, dlogits.data,
                                                             args->hidden->data, grads->dweight->data);
        error = parity_cuda_gemm(exec, &gemm);
    }
    parity_tensor_release(&dlogits); // freed on the legacy stream, after the kernels queued before (ops/core/cuda/cuda_runtime.cu): no wait
    return error;
}

static const parity_cross_entropy_kernels cross_entropy_cuda_kernels = {cross_entropy_cuda_forward,
                                                                        cross_entropy_cuda_backward};

PARITY_BACKEND_REGISTRATION(cross_entropy, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_CROSS_ENTROPY;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    // Per-token math reduced with an explicit divisor: safe under sequence and expert parallelism when
    // the caller passes the global num_items_in_batch. cuBLAS blocking depends on N: no batch invariance.
    backend.capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &cross_entropy_cuda_kernels;
    backend.description = "cross-entropy on the GPU: cuBLAS logits, f32 log-softmax, mean or sum / num_items_in_batch";
    return parity_registry_add(&backend);
}
