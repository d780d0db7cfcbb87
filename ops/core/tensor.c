// tensor.c: tensor allocation, views, copies, dtype conversion and CPU element access.
#include "ops/core/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/cuda/elementwise.h"
#include "ops/core/cuda_api.h"
#include "ops/core/memory.h"

static parity_error *set_shape(parity_tensor *tensor, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > PARITY_MAX_DIMS)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "tensor rank %d outside 0..%d", ndim, PARITY_MAX_DIMS);
    tensor->ndim = ndim;
    int64_t numel = 1;
    for (int dim = ndim - 1; dim >= 0; dim--) {
        if (shape[dim] < 0) return PARITY_ERROR(PARITY_ERROR_SHAPE, "negative size %lld in dimension %d", (long long)shape[dim], dim);
        tensor->shape[dim] = shape[dim];
        tensor->strides[dim] = numel;
        if (shape[dim] > 0 && numel > INT64_MAX / shape[dim])
            return PARITY_ERROR(PARITY_ERROR_SHAPE, "tensor element count overflows int64");
        numel *= shape[dim];
    }
    tensor->numel = numel;
    return NULL;
}

parity_error *parity_tensor_alloc(parity_tensor *out, parity_dtype dtype, parity_device device, int ndim,
                                  const int64_t *shape) {
    memset(out, 0, sizeof *out);
    if ((unsigned)dtype >= PARITY_DTYPE_COUNT) return PARITY_ERROR(PARITY_ERROR_USAGE, "unknown dtype %d", (int)dtype);
    PARITY_TRY(set_shape(out, ndim, shape));
    size_t element = parity_dtype_size(dtype);
    if ((uint64_t)out->numel > SIZE_MAX / element)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "tensor of %lld elements is too large", (long long)out->numel);
    size_t bytes = (size_t)out->numel * element;
    out->dtype = dtype;
    out->device = device;
    PARITY_TRY(parity_memory_alloc(device, bytes, &out->data));
    out->allocated_bytes = bytes;
    out->owns_data = true;
    return NULL;
}

parity_error *parity_tensor_zeros(parity_tensor *out, parity_dtype dtype, parity_device device, int ndim,
                                  const int64_t *shape) {
    PARITY_TRY(parity_tensor_alloc(out, dtype, device, ndim, shape));
    parity_error *error = parity_tensor_fill_zero(out);
    if (error) parity_tensor_release(out);
    return error;
}

parity_tensor parity_tensor_wrap(void *data, parity_dtype dtype, parity_device device, int ndim, const int64_t *shape) {
    parity_tensor tensor;
    memset(&tensor, 0, sizeof tensor);
    parity_error *error = set_shape(&tensor, ndim, shape);
    if (error) { // a wrapped view with an invalid shape is an empty tensor; callers validate shapes first
        parity_error_free(error);
        memset(&tensor, 0, sizeof tensor);
        return tensor;
    }
    tensor.data = data;
    tensor.dtype = dtype;
    tensor.device = device;
    return tensor;
}

void parity_tensor_release(parity_tensor *tensor) {
    if (!tensor) return;
    if (tensor->owns_data) parity_memory_free(tensor->device, tensor->data, tensor->allocated_bytes);
    memset(tensor, 0, sizeof *tensor);
}

bool parity_tensor_is_contiguous(const parity_tensor *tensor) {
    int64_t expected = 1;
    for (int dim = tensor->ndim - 1; dim >= 0; dim--) {
        if (tensor->shape[dim] != 1 && tensor->strides[dim] != expected) return false;
        expected *= tensor->shape[dim];
    }
    return true;
}

size_t parity_tensor_nbytes(const parity_tensor *tensor) {
    return (size_t)tensor->numel * parity_dtype_size(tensor->dtype);
}

bool parity_tensor_same_shape(const parity_tensor *a, const parity_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int dim = 0; dim < a->ndim; dim++)
        if (a->shape[dim] != b->shape[dim]) return false;
    return true;
}

