// cuda_runtime.cu: the CUDA door (cuda_api.h) over the CUDA runtime: device discovery, allocation,
// copies, streams and events. Every call checks its status and returns a parity error naming the call.
#include <dlfcn.h>
#include <stdio.h>

#include "ops/core/cuda/cuda_check.h"

extern "C" {
#include "ops/core/cuda_api.h"
}

extern "C" bool parity_cuda_built(void) { return true; }

// Why cudaGetDeviceCount failed, in words a user can act on. The runtime says "CUDA driver version is
// insufficient for CUDA runtime version" also when there is no driver at all: when libcuda.so.1 cannot
// be loaded, that is what is said instead.
static void describe_no_device(cudaError_t status, char *reason, size_t reason_size) {
    if (status == cudaErrorInsufficientDriver) {
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!driver) {
            const char *why = dlerror();
            snprintf(reason, reason_size, "no CUDA device present (no CUDA driver: %s)",
                     why ? why : "libcuda.so.1 cannot be loaded");
            return;
        }
        dlclose(driver);
    } else if (status == cudaErrorNoDevice) {
        snprintf(reason, reason_size, "no CUDA device present (the CUDA driver sees no device)");
        return;
    }
    snprintf(reason, reason_size, "no CUDA device present (%s)", cudaGetErrorString(status));
}

extern "C" int parity_cuda_runtime_device_count(char *reason, size_t reason_size) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        if (reason && reason_size) describe_no_device(status, reason, reason_size);
        cudaGetLastError(); // clear the sticky-free error state
        return 0;
    }
    if (count == 0 && reason && reason_size) snprintf(reason, reason_size, "no CUDA device present");
    return count;
}

extern "C" parity_error *parity_cuda_device_info(int index, parity_device_info *info) {
    cudaDeviceProp properties;
    PARITY_CUDA_TRY(cudaGetDeviceProperties(&properties, index));
    info->device.type = PARITY_DEVICE_CUDA;
    info->device.index = index;
    snprintf(info->name, sizeof info->name, "%s", properties.name);
    info->compute_capability = properties.major * 10 + properties.minor;
    info->total_memory = properties.totalGlobalMem;
    info->multiprocessors = properties.multiProcessorCount;
    info->l2_cache_bytes = (size_t)properties.l2CacheSize;
    return NULL;
}

// Device memory is stream-ordered (cudaMallocAsync / cudaFreeAsync) on the legacy default stream,
// from the device's default pool with its release threshold at the maximum, so freed memory stays in
// the pool for the next allocation. Why: cudaFree waits for the whole device, and cudaMalloc of a
// fresh block is slow; a step makes and frees hundreds of tensors, so with them the host never ran
// ahead of the GPU and every launch's latency showed in the step time. Why the legacy stream: every
// stream parity makes is a blocking stream (cudaStreamCreate), ordered with the legacy one, so a free
// queued there runs after every kernel queued before it on any of them, and an allocation's memory is
// never handed out while a kernel queued earlier still reads it. A device without memory pools gets
// plain cudaMalloc / cudaFree (the same memory, only slower).
enum { POOL_UNKNOWN = 0, POOL_READY, POOL_ABSENT, POOL_MAX_DEVICES = 64 };
static int pool_state[POOL_MAX_DEVICES];

static parity_error *prepare_pool(int device_index, bool *pooled) {
    *pooled = false;
    if (device_index >= POOL_MAX_DEVICES) return NULL;
    int state = __atomic_load_n(&pool_state[device_index], __ATOMIC_ACQUIRE);
    if (state == POOL_UNKNOWN) {
        int supported = 0;
        PARITY_CUDA_TRY(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device_index));
        state = POOL_ABSENT;
        if (supported) {
            cudaMemPool_t pool;
            PARITY_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device_index));
            unsigned long long keep_everything = ~0ull;
            PARITY_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
            state = POOL_READY;
        }
        __atomic_store_n(&pool_state[device_index], state, __ATOMIC_RELEASE); // a race sets the same value twice
    }
    *pooled = state == POOL_READY;
    return NULL;
}

