// eager.c: the reference causal_conv1d on the CPU (value "eager"), as HF's causal_conv1d_fn runs on
// the GPU: F.conv1d in the input dtype (cuDNN accumulates in f32 for bf16 and stores the conv output
// in bf16), then F.silu on that stored tensor (computed in f32, stored in bf16). f64 stays f64.
// Each document of cu_seqlens is convolved alone: taps before its first token read zeros.
// Taps are summed j = 0 .. K-1 (oldest token first). Saves the pre-activation conv output (N, C),
// as stored, when the activation is SiLU (autograd keeps the same tensor).
//
// Backward: dz = dy * silu'(z) = dy * s * (1 + z * (1 - s)), s = sigmoid(z) (PyTorch's silu_backward);
//   dx[t, c] = sum_j weight[c, j] * dz[t + K - 1 - j, c]   (taps inside the document)
//   dweight[c, j] = sum_t dz[t, c] * x[t - (K - 1) + j, c]  (over every document, tokens in order)
#include <math.h>

#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/core/cpu_math.h"
#include "ops/core/cu_seqlens.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

// F.silu in the compute precision: z / (1 + exp(-z)).
static double silu(double z, parity_dtype dtype) {
    double denominator = parity_round_compute(1.0 + parity_round_compute(exp(-z), dtype), dtype);
    return parity_round_compute(z / denominator, dtype);
}

// PyTorch's silu_backward: dy * s * (1 + z * (1 - s)).
static double silu_backward(double dy, double z, parity_dtype dtype) {
    double s = parity_round_compute(1.0 / parity_round_compute(1.0 + parity_round_compute(exp(-z), dtype), dtype), dtype);
    double inner = parity_round_compute(1.0 + parity_round_compute(z * parity_round_compute(1.0 - s, dtype), dtype), dtype);
    return parity_round_compute(parity_round_compute(dy * s, dtype) * inner, dtype);
}

static parity_error *causal_conv1d_eager_forward(const parity_exec *exec, const parity_causal_conv1d_args *args,
                                                 parity_saved *saved) {
    int64_t tokens, channels, kernel_size;
    PARITY_TRY(parity_causal_conv1d_check(args, &tokens, &channels, &kernel_size));
    PARITY_TRY(parity_check_cpu("causal_conv1d", "input", args->input));
    PARITY_TRY(parity_check_cpu("causal_conv1d", "weight", args->weight));
    PARITY_TRY(parity_check_cpu("causal_conv1d", "output", args->output));
    parity_documents documents;
    PARITY_TRY(parity_cu_seqlens_load("causal_conv1d", args->cu_seqlens, tokens, &documents));
    parity_dtype dtype = args->input->dtype;
    bool uses_silu = args->activation == PARITY_CAUSAL_CONV1D_SILU;

    parity_tensor *preactivation = NULL;
    parity_cpu_values x = {0}, w = {0}, y = {0};
    parity_error *error = NULL;
    if (uses_silu)
        error = parity_saved_alloc(saved, &preactivation, dtype, PARITY_CPU, PARITY_SHAPE(tokens, channels));
    if (!error) error = parity_cpu_values_load(args->input, "causal_conv1d input", &x);
    if (!error) error = parity_cpu_values_load(args->weight, "causal_conv1d weight", &w);
    if (!error) error = parity_cpu_values_new(tokens * channels, &y);
    for (int64_t s = 0; !error && s < documents.count; s++) {
        int64_t start = documents.offsets[s], end = documents.offsets[s + 1];
        for (int64_t t = start; t < end; t++) {
            for (int64_t c = 0; c < channels; c++) {
                double sum = 0;
                for (int64_t j = 0; j < kernel_size; j++) {
                    int64_t source = t - (kernel_size - 1) + j;
                    if (source < start) continue; // zero padding of this document
                    sum = parity_round_compute(
                        sum + parity_round_compute(w.data[c * kernel_size + j] * x.data[source * channels + c], dtype), dtype);
                }
                double z = parity_round_storage(sum, dtype); // the conv output tensor
                if (uses_silu) {
                    parity_tensor_set(preactivation, t * channels + c, z);
                    y.data[t * channels + c] = parity_round_storage(silu(z, dtype), dtype);
                } else {
                    y.data[t * channels + c] = z;
                }
            }
        }
    }
    if (!error) parity_cpu_values_store(args->output, y.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&y);
    parity_documents_free(&documents);
    return error;
}