const char *parity_tensor_shape_string(const parity_tensor *tensor, char *buffer, size_t size) {
    size_t used = (size_t)snprintf(buffer, size, "(");
    for (int dim = 0; dim < tensor->ndim && used < size; dim++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%lld", dim ? ", " : "", (long long)tensor->shape[dim]);
    if (used < size) snprintf(buffer + used, size - used, ")");
    return buffer;
}

const char *parity_tensor_describe(const parity_tensor *tensor, char *buffer, size_t size) {
    char shape[160], device[32];
    snprintf(buffer, size, "%s %s %s", parity_tensor_shape_string(tensor, shape, sizeof shape),
             parity_dtype_name(tensor->dtype), parity_device_format(tensor->device, device, sizeof device));
    return buffer;
}

parity_error *parity_tensor_reshape(parity_tensor *out, const parity_tensor *source, int ndim, const int64_t *shape) {
    if (!parity_tensor_is_contiguous(source))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "reshape needs a contiguous tensor");
    parity_tensor view;
    memset(&view, 0, sizeof view);
    PARITY_TRY(set_shape(&view, ndim, shape));
    if (view.numel != source->numel) {
        char from[160], to[160];
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                            parity_tensor_shape_string(source, from, sizeof from), (long long)source->numel,
                            parity_tensor_shape_string(&view, to, sizeof to), (long long)view.numel);
    }
    view.data = source->data;
    view.dtype = source->dtype;
    view.device = source->device;
    *out = view;
    return NULL;
}

parity_error *parity_tensor_transpose(parity_tensor *out, const parity_tensor *source, int dim_a, int dim_b) {
    if (dim_a < 0 || dim_a >= source->ndim || dim_b < 0 || dim_b >= source->ndim)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "transpose(%d, %d) of a rank-%d tensor", dim_a, dim_b, source->ndim);
    parity_tensor view = *source;
    view.owns_data = false;
    view.allocated_bytes = 0;
    int64_t size = view.shape[dim_a], stride = view.strides[dim_a];
    view.shape[dim_a] = view.shape[dim_b];
    view.strides[dim_a] = view.strides[dim_b];
    view.shape[dim_b] = size;
    view.strides[dim_b] = stride;
    *out = view;
    return NULL;
}

int64_t parity_tensor_offset(const parity_tensor *tensor, int64_t flat_index) {
    int64_t offset = 0;
    for (int dim = tensor->ndim - 1; dim >= 0; dim--) {
        int64_t size = tensor->shape[dim];
        if (size == 0) return 0;
        offset += (flat_index % size) * tensor->strides[dim];
        flat_index /= size;
    }
    return offset;
}

static double load_element(const void *data, parity_dtype dtype, int64_t offset) {
    switch (dtype) {
    case PARITY_F64: return ((const double *)data)[offset];
    case PARITY_F32: return ((const float *)data)[offset];
    case PARITY_BF16: return parity_bf16_to_f64(((const uint16_t *)data)[offset]);
    case PARITY_F16: return parity_f16_to_f64(((const uint16_t *)data)[offset]);
    case PARITY_I64: return (double)((const int64_t *)data)[offset];
    case PARITY_I32: return ((const int32_t *)data)[offset];
    case PARITY_U8: return ((const uint8_t *)data)[offset];
    default: return NAN;
    }
}

static void store_element(void *data, parity_dtype dtype, int64_t offset, double value) {
    switch (dtype) {
    case PARITY_F64: ((double *)data)[offset] = value; break;
    case PARITY_F32: ((float *)data)[offset] = (float)value; break;
    case PARITY_BF16: ((uint16_t *)data)[offset] = parity_f64_to_bf16(value); break;
    case PARITY_F16: ((uint16_t *)data)[offset] = parity_f64_to_f16(value); break;
    case PARITY_I64: ((int64_t *)data)[offset] = (int64_t)value; break;
    case PARITY_I32: ((int32_t *)data)[offset] = (int32_t)value; break;
    case PARITY_U8: ((uint8_t *)data)[offset] = (uint8_t)value; break;
    default: break;
    }
}

double parity_tensor_get(const parity_tensor *tensor, int64_t flat_index) {
    return load_element(tensor->data, tensor->dtype, parity_tensor_offset(tensor, flat_index));
}

void parity_tensor_set(parity_tensor *tensor, int64_t flat_index, double value) {
    store_element(tensor->data, tensor->dtype, parity_tensor_offset(tensor, flat_index), value);
}

parity_error *parity_tensor_fill_zero(parity_tensor *tensor) {
    if (tensor->device.type == PARITY_DEVICE_CUDA) {
        if (!parity_tensor_is_contiguous(tensor))
            return PARITY_ERROR(PARITY_ERROR_SHAPE, "zero-fill of a non-contiguous CUDA tensor");
        return parity_cuda_memset_zero(tensor->device.index, tensor->data, parity_tensor_nbytes(tensor));
    }
    if (parity_tensor_is_contiguous(tensor)) {
        memset(tensor->data, 0, parity_tensor_nbytes(tensor));
    } else {
        for (int64_t i = 0; i < tensor->numel; i++) parity_tensor_set(tensor, i, 0.0);
    }
    return NULL;
}

