// cuda_rms_norm.cu: an example backend plugin (ops/plugin_api.h) that adds one CUDA RMSNorm backend,
// op "rms_norm", name "example_cuda", written from the op's contract (ops/rms_norm/rms_norm.h)
// alone; examples/cpu_rms_norm.c is the same backend on the CPU. Build it against an installed
// parity with examples/Makefile (`make -C examples cuda`); load it with
// `parity ... --plugin examples/build/example_cuda.so`.
//
// The math, over the last dimension (N rows of H elements; the weight w has H elements):
//   rstd  = 1 / sqrt(mean(x^2) + eps)                  one per row, saved for backward
//   x_hat = x * rstd
//   standard: y = w * dtype(x_hat)                      (Llama: weight * hidden.to(dtype))
//   offset:   y = (1 + w) * x_hat                        (Qwen3.5 / Qwen3-Next, weights start at 0)
// and its backward, with w_eff = w or 1 + w and g = dy * w_eff:
//   dx = rstd * (g - x_hat * mean(g * x_hat))            per row
//   dw = sum over rows of dy * x_hat                     per column
// Arithmetic and sums in f32 for bf16 and fp32 tensors, in f64 for fp64 (rstd in f32 from
// 1 / sqrt in f64, rounded once); each output element is rounded once, to nearest even, to
// its tensor's dtype, and the standard variant rounds x_hat to the dtype before the weight multiply,
// as the CPU one does. nvcc fuses a * b + c into FMAs (its default -fmad=true): fixed at compile
// time, so the rounding differs from the CPU's but not from run to run.
//
// Kernels (each beside its host launcher, which queues it on parity_exec_stream(exec)):
//   forward_kernel         one block per row: the row's sum of squares, rstd, y
//   input_gradient_kernel  one block per row: the row's sum of g * x_hat, then dx
//   weight_partial_kernel  dw, phase 1: thread (column j, chunk c) sums dy * x_hat over the rows of
//                          chunk c in row order into partial[c][j]
//   weight_finish_kernel   dw, phase 2: thread j sums partial[0..C)[j] in chunk order
// Every sum runs in an order fixed by the shape alone (block sums: a fixed shuffle tree; dw: no
// atomics), so the backend is bitwise reproducible run to run (PARITY_CAP_DETERMINISTIC).
//
// Built with -DEXAMPLE_WRONG this file is the deliberately wrong variant, under the same backend
// name. Its one bug: the weight gradient dw sums only the first half of the rows (phase 1 is given
// rows / 2 rows, as a wrong row split would do), so dw loses the terms of half the rows: each norm
// weight's gradient moves by up to half its size, far beyond any dtype's rounding, and the tolerance
// must fail every combo in fp64, fp32 and bf16. The forward and dx are correct.
//
// The CUDA runtime: this library carries its own copy (nvcc's default static cudart; Makefile
// says why). Tensor data of cuda tensors are device pointers of the device's primary context, and
// the step's stream is a driver stream: both are valid in this copy of the runtime as in parity's.
#include <cuda_runtime.h>

#include <stdint.h>

#include "ops/plugin_api.h"
#include "ops/rms_norm/rms_norm.h"

#ifdef EXAMPLE_WRONG
#define EXAMPLE_VARIANT "DELIBERATELY WRONG variant (dweight sums only the first half of the rows)"
#else
#define EXAMPLE_VARIANT "correct variant"
#endif