static parity_error *causal_conv1d_eager_backward(const parity_exec *exec, const parity_causal_conv1d_args *args,
                                                  const parity_saved *saved, const parity_causal_conv1d_grads *grads) {
    int64_t tokens, channels, kernel_size;
    PARITY_TRY(parity_causal_conv1d_check(args, &tokens, &channels, &kernel_size));
    PARITY_TRY(parity_causal_conv1d_check_grads(args, grads));
    const parity_tensor *preactivation = NULL;
    bool uses_silu = args->activation == PARITY_CAUSAL_CONV1D_SILU;
    if (uses_silu) PARITY_TRY(parity_saved_get(saved, 0, &preactivation));
    parity_documents documents;
    PARITY_TRY(parity_cu_seqlens_load("causal_conv1d", args->cu_seqlens, tokens, &documents));
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x = {0}, w = {0}, dz = {0}, dx = {0}, dw = {0};
    parity_error *error = parity_cpu_values_load(args->input, "causal_conv1d input", &x);
    if (!error) error = parity_cpu_values_load(args->weight, "causal_conv1d weight", &w);
    if (!error) error = parity_cpu_values_new(tokens * channels, &dz);
    if (!error) error = parity_cpu_values_new(tokens * channels, &dx);
    if (!error) error = parity_cpu_values_new(channels * kernel_size, &dw);
    if (error) goto done;
    // dz: the gradient of the conv output tensor (stored in the input dtype, like autograd's)
    for (int64_t i = 0; i < tokens * channels; i++) {
        double dy = parity_tensor_get(grads->doutput, i);
        dz.data[i] = uses_silu ? parity_round_storage(silu_backward(dy, parity_tensor_get(preactivation, i), dtype), dtype)
                               : dy;
    }
    for (int64_t s = 0; s < documents.count; s++) {
        int64_t start = documents.offsets[s], end = documents.offsets[s + 1];
        for (int64_t t = start; t < end; t++) {
            for (int64_t c = 0; c < channels; c++) {
                double sum = 0;
                for (int64_t j = 0; j < kernel_size; j++) {
                    int64_t target = t + (kernel_size - 1) - j; // the output this input feeds through tap j
                    if (target >= end) continue;
                    sum = parity_round_compute(
                        sum + parity_round_compute(w.data[c * kernel_size + j] * dz.data[target * channels + c], dtype), dtype);
                }
                dx.data[t * channels + c] = sum;
            }
        }
    }
    for (int64_t c = 0; c < channels; c++) {
        for (int64_t j = 0; j < kernel_size; j++) {
            double sum = 0;
            for (int64_t s = 0; s < documents.count; s++) {
                int64_t start = documents.offsets[s], end = documents.offsets[s + 1];
                for (int64_t t = start + (kernel_size - 1) - j; t < end; t++) {
                    int64_t source = t - (kernel_size - 1) + j;
                    sum = parity_round_compute(sum + parity_round_compute(dz.data[t * channels + c] * x.data[source * channels + c], dtype),
                                               dtype);
                }
            }
            dw.data[c * kernel_size + j] = sum;
        }
    }
    if (grads->dinput) parity_cpu_values_store(grads->dinput, dx.data);
    if (grads->dweight) parity_cpu_values_store(grads->dweight, dw.data);
done:
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&dz);
    parity_cpu_values_free(&dx);
    parity_cpu_values_free(&dw);
    parity_documents_free(&documents);
    return error;
}

static const parity_causal_conv1d_kernels causal_conv1d_eager_kernels = {causal_conv1d_eager_forward,
                                                                         causal_conv1d_eager_backward};

PARITY_BACKEND_REGISTRATION(causal_conv1d, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_CAUSAL_CONV1D,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        // Channel-local over whole documents, so it would be safe under Ulysses (each rank holds full
        // sequences); not flagged so until multi-rank code exists to test it (test_capability_claims.c).
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &causal_conv1d_eager_kernels,
        .description = "reference depthwise causal conv1d (+ SiLU) over packed documents, f64/f32/bf16",
    });
}
