// eager.cu: the reference causal_conv1d on CUDA (value "eager"), eager.c's computation with one
// thread per output element: the taps j = 0 .. K-1 summed oldest first in the compute precision,
// the conv output rounded to the input dtype (saved as the pre-activation when the activation is
// SiLU), then F.silu in the compute precision, rounded once. Each document of cu_seqlens is
// convolved alone (a thread finds its document by binary search over the boundaries).
// Backward: dz = dy * silu'(z) (stored in the input dtype), then one thread per input element for
// dx (taps inside the document) and one per weight for dweight (documents and tokens in order).
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

struct conv_shape {
    int64_t tokens, channels, kernel_size;
    const int64_t *offsets; // (documents + 1) on the device
    int64_t documents;
    bool silu;
};

template <parity_dtype D>
__global__ void conv_forward(conv_shape shape, const typename scalar<D>::storage *x, const typename scalar<D>::storage *weight,
                             typename scalar<D>::storage *preactivation, typename scalar<D>::storage *y) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t channels = shape.channels, taps = shape.kernel_size;
    PARITY_CUDA_FOR_EACH(index, shape.tokens * channels) {
        int64_t t = index / channels, c = index % channels;
        int64_t start = shape.offsets[document_of(shape.offsets, shape.documents, t)];
        C sum = 0;
        for (int64_t j = 0; j < taps; j++) {
            int64_t source = t - (taps - 1) + j;
            if (source < start) continue; // zero padding of this document
            sum += S::load(weight[c * taps + j]) * S::load(x[source * channels + c]);
        }
        C z = round_storage<D>(sum);
        if (shape.silu) {
            preactivation[index] = S::store(z);
            y[index] = S::store(z / (C(1) + precise_exp(-z)));
        } else {
            y[index] = S::store(z);
        }
    }
}

// dz = dy * s * (1 + z * (1 - s)), s = sigmoid(z) (PyTorch's silu_backward), rounded to the input dtype.
template <parity_dtype D>
__global__ void conv_dpreactivation(int64_t count, bool silu, const typename scalar<D>::storage *dy,
                                    const typename scalar<D>::storage *preactivation, typename scalar<D>::compute *dz) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(i, count) {
        C gradient = S::load(dy[i]);
        if (silu) {
            C z = S::load(preactivation[i]);
            C s = C(1) / (C(1) + precise_exp(-z));
            C inner = C(1) + z * (C(1) - s);
            gradient = round_storage<D>(gradient * s * inner);
        }
        dz[i] = gradient;
    }
}

template <parity_dtype D>
__global__ void conv_dinput(conv_shape shape, const typename scalar<D>::storage *weight, const typename scalar<D>::compute *dz,
                            typename scalar<D>::storage *dx) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t channels = shape.channels, taps = shape.kernel_size;
    PARITY_CUDA_FOR_EACH(index, shape.tokens * channels) {
        int64_t t = index / channels, c = index % channels;
        int64_t end = shape.offsets[document_of(shape.offsets, shape.documents, t) + 1];
        C sum = 0;
        for (int64_t j = 0; j < taps; j++) {
            int64_t target = t + (taps - 1) - j; // the output this input feeds through tap j
            if (target >= end) continue;
            sum += S::load(weight[c * taps + j]) * dz[target * channels + c];
        }
        dx[index] = S::store(sum);
    }
}

template <parity_dtype D>
__global__ void conv_dweight(conv_shape shape, const typename scalar<D>::storage *x, const typename scalar<D>::compute *dz,
                             typename scalar<D>::storage *dweight) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t channels = shape.channels, taps = shape.kernel_size;
    PARITY_CUDA_FOR_EACH(index, channels * taps) {
        int64_t c = index % channels, j = index / channels; // neighbouring threads read neighbouring channels
        C sum = 0;
        for (int64_t s = 0; s < shape.documents; s++) {
            int64_t start = shape.offsets[s], end = shape.offsets[s + 1];
            for (int64_t t = start + (taps - 1) - j; t < end; t++)
                sum += dz[t * channels + c] * S::load(x[(t - (taps - 1) + j) * channels + c]);
        }
        dweight[c * taps + j] = S::store(sum);
    }
}