extern "C" parity_error *parity_cuda_malloc(int device_index, size_t bytes, void **out) {
    *out = NULL;
    char reason[256];
    int count = parity_cuda_runtime_device_count(reason, sizeof reason);
    if (device_index < 0 || device_index >= count)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "cannot allocate on cuda:%d: %s", device_index,
                            count ? "no such device" : reason);
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    bool pooled;
    PARITY_TRY(prepare_pool(device_index, &pooled));
    cudaError_t status = pooled ? cudaMallocAsync(out, bytes ? bytes : 1, cudaStreamLegacy) : cudaMalloc(out, bytes ? bytes : 1);
    if (status != cudaSuccess) {
        cudaGetLastError();
        *out = NULL;
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s of %zu bytes on cuda:%d failed: %s",
                            pooled ? "cudaMallocAsync" : "cudaMalloc", bytes, device_index, cudaGetErrorString(status));
    }
    return NULL;
}

extern "C" void parity_cuda_free(int device_index, void *pointer) {
    if (!pointer) return;
    cudaSetDevice(device_index);
    bool pooled = false;
    parity_error *error = prepare_pool(device_index, &pooled); // known since the allocation
    if (error) parity_error_free(error);
    if (pooled) cudaFreeAsync(pointer, cudaStreamLegacy);
    else cudaFree(pointer);
}

extern "C" parity_error *parity_cuda_memset_zero(int device_index, void *pointer, size_t bytes) {
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    PARITY_CUDA_TRY(cudaMemset(pointer, 0, bytes));
    return NULL;
}

extern "C" parity_error *parity_cuda_memcpy(int device_index, void *destination, const void *source, size_t bytes,
                                            parity_copy_direction direction) {
    static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice};
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    PARITY_CUDA_TRY(cudaMemcpy(destination, source, bytes, kinds[direction]));
    return NULL;
}

extern "C" parity_error *parity_cuda_synchronize(int device_index) {
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    PARITY_CUDA_TRY(cudaDeviceSynchronize());
    return NULL;
}

extern "C" parity_error *parity_cuda_host_alloc(size_t bytes, void **out) {
    *out = NULL;
    cudaError_t status = cudaMallocHost(out, bytes ? bytes : 1);
    if (status != cudaSuccess) {
        cudaGetLastError();
        *out = NULL;
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "cudaMallocHost of %zu bytes failed: %s", bytes, cudaGetErrorString(status));
    }
    return NULL;
}

extern "C" void parity_cuda_host_free(void *pointer) {
    if (pointer) cudaFreeHost(pointer);
}

extern "C" parity_error *parity_cuda_stream_create(int device_index, void **out) {
    *out = NULL;
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    cudaStream_t stream;
    PARITY_CUDA_TRY(cudaStreamCreate(&stream)); // blocking: ordered with the legacy default stream
    *out = stream;
    return NULL;
}

extern "C" void parity_cuda_stream_destroy(int device_index, void *stream) {
    if (!stream) return;
    cudaSetDevice(device_index);
    cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" parity_error *parity_cuda_stream_synchronize(int device_index, void *stream) {
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    PARITY_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream));
    return NULL;
}

extern "C" parity_error *parity_cuda_stream_wait(int device_index, void *waiter, void *producer) {
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    cudaEvent_t event;
    PARITY_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    cudaError_t status = cudaEventRecord(event, (cudaStream_t)producer);
    if (status == cudaSuccess) status = cudaStreamWaitEvent((cudaStream_t)waiter, event, 0);
    cudaEventDestroy(event); // released once the wait no longer needs it
    if (status != cudaSuccess)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "ordering two streams on cuda:%d with an event: %s", device_index,
                            cudaGetErrorString(status));
    return NULL;
}

extern "C" void parity_cuda_versions(char *runtime, size_t runtime_size, char *driver, size_t driver_size) {
    int runtime_version = 0, driver_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    cudaDriverGetVersion(&driver_version);
    if (runtime && runtime_size)
        snprintf(runtime, runtime_size, "%d.%d", runtime_version / 1000, (runtime_version % 1000) / 10);
    if (driver && driver_size) {
        if (driver_version) snprintf(driver, driver_size, "%d.%d", driver_version / 1000, (driver_version % 1000) / 10);
        else driver[0] = '\0';
    }
}