parity_error *parity_tensor_fill_value(const parity_exec *exec, parity_tensor *tensor, double value) {
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "fill of a %s tensor with %g: float dtypes only", parity_dtype_name(tensor->dtype),
                            value);
    if (tensor->device.type == PARITY_DEVICE_CUDA) {
        if (!parity_tensor_is_contiguous(tensor)) return PARITY_ERROR(PARITY_ERROR_SHAPE, "fill of a non-contiguous CUDA tensor");
        return parity_cuda_fill(exec, tensor, value);
    }
    if (tensor->device.type != PARITY_DEVICE_CPU) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "fill: needs an Ascend NPU build");
    for (int64_t i = 0; i < tensor->numel; i++) parity_tensor_set(tensor, i, value);
    return NULL;
}

parity_error *parity_tensor_copy(parity_tensor *destination, const parity_tensor *source) {
    char a[200], b[200];
    if (destination->dtype != source->dtype || !parity_tensor_same_shape(destination, source))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "copy from %s into %s: dtype and shape must match",
                            parity_tensor_describe(source, a, sizeof a), parity_tensor_describe(destination, b, sizeof b));
    size_t bytes = parity_tensor_nbytes(source);
    bool source_cpu = source->device.type == PARITY_DEVICE_CPU;
    bool destination_cpu = destination->device.type == PARITY_DEVICE_CPU;
    if (source_cpu && destination_cpu) {
        if (parity_tensor_is_contiguous(source) && parity_tensor_is_contiguous(destination)) {
            if (bytes) memmove(destination->data, source->data, bytes);
        } else {
            size_t element = parity_dtype_size(source->dtype);
            for (int64_t i = 0; i < source->numel; i++)
                memcpy((char *)destination->data + parity_tensor_offset(destination, i) * (int64_t)element,
                       (const char *)source->data + parity_tensor_offset(source, i) * (int64_t)element, element);
        }
        return NULL;
    }
    if (!parity_tensor_is_contiguous(source) || !parity_tensor_is_contiguous(destination))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "copy between %s and %s needs contiguous tensors",
                            parity_tensor_describe(source, a, sizeof a), parity_tensor_describe(destination, b, sizeof b));
    if (bytes == 0) return NULL;
    if (source->device.type == PARITY_DEVICE_NPU || destination->device.type == PARITY_DEVICE_NPU)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "needs an Ascend NPU build");
    if (source_cpu)
        return parity_cuda_memcpy(destination->device.index, destination->data, source->data, bytes,
                                  PARITY_COPY_HOST_TO_DEVICE);
    if (destination_cpu)
        return parity_cuda_memcpy(source->device.index, destination->data, source->data, bytes,
                                  PARITY_COPY_DEVICE_TO_HOST);
    return parity_cuda_memcpy(destination->device.index, destination->data, source->data, bytes,
                              PARITY_COPY_DEVICE_TO_DEVICE);
}

// CPU dtype conversion between two tensors of the same shape; float <- float is one exact rounding.
static void convert_on_cpu(parity_tensor *destination, const parity_tensor *source) {
    for (int64_t i = 0; i < source->numel; i++) {
        int64_t from = parity_tensor_offset(source, i), to = parity_tensor_offset(destination, i);
        if (source->dtype == PARITY_I64 && destination->dtype == PARITY_I32)
            ((int32_t *)destination->data)[to] = (int32_t)((const int64_t *)source->data)[from];
        else if (source->dtype == PARITY_I64 && destination->dtype == PARITY_I64)
            ((int64_t *)destination->data)[to] = ((const int64_t *)source->data)[from];
        else
            store_element(destination->data, destination->dtype, to, load_element(source->data, source->dtype, from));
    }
}