namespace {

// ---- dtypes: storage type, compute type, conversions (parity's exact ones, ops/core/dtype.h) ----

template <parity_dtype D> struct element;
template <> struct element<PARITY_F64> {
    typedef double storage;
    typedef double compute;
    static __device__ __forceinline__ double load(double v) { return v; }
    static __device__ __forceinline__ double store(double v) { return v; }
    static __device__ __forceinline__ double round(double v) { return v; }
};
template <> struct element<PARITY_F32> {
    typedef float storage;
    typedef float compute;
    static __device__ __forceinline__ float load(float v) { return v; }
    static __device__ __forceinline__ float store(float v) { return v; }
    static __device__ __forceinline__ float round(float v) { return v; }
};
template <> struct element<PARITY_BF16> {
    typedef uint16_t storage; // bf16 bit pattern
    typedef float compute;
    static __device__ __forceinline__ float load(uint16_t v) { return parity_bf16_to_f32(v); }
    static __device__ __forceinline__ uint16_t store(float v) { return parity_f32_to_bf16(v); }
    static __device__ __forceinline__ float round(float v) { return parity_bf16_to_f32(parity_f32_to_bf16(v)); }
};

// rstd, once per row: in f32 from 1 / sqrt in f64, rounded once (not rsqrtf, about 2 ulp off).
__device__ __forceinline__ float inverse_sqrt(float v) { return (float)(1.0 / sqrt((double)v)); }
__device__ __forceinline__ double inverse_sqrt(double v) { return 1.0 / sqrt(v); }

// The sum of `value` over the block, the same on every thread, in a fixed order (a shuffle tree in
// each warp, then one over the warps' sums). blockDim.x: a multiple of 32, at most 1024.
template <typename A>
__device__ A block_sum(A value, A *shared /* [32] */) {
    const unsigned all = 0xffffffffu;
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(all, value, offset);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = value;
    __syncthreads();
    if (warp == 0) {
        int warps = blockDim.x >> 5;
        value = lane < warps ? shared[lane] : A(0);
        for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(all, value, offset);
        if (lane == 0) shared[0] = value;
    }
    __syncthreads();
    A total = shared[0];
    __syncthreads(); // `shared` may be reused at once
    return total;
}

// ---- host-side helpers ----

const int row_threads = 256;      // threads of a row block
const int column_threads = 256;   // threads of a dw block (one column each)
const int64_t max_row_grid = 65535;
const int64_t max_chunks = 1024;  // dw: chunks of rows (gridDim.y)
const int64_t rows_per_chunk_min = 16;

parity_error *launch_error(const char *kernel) {
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "rms_norm example_cuda: launching %s: %s (%s)", kernel,
                            cudaGetErrorString(status), cudaGetErrorName(status));
    return NULL;
}

parity_error *runtime_error(cudaError_t status, const char *what) {
    if (status != cudaSuccess)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "rms_norm example_cuda: %s: %s (%s)", what, cudaGetErrorString(status),
                            cudaGetErrorName(status));
    return NULL;
}

// A contiguous tensor on `device` (NULL passes: an optional gradient).
parity_error *check_cuda_tensor(const char *name, const parity_tensor *tensor, parity_device device) {
    if (!tensor) return NULL;
    char where[32], expected[32];
    if (!parity_device_equal(tensor->device, device))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rms_norm example_cuda: %s is on %s, expected %s", name,
                            parity_device_format(tensor->device, where, sizeof where),
                            parity_device_format(device, expected, sizeof expected));
    if (!parity_tensor_is_contiguous(tensor))
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "rms_norm example_cuda: %s is not contiguous", name);
    return NULL;
}

parity_error *check_dtype(parity_dtype dtype) {
    if (dtype != PARITY_F64 && dtype != PARITY_F32 && dtype != PARITY_BF16)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "rms_norm example_cuda: %s is not supported (fp64, fp32, bf16)",
                            parity_dtype_name(dtype));
    return NULL;
}

// The device of the call, made current in this library's copy of the runtime.
parity_error *use_device(const parity_rms_norm_args *args, parity_device *out) {
    *out = args->input->device;
    if (out->type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rms_norm example_cuda: input is on %s, expected a cuda device",
                            parity_device_type_name(out->type));
    return runtime_error(cudaSetDevice(out->index), "cudaSetDevice");
}

unsigned row_grid(int64_t rows) { return (unsigned)(rows < max_row_grid ? rows : max_row_grid); }