// Validation, devices, and the document boundaries (host check, then a device copy).
parity_error *prepare_call(const parity_causal_conv1d_args *args, conv_shape *shape, scoped_tensor *offsets) {
    int64_t tokens, channels, kernel_size;
    PARITY_TRY(parity_causal_conv1d_check(args, &tokens, &channels, &kernel_size));
    parity_device device = args->input->device;
    if (device.type != PARITY_DEVICE_CUDA) return parity_cuda_check_tensor("causal_conv1d", "input", args->input, cuda_device(0));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "output", args->output, device));
    scoped_documents documents;
    PARITY_TRY(parity_cu_seqlens_load("causal_conv1d", args->cu_seqlens, tokens, &documents.documents));
    PARITY_TRY(upload_int64(*offsets, documents.documents.offsets, documents.documents.count + 1, device));
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    *shape = {tokens, channels, kernel_size, offsets->data<int64_t>(), documents.documents.count,
              args->activation == PARITY_CAUSAL_CONV1D_SILU};
    return NULL;
}

parity_error *causal_conv1d_cuda_eager_forward(const parity_exec *exec, const parity_causal_conv1d_args *args,
                                               parity_saved *saved) {
    conv_shape shape;
    scoped_tensor offsets;
    PARITY_TRY(prepare_call(args, &shape, &offsets));
    parity_tensor *preactivation = NULL;
    if (shape.silu) {
        int64_t saved_shape[2] = {shape.tokens, shape.channels};
        PARITY_TRY(parity_saved_alloc(saved, &preactivation, args->input->dtype, args->input->device, 2, saved_shape));
    }
    return dispatch_float(args->input->dtype, "causal_conv1d", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        conv_forward<D><<<grid_for(shape.tokens * shape.channels), 256, 0, parity_cuda_stream(exec)>>>(
            shape, static_cast<const storage *>(args->input->data), static_cast<const storage *>(args->weight->data),
            preactivation ? static_cast<storage *>(preactivation->data) : nullptr,
            static_cast<storage *>(args->output->data));
        PARITY_CUDA_TRY_LAUNCH("conv_forward");
        return NULL;
    });
}

parity_error *causal_conv1d_cuda_eager_backward(const parity_exec *exec, const parity_causal_conv1d_args *args,
                                                const parity_saved *saved, const parity_causal_conv1d_grads *grads) {
    conv_shape shape;
    scoped_tensor offsets;
    PARITY_TRY(prepare_call(args, &shape, &offsets));
    PARITY_TRY(parity_causal_conv1d_check_grads(args, grads));
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "dinput", grads->dinput, device));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "dweight", grads->dweight, device));
    const parity_tensor *preactivation = NULL;
    if (shape.silu) PARITY_TRY(parity_saved_get(saved, 0, &preactivation));
    parity_dtype compute = args->input->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    scoped_tensor dz;
    PARITY_TRY(dz.alloc_1d(compute, device, shape.tokens * shape.channels));
    return dispatch_float(args->input->dtype, "causal_conv1d", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        int64_t count = shape.tokens * shape.channels;
        conv_dpreactivation<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            count, shape.silu, static_cast<const storage *>(grads->doutput->data),
            preactivation ? static_cast<const storage *>(preactivation->data) : nullptr, dz.data<C>());
        PARITY_CUDA_TRY_LAUNCH("conv_dpreactivation");
        if (grads->dinput) {
            conv_dinput<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
                shape, static_cast<const storage *>(args->weight->data), dz.data<C>(),
                static_cast<storage *>(grads->dinput->data));
            PARITY_CUDA_TRY_LAUNCH("conv_dinput");
        }
        if (grads->dweight) {
            conv_dweight<D><<<grid_for(shape.channels * shape.kernel_size, 128), 128, 0, parity_cuda_stream(exec)>>>(
                shape, static_cast<const storage *>(args->input->data), dz.data<C>(),
                static_cast<storage *>(grads->dweight->data));
            PARITY_CUDA_TRY_LAUNCH("conv_dweight");
        }
        return NULL;
    });
}

const parity_causal_conv1d_kernels causal_conv1d_cuda_eager_kernels = {causal_conv1d_cuda_eager_forward,
                                                                       causal_conv1d_cuda_eager_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(causal_conv1d, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_CAUSAL_CONV1D;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &causal_conv1d_cuda_eager_kernels;
    backend.description = "reference depthwise causal conv1d (+ SiLU) on CUDA over packed documents, one thread per "
                          "element, f64/f32/bf16";
    return parity_registry_add(&backend);
}
