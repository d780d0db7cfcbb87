// eager_support.cuh: what the CUDA eager backends of attention, the MoE ops and the GatedDeltaNet ops
// share beyond kernel_math.cuh. For .cu files only.
//   - scoped_tensor / scoped_documents: scratch tensors and host copies of cu_seqlens that are
//     released on every path out of a launcher (early error returns included);
//   - upload_int64: a host int64 array copied to the device (row lists, document boundaries);
//   - load_f64 / store_f64: elements of a tensor whose dtype is only known at run time (routing
//     weights that are f32 beside bf16 activations, a g that is f32 in a bf16 call), rounded once;
//   - document_of: the packed document that holds a token (binary search over cu_seqlens).
#ifndef PARITY_CUDA_EAGER_SUPPORT_CUH
#define PARITY_CUDA_EAGER_SUPPORT_CUH

#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cu_seqlens.h"
#include "ops/core/tensor.h"
}

namespace parity_cuda {

// A tensor owned by the scope that declares it (released by the destructor).
struct scoped_tensor {
    parity_tensor tensor{};
    scoped_tensor() = default;
    scoped_tensor(const scoped_tensor &) = delete;
    scoped_tensor &operator=(const scoped_tensor &) = delete;
    ~scoped_tensor() { parity_tensor_release(&tensor); }

    // Contiguous, uninitialized; `shape` has `ndim` sizes.
    parity_error *alloc(parity_dtype dtype, parity_device device, int ndim, const int64_t *shape) {
        parity_tensor_release(&tensor);
        return parity_tensor_alloc(&tensor, dtype, device, ndim, shape);
    }
    parity_error *alloc_1d(parity_dtype dtype, parity_device device, int64_t count) {
        int64_t shape[1] = {count > 0 ? count : 1};
        return alloc(dtype, device, 1, shape);
    }
    template <typename T> T *data() const { return static_cast<T *>(tensor.data); }
};

// Document boundaries read to the host, freed by the destructor.
struct scoped_documents {
    parity_documents documents{};
    scoped_documents() = default;
    scoped_documents(const scoped_documents &) = delete;
    scoped_documents &operator=(const scoped_documents &) = delete;
    ~scoped_documents() { parity_documents_free(&documents); }
    int64_t longest() const {
        int64_t longest = 0;
        for (int64_t s = 0; s < documents.count; s++)
            if (documents.offsets[s + 1] - documents.offsets[s] > longest)
                longest = documents.offsets[s + 1] - documents.offsets[s];
        return longest;
    }
};

// cuda:index (PARITY_CUDA is a C compound literal).
inline parity_device cuda_device(int index) {
    parity_device device = {PARITY_DEVICE_CUDA, index};
    return device;
}

// `count` host int64 values copied into a new device tensor `out` on `device`.
inline parity_error *upload_int64(scoped_tensor &out, const int64_t *values, int64_t count, parity_device device) {
    int64_t shape[1] = {count};
    parity_tensor host = parity_tensor_wrap(const_cast<int64_t *>(values), PARITY_I64, PARITY_CPU, 1, shape);
    parity_tensor_release(&out.tensor);
    return parity_tensor_to(&out.tensor, &host, device, PARITY_I64);
}

// Element i of a float tensor of run-time dtype, as f64 (exact).
__device__ __forceinline__ double load_f64(const void *data, parity_dtype dtype, int64_t i) {
    switch (dtype) {
    case PARITY_F64: return static_cast<const double *>(data)[i];
    case PARITY_F32: return static_cast<const float *>(data)[i];
    default: return parity_bf16_to_f64(static_cast<const uint16_t *>(data)[i]);
    }
}

// Stores `value` rounded once to the tensor's dtype (f64, f32 or bf16).
__device__ __forceinline__ void store_f64(void *data, parity_dtype dtype, int64_t i, double value) {
    switch (dtype) {
    case PARITY_F64: static_cast<double *>(data)[i] = value; break;
    case PARITY_F32: static_cast<float *>(data)[i] = __double2float_rn(value); break;
    default: static_cast<uint16_t *>(data)[i] = parity_f64_to_bf16(value); break;
    }
}

// The document s with offsets[s] <= token < offsets[s + 1] (offsets: count + 1 nondecreasing
// boundaries; an empty document is never returned for a token inside the range).
__device__ __forceinline__ int64_t document_of(const int64_t *offsets, int64_t count, int64_t token) {
    int64_t low = 0, high = count - 1;
    while (low < high) {
        int64_t middle = (low + high + 1) / 2;
        if (offsets[middle] <= token) low = middle;
        else high = middle - 1;
    }
    return low;
}

} // namespace parity_cuda

#endif