// Calls body.template run<D>() for the call's dtype.
template <typename Body>
parity_error *dispatch(parity_dtype dtype, Body &body) {
    switch (dtype) {
    case PARITY_F64: return body.template run<PARITY_F64>();
    case PARITY_F32: return body.template run<PARITY_F32>();
    case PARITY_BF16: return body.template run<PARITY_BF16>();
    default: return check_dtype(dtype);
    }
}

// ---- forward ----

template <parity_dtype D>
__global__ void forward_kernel(const typename element<D>::storage *x,    // (N, H)
                               const typename element<D>::storage *w,    // (H)
                               typename element<D>::storage *y,          // (N, H)
                               typename element<D>::compute *rstd,       // (N)
                               int64_t rows, int64_t hidden, typename element<D>::compute eps, bool offset) {
    typedef element<D> E;
    typedef typename E::compute A;
    __shared__ A shared[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const typename E::storage *x_row = x + row * hidden;
        typename E::storage *y_row = y + row * hidden;
        A squares = A(0);
        for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
            A value = E::load(x_row[i]);
            squares += value * value;
        }
        squares = block_sum(squares, shared);
        A inverse = inverse_sqrt(squares / A(hidden) + eps);
        if (threadIdx.x == 0) rstd[row] = inverse;
        for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
            A x_hat = E::load(x_row[i]) * inverse;
            A weight = E::load(w[i]);
            A value = offset ? (A(1) + weight) * x_hat : weight * E::round(x_hat);
            y_row[i] = E::store(value);
        }
    }
}

struct forward_launch {
    const parity_exec *exec;
    const parity_rms_norm_args *args;
    parity_tensor *rstd;
    int64_t rows, hidden;

    template <parity_dtype D> parity_error *run() {
        typedef typename element<D>::storage S;
        typedef typename element<D>::compute A;
        if (rows == 0) return NULL;
        cudaStream_t stream = (cudaStream_t)parity_exec_stream(exec);
        (void)cudaGetLastError(); // an earlier, already reported error is not this launch's
        forward_kernel<D><<<row_grid(rows), row_threads, 0, stream>>>(
            (const S *)args->input->data, (const S *)args->weight->data, (S *)args->output->data, (A *)rstd->data,
            rows, hidden, (A)args->eps, args->variant == PARITY_RMS_NORM_OFFSET);
        return launch_error("forward_kernel");
    }
};

parity_error *example_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(check_dtype(args->input->dtype));
    parity_device device;
    PARITY_TRY(use_device(args, &device));
    PARITY_TRY(check_cuda_tensor("input", args->input, device));
    PARITY_TRY(check_cuda_tensor("weight", args->weight, device));
    PARITY_TRY(check_cuda_tensor("output", args->output, device));
    // Saved for backward: rstd of every row, in the compute precision, on the device (a parity
    // tensor from parity_tensor_alloc that parity_saved owns and frees after backward).
    parity_dtype compute = args->input->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    parity_tensor *rstd;
    const int64_t rstd_shape[1] = {rows}; // (PARITY_SHAPE's compound literals are C, not C++)
    PARITY_TRY(parity_saved_alloc(saved, &rstd, compute, device, 1, rstd_shape));
    forward_launch launch = {exec, args, rstd, rows, hidden};
    return dispatch(args->input->dtype, launch);
}

// ---- backward: dx ----

template <parity_dtype D>
__global__ void input_gradient_kernel(const typename element<D>::storage *x,     // (N, H)
                                      const typename element<D>::storage *w,     // (H)
                                      const typename element<D>::storage *dy,    // (N, H)
                                      const typename element<D>::compute *rstd,  // (N)
                                      typename element<D>::storage *dx,          // (N, H)
                                      int64_t rows, int64_t hidden, bool offset) {
    typedef element<D> E;
    typedef typename E::compute A;
    __shared__ A shared[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const typename E::storage *x_row = x + row * hidden, *dy_row = dy + row * hidden;
        A inverse = rstd[row];
        A dot = A(0); // sum over the row of g * x_hat
        for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
            A weight = E::load(w[i]);
            A g = E::load(dy_row[i]) * (offset ? A(1) + weight : weight);
            dot += g * (E::load(x_row[i]) * inverse);
        }
        A mean = block_sum(dot, shared) / A(hidden);
        for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
            A weight = E::load(w[i]);
            A g = E::load(dy_row[i]) * (offset ? A(1) + weight : weight);
            A x_hat = E::load(x_row[i]) * inverse;
            dx[row * hidden + i] = E::store(inverse * (g - x_hat * mean));
        }
    }
}