parity_error *parity_tensor_to(parity_tensor *out, const parity_tensor *source, parity_device device, parity_dtype dtype) {
    if (parity_dtype_is_float(source->dtype) != parity_dtype_is_float(dtype) && !parity_dtype_is_float(dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "conversion from %s to %s would truncate", parity_dtype_name(source->dtype),
                            parity_dtype_name(dtype));
    PARITY_TRY(parity_tensor_alloc(out, dtype, device, source->ndim, source->shape));
    parity_error *error = NULL;
    if (source->dtype == dtype) {
        if (parity_tensor_is_contiguous(source) || source->device.type == PARITY_DEVICE_CPU) {
            error = parity_tensor_copy(out, source);
        } else {
            error = PARITY_ERROR(PARITY_ERROR_SHAPE, "copy of a non-contiguous GPU tensor");
        }
    } else if (source->device.type == PARITY_DEVICE_CUDA && device.type == PARITY_DEVICE_CUDA) {
        // Both on GPUs: convert with a device kernel (after moving the source to the target device).
        parity_tensor moved;
        memset(&moved, 0, sizeof moved);
        const parity_tensor *device_source = source;
        if (source->device.index != device.index) {
            error = parity_tensor_to(&moved, source, device, source->dtype);
            device_source = &moved;
        }
        // No step context here (exec.h): the kernel goes on the legacy default stream, ordered with
        // every context's stream.
        if (!error) error = parity_cuda_convert(NULL, out, device_source);
        parity_tensor_release(&moved);
    } else {
        // Convert on the host: stage the source there if needed, convert, then upload.
        parity_tensor host_source, host_result;
        memset(&host_source, 0, sizeof host_source);
        memset(&host_result, 0, sizeof host_result);
        const parity_tensor *cpu_source = source;
        if (source->device.type != PARITY_DEVICE_CPU) {
            error = parity_tensor_to(&host_source, source, PARITY_CPU, source->dtype);
            cpu_source = &host_source;
        }
        if (!error && device.type == PARITY_DEVICE_CPU) {
            convert_on_cpu(out, cpu_source);
        } else if (!error) {
            error = parity_tensor_alloc(&host_result, dtype, PARITY_CPU, source->ndim, source->shape);
            if (!error) {
                convert_on_cpu(&host_result, cpu_source);
                error = parity_tensor_copy(out, &host_result);
            }
        }
        parity_tensor_release(&host_source);
        parity_tensor_release(&host_result);
    }
    if (error) parity_tensor_release(out);
    return error;
}

parity_error *parity_tensor_convert(const parity_exec *exec, parity_tensor *out, const parity_tensor *source,
                                    parity_dtype dtype) {
    if (source->device.type != PARITY_DEVICE_CUDA || source->dtype == dtype)
        return parity_tensor_to(out, source, source->device, dtype);
    if (parity_dtype_is_float(source->dtype) && !parity_dtype_is_float(dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "conversion from %s to %s would truncate",
                            parity_dtype_name(source->dtype), parity_dtype_name(dtype));
    PARITY_TRY(parity_tensor_alloc(out, dtype, source->device, source->ndim, source->shape));
    parity_error *error = parity_cuda_convert(exec, out, source);
    if (error) parity_tensor_release(out);
    return error;
}

parity_error *parity_tensor_check_finite(const parity_tensor *tensor, const char *name) {
    if (!parity_dtype_is_float(tensor->dtype)) return NULL;
    parity_tensor host;
    memset(&host, 0, sizeof host);
    const parity_tensor *view = tensor;
    if (tensor->device.type != PARITY_DEVICE_CPU) {
        PARITY_TRY_CONTEXT(parity_tensor_to(&host, tensor, PARITY_CPU, tensor->dtype), "checking %s for NaN/Inf", name);
        view = &host;
    }
    parity_error *error = NULL;
    for (int64_t i = 0; i < view->numel; i++) {
        double value = parity_tensor_get(view, i);
        if (!isfinite(value)) {
            char shape[160];
            error = PARITY_ERROR(PARITY_ERROR_NUMERIC, "%s %s has %s at flat index %lld", name,
                                 parity_tensor_shape_string(tensor, shape, sizeof shape),
                                 isnan(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf", (long long)i);
            break;
        }
    }
    parity_tensor_release(&host);
    return error;
}

parity_error *parity_tensor_sum_of_squares(const parity_exec *exec, const parity_tensor *tensor, double *out) {
    *out = 0;
    char a[200];
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "sum of squares of %s: float tensors only",
                            parity_tensor_describe(tensor, a, sizeof a));
    if (tensor->device.type == PARITY_DEVICE_CUDA) {
        if (!parity_tensor_is_contiguous(tensor))
            return PARITY_ERROR(PARITY_ERROR_SHAPE, "sum of squares of %s: a CUDA tensor must be contiguous",
                                parity_tensor_describe(tensor, a, sizeof a));
        return parity_cuda_sum_of_squares(exec, tensor, out);
    }
    if (tensor->device.type != PARITY_DEVICE_CPU)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "sum of squares of %s: needs an Ascend NPU build",
                            parity_tensor_describe(tensor, a, sizeof a));
    double sum = 0;
    for (int64_t i = 0; i < tensor->numel; i++) {
        const double value = parity_tensor_get(tensor, i);
        sum += value * value;
    }
    *out = sum;
    return NULL;
}

parity_error *parity_tensor_sketch(const parity_exec *exec, const parity_tensor *tensor, const char *name,
                                   double out[PARITY_SKETCH_K]) {
    return parity_tensor_sketch_at(exec, tensor, name, 0, out);
}

parity_error *parity_tensor_sketch_at(const parity_exec *exec, const parity_tensor *tensor, const char *name, int64_t first,
                                      double out[PARITY_SKETCH_K]) {
    for (int j = 0; j < PARITY_SKETCH_K; j++) out[j] = 0;
    char a[200];
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "sketch of %s (%s): float tensors only", name,
                            parity_tensor_describe(tensor, a, sizeof a));
    const uint64_t name_hash = parity_philox_hash_name(name);
    if (tensor->device.type == PARITY_DEVICE_CUDA) {
        if (!parity_tensor_is_contiguous(tensor))
            return PARITY_ERROR(PARITY_ERROR_SHAPE, "sketch of %s (%s): a CUDA tensor must be contiguous", name,
                                parity_tensor_describe(tensor, a, sizeof a));
        if (first != 0)
            return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "sketch of %s (%s) from element %lld: CUDA tensors from 0 only", name,
                                parity_tensor_describe(tensor, a, sizeof a), (long long)first);
        return parity_cuda_sketch(exec, tensor, name_hash, out);
    }
    if (tensor->device.type != PARITY_DEVICE_CPU)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "sketch of %s (%s): needs an Ascend NPU build", name,
                            parity_tensor_describe(tensor, a, sizeof a));
    double sums[PARITY_SKETCH_K] = {0};
    if (first < 0)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "sketch of %s from element %lld", name, (long long)first);
    if (first != 0) { // a part of a larger tensor: the signs of its elements' places in the whole
        for (int64_t i = 0; i < tensor->numel; i++)
            parity_sketch_add(sums, parity_sketch_signs(name_hash, (uint64_t)(first + i)), parity_tensor_get(tensor, i));
        for (int j = 0; j < PARITY_SKETCH_K; j++) out[j] = sums[j];
        return NULL;
    }
    for (int64_t base = 0; base < tensor->numel; base += 4) { // four elements per Philox block
        parity_philox_block words = parity_sketch_sign_block(name_hash, (uint64_t)base >> 2);
        int64_t end = tensor->numel - base < 4 ? tensor->numel : base + 4;
        for (int64_t i = base; i < end; i++)
            parity_sketch_add(sums, words.word[i - base] & PARITY_SKETCH_SIGN_MASK, parity_tensor_get(tensor, i));
    }
    for (int j = 0; j < PARITY_SKETCH_K; j++) out[j] = sums[j];
    return NULL;
}

