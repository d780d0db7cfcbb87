// exec.c: the execution context of exec.h over the CUDA door (cuda_api.h: streams, events,
// allocations) and the GEMM's handle (ops/core/cuda/blas.h). Device independent: a CPU-only build
// links the same code against cuda_stub.c, where creating a CUDA context reports that parity was
// built without CUDA.
#include "ops/core/exec.h"

#include <stdlib.h>

#include "ops/core/cuda/blas.h"
#include "ops/core/cuda_api.h"

// A buffer that grows and is reused (parity_exec_device_scratch / parity_exec_host_scratch).
typedef struct exec_buffer {
    void *data;
    size_t bytes;
} exec_buffer;

struct parity_exec_resources {
    exec_buffer device_scratch, host_scratch;
    void *blas_handle; // cublasHandle_t, NULL until the first GEMM
    parity_exec *comm; // the communication context, NULL until asked for
};

static bool on_cuda(const parity_exec *exec) { return exec->device.type == PARITY_DEVICE_CUDA; }

parity_error *parity_exec_create(parity_device device, parity_exec **out) {
    *out = NULL;
    char where[32];
    if (device.type != PARITY_DEVICE_CPU && device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "execution context on %s: needs an Ascend NPU build",
                            parity_device_format(device, where, sizeof where));
    if (device.type == PARITY_DEVICE_CUDA) {
        char reason[256] = "";
        int count = parity_cuda_device_count(reason, sizeof reason);
        if (device.index < 0 || device.index >= count)
            return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "execution context on %s: %s",
                                parity_device_format(device, where, sizeof where), count ? "no such device" : reason);
    }
    parity_exec *exec = calloc(1, sizeof *exec);
    parity_exec_resources *resources = calloc(1, sizeof *resources);
    if (!exec || !resources) {
        free(exec);
        free(resources);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "execution context");
    }
    exec->device = device;
    exec->resources = resources;
    if (device.type == PARITY_DEVICE_CUDA) {
        parity_error *error = parity_cuda_stream_create(device.index, &exec->stream);
        if (error) {
            parity_exec_destroy(exec);
            return parity_error_wrap(error, __FILE__, __LINE__, "execution context on %s",
                                     parity_device_format(device, where, sizeof where));
        }
    }
    *out = exec;
    return NULL;
}

static void free_buffer(const parity_exec *exec, exec_buffer *buffer, bool host) {
    if (!buffer->data) return;
    if (!on_cuda(exec)) free(buffer->data);
    else if (host) parity_cuda_host_free(buffer->data);
    else parity_cuda_free(exec->device.index, buffer->data);
    buffer->data = NULL;
    buffer->bytes = 0;
}

void parity_exec_destroy(parity_exec *exec) {
    if (!exec) return;
    parity_exec_resources *resources = exec->resources;
    if (exec->stream) parity_error_free(parity_exec_synchronize(exec)); // nothing queued may outlive its buffers
    if (resources) {
        parity_exec_destroy(resources->comm);
        free_buffer(exec, &resources->device_scratch, false);
        free_buffer(exec, &resources->host_scratch, true);
        if (resources->blas_handle) parity_cuda_blas_destroy(exec->device.index, resources->blas_handle);
        free(resources);
    }
    if (exec->stream) parity_cuda_stream_destroy(exec->device.index, exec->stream);
    free(exec);
}

parity_error *parity_exec_synchronize(const parity_exec *exec) {
    if (!on_cuda(exec)) return NULL;
    return parity_cuda_stream_synchronize(exec->device.index, exec->stream);
}

void *parity_exec_stream(const parity_exec *exec) { return exec ? exec->stream : NULL; }

// Grows `buffer` to at least `bytes` (doubling, so a run settles after a few calls).
static parity_error *grow(const parity_exec *exec, exec_buffer *buffer, bool host, size_t bytes, void **out) {
    *out = NULL;
    if (bytes > buffer->bytes || !buffer->data) {
        size_t size = buffer->bytes * 2 > bytes ? buffer->bytes * 2 : bytes;
        if (size < 256) size = 256;
        PARITY_TRY_CONTEXT(parity_exec_synchronize(exec), "growing an execution context's scratch");
        free_buffer(exec, buffer, host);
        void *data = NULL;
        if (!on_cuda(exec)) {
            data = malloc(size);
            if (!data) return PARITY_ERROR(PARITY_ERROR_MEMORY, "execution context scratch of %zu bytes", size);
        } else if (host) {
            PARITY_TRY(parity_cuda_host_alloc(size, &data));
        } else {
            PARITY_TRY(parity_cuda_malloc(exec->device.index, size, &data));
        }
        buffer->data = data;
        buffer->bytes = size;
    }
    *out = buffer->data;
    return NULL;
}

parity_error *parity_exec_device_scratch(const parity_exec *exec, size_t bytes, void **out) {
    return grow(exec, &exec->resources->device_scratch, false, bytes, out);
}

parity_error *parity_exec_host_scratch(const parity_exec *exec, size_t bytes, void **out) {
    return grow(exec, &exec->resources->host_scratch, true, bytes, out);
}

parity_error *parity_exec_blas_handle(const parity_exec *exec, void **out) {
    *out = NULL;
    char where[32];
    if (!on_cuda(exec))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuBLAS handle of an execution context on %s (CUDA only)",
                            parity_device_format(exec->device, where, sizeof where));
    if (!exec->resources->blas_handle)
        PARITY_TRY(parity_cuda_blas_create(exec->device.index, exec->stream, &exec->resources->blas_handle));
    *out = exec->resources->blas_handle;
    return NULL;
}

parity_error *parity_exec_comm(const parity_exec *exec, const parity_exec **out) {
    *out = NULL;
    if (!exec->resources->comm)
        PARITY_TRY_CONTEXT(parity_exec_create(exec->device, &exec->resources->comm), "communication context");
    *out = exec->resources->comm;
    return NULL;
}

parity_error *parity_exec_comm_stream(const parity_exec *exec, void **out) {
    *out = NULL;
    const parity_exec *comm;
    PARITY_TRY(parity_exec_comm(exec, &comm));
    *out = comm->stream;
    return NULL;
}

parity_error *parity_exec_wait(const parity_exec *waiter, const parity_exec *producer) {
    char a[32], b[32];
    if (!parity_device_equal(waiter->device, producer->device))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "execution context on %s cannot wait for one on %s",
                            parity_device_format(waiter->device, a, sizeof a),
                            parity_device_format(producer->device, b, sizeof b));
    if (!on_cuda(waiter) || waiter->stream == producer->stream) return NULL;
    return parity_cuda_stream_wait(waiter->device.index, waiter->stream, producer->stream);
}