// ---- backward: dw, a deterministic two-phase column reduction ----

template <parity_dtype D>
__global__ void weight_partial_kernel(const typename element<D>::storage *x,    // (N, H)
                                      const typename element<D>::storage *dy,   // (N, H)
                                      const typename element<D>::compute *rstd, // (N)
                                      int64_t rows, int64_t hidden, int64_t rows_per_chunk,
                                      typename element<D>::compute *partial) {  // (chunks, H)
    typedef element<D> E;
    typedef typename E::compute A;
    int64_t column = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (column >= hidden) return;
    int64_t first = (int64_t)blockIdx.y * rows_per_chunk;
    int64_t last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
    A sum = A(0);
    for (int64_t row = first; row < last; row++) {
        int64_t at = row * hidden + column;
        sum += E::load(dy[at]) * (E::load(x[at]) * rstd[row]);
    }
    partial[(int64_t)blockIdx.y * hidden + column] = sum;
}

template <parity_dtype D>
__global__ void weight_finish_kernel(const typename element<D>::compute *partial, // (chunks, H)
                                     int64_t chunks, int64_t hidden,
                                     typename element<D>::storage *dw) {           // (H)
    typedef element<D> E;
    typedef typename E::compute A;
    int64_t column = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (column >= hidden) return;
    A sum = A(0);
    for (int64_t chunk = 0; chunk < chunks; chunk++) sum += partial[chunk * hidden + column];
    dw[column] = E::store(sum);
}

struct backward_launch {
    const parity_exec *exec;
    const parity_rms_norm_args *args;
    const parity_rms_norm_grads *grads;
    const parity_tensor *rstd;
    int64_t rows, hidden;

    template <parity_dtype D> parity_error *run() {
        typedef typename element<D>::storage S;
        typedef typename element<D>::compute A;
        cudaStream_t stream = (cudaStream_t)parity_exec_stream(exec);
        const S *x = (const S *)args->input->data, *dy = (const S *)grads->doutput->data;
        const A *inverse = (const A *)rstd->data;
        (void)cudaGetLastError(); // an earlier, already reported error is not these launches'
        if (grads->dinput && rows > 0) {
            input_gradient_kernel<D><<<row_grid(rows), row_threads, 0, stream>>>(
                x, (const S *)args->weight->data, dy, inverse, (S *)grads->dinput->data, rows, hidden,
                args->variant == PARITY_RMS_NORM_OFFSET);
            PARITY_TRY(launch_error("input_gradient_kernel"));
        }
        if (!grads->dweight) return NULL;
#ifdef EXAMPLE_WRONG
        int64_t dweight_rows = rows / 2; // THE BUG: the weight gradient stops halfway through the rows
#else
        int64_t dweight_rows = rows;
#endif
        // Chunks of at least rows_per_chunk_min rows, at most max_chunks of them: a function of the
        // shape alone, so the order of every sum is too.
        int64_t chunks = (dweight_rows + rows_per_chunk_min - 1) / rows_per_chunk_min;
        if (chunks > max_chunks) chunks = max_chunks;
        int64_t rows_per_chunk = chunks ? (dweight_rows + chunks - 1) / chunks : 0;
        unsigned column_blocks = (unsigned)((hidden + column_threads - 1) / column_threads);

        // partial[chunks][H]: the exec's device scratch, valid for work queued on its stream. A NULL
        // exec (the legacy default stream, outside a step) gets a tensor of its own instead.
        A *partial = NULL;
        parity_tensor own_scratch = {};
        if (chunks > 0) {
            size_t bytes = (size_t)chunks * (size_t)hidden * sizeof(A);
            if (exec) {
                void *scratch;
                PARITY_TRY(parity_exec_device_scratch(exec, bytes, &scratch));
                partial = (A *)scratch;
            } else {
                const int64_t shape[2] = {chunks, hidden};
                PARITY_TRY(parity_tensor_alloc(&own_scratch, D == PARITY_F64 ? PARITY_F64 : PARITY_F32,
                                               args->input->device, 2, shape));
                partial = (A *)own_scratch.data;
            }
            weight_partial_kernel<D><<<dim3(column_blocks, (unsigned)chunks), column_threads, 0, stream>>>(
                x, dy, inverse, dweight_rows, hidden, rows_per_chunk, partial);
            parity_error *error = launch_error("weight_partial_kernel");
            if (error) {
                parity_tensor_release(&own_scratch);
                return error;
            }
        }
        weight_finish_kernel<D><<<column_blocks, column_threads, 0, stream>>>(partial, chunks, hidden,
                                                                             (S *)grads->dweight->data);
        parity_error *error = launch_error("weight_finish_kernel");
        if (own_scratch.data) {
            // The kernels must be done with the scratch before it is freed.
            if (!error) error = runtime_error(cudaStreamSynchronize(stream), "waiting for the dweight kernels");
            parity_tensor_release(&own_scratch);
        }
        return error;
    }
};