parity_error *parity_tensor_add_into(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source) {
    char a[200], b[200];
    if (!parity_tensor_same_shape(destination, source) || destination->dtype != source->dtype)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "adding %s into %s: dtype and shape must match",
                            parity_tensor_describe(source, a, sizeof a), parity_tensor_describe(destination, b, sizeof b));
    if (destination->device.type == PARITY_DEVICE_CUDA && parity_device_equal(destination->device, source->device))
        return parity_cuda_add_into(exec, destination, source);
    if (destination->device.type != PARITY_DEVICE_CPU || source->device.type != PARITY_DEVICE_CPU)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "adding %s into %s: both tensors must be on one device (cpu or cuda)",
                            parity_tensor_describe(source, a, sizeof a), parity_tensor_describe(destination, b, sizeof b));
    if (destination->dtype == PARITY_F64 && parity_tensor_is_contiguous(destination) && parity_tensor_is_contiguous(source)) {
        double *out = destination->data;
        const double *in = source->data;
        for (int64_t i = 0; i < destination->numel; i++) out[i] += in[i];
        return NULL;
    }
    for (int64_t i = 0; i < destination->numel; i++)
        parity_tensor_set(destination, i, parity_tensor_get(destination, i) + parity_tensor_get(source, i));
    return NULL;
}