parity_error *example_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                               const parity_rms_norm_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_check_grads(args, grads));
    PARITY_TRY(check_dtype(args->input->dtype));
    parity_device device;
    PARITY_TRY(use_device(args, &device));
    PARITY_TRY(check_cuda_tensor("input", args->input, device));
    PARITY_TRY(check_cuda_tensor("weight", args->weight, device));
    PARITY_TRY(check_cuda_tensor("doutput", grads->doutput, device));
    PARITY_TRY(check_cuda_tensor("dinput", grads->dinput, device));
    PARITY_TRY(check_cuda_tensor("dweight", grads->dweight, device));
    const parity_tensor *rstd;
    PARITY_TRY(parity_saved_get(saved, 0, &rstd));
    parity_dtype compute = args->input->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    if (rstd->dtype != compute || rstd->ndim != 1 || rstd->shape[0] != rows)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "rms_norm example_cuda: the saved rstd is not the (%lld) %s forward made",
                            (long long)rows, parity_dtype_name(compute));
    PARITY_TRY(check_cuda_tensor("saved rstd", rstd, device));
    if (!grads->dinput && !grads->dweight) return NULL;
    backward_launch launch = {exec, args, grads, rstd, rows, hidden};
    return dispatch(args->input->dtype, launch);
}

const parity_rms_norm_kernels example_kernels = {example_forward, example_backward};

} // namespace

// ---- the plugin's entry points (C linkage) ----

extern "C" {

PARITY_PLUGIN_DEFINE_VERSION()

PARITY_PLUGIN_EXPORT parity_error *parity_plugin_register(void) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM;
    backend.name = "example_cuda";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_DTYPE_BIT(PARITY_F64) | PARITY_DTYPE_BIT(PARITY_F32) | PARITY_DTYPE_BIT(PARITY_BF16);
    backend.capabilities = PARITY_CAP_OFFSET_WEIGHT | PARITY_CAP_DETERMINISTIC; // every sum in a fixed order
    backend.min_compute_capability = 80; // built for sm_80 and sm_90 (plus compute_90 PTX)
    backend.probe = NULL;
    backend.kernels = &example_kernels;
    backend.description = "examples/cuda_rms_norm.cu, " EXAMPLE_VARIANT ": RMSNorm (standard and (1 + w) offset) "
                          "on the GPU, f64/f32/bf16, deterministic dweight";
    backend.origin = NULL; // parity sets "plugin PATH"
    return parity_registry_add(&backend);
}

} // extern "C"
