// rms_statistics.cuh: the RMSNorm row math of rms_statistics.h on the device, for one row per
// block (blockDim.x a multiple of 32), shared by the CUDA eager norms (rms_norm, rms_norm_gated):
//   inverse = rsqrt(mean(x^2) + eps)      squares summed in the compute precision in a fixed tree
//                                         order; mean + eps and 1 / sqrt in f64, rounded once
//   dx      = inverse * (g - x_hat * mean(g * x_hat)),  x_hat = x * inverse, g = dloss / dx_hat
// For .cu files only.
#ifndef PARITY_RMS_STATISTICS_CUH
#define PARITY_RMS_STATISTICS_CUH

#include "ops/core/cuda/kernel_math.cuh"

namespace parity_cuda {

// Every thread of the block gets the row's inverse RMS. `scratch` holds 32 compute values.
template <parity_dtype D>
__device__ typename scalar<D>::compute rms_inverse_row(const typename scalar<D>::storage *x_row, // (H)
                                                       int64_t hidden, double eps, typename scalar<D>::compute *scratch) {
    using C = typename scalar<D>::compute;
    C partial = 0;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        C value = scalar<D>::load(x_row[i]);
        partial = partial + mul_rn(value, value);
    }
    C mean = block_sum(partial, scratch) / C(hidden);
    return to_compute<D>(1.0 / sqrt((double)to_compute<D>((double)mean + eps)));
}

// Writes dx for one row; g_of(i) gives g[i] in the compute precision.
template <parity_dtype D, typename GradientOf>
__device__ void rms_input_gradient_row(const typename scalar<D>::storage *x_row, // (H)
                                       int64_t hidden, typename scalar<D>::compute inverse, GradientOf g_of,
                                       typename scalar<D>::storage *dx_row,      // (H)
                                       typename scalar<D>::compute *scratch) {
    using C = typename scalar<D>::compute;
    C partial = 0; // sum(g * x_hat)
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
        partial = partial + mul_rn(g_of(i), mul_rn(scalar<D>::load(x_row[i]), inverse));
    C mean_dot = block_sum(partial, scratch) / C(hidden);
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        C x_hat = mul_rn(scalar<D>::load(x_row[i]), inverse);
        dx_row[i] = scalar<D>::store(mul_rn(inverse, g_of(i) - mul_rn(x_hat, mean_dot)));
    }
}

// One block per row, at most 4 * 65535 blocks (kernels loop over rows).
inline unsigned rms_row_grid(int64_t rows) {
    return (unsigned)(rows < 65535 * 4 ? (rows > 0 ? rows : 1) : 65535 * 4);
}

static const int rms_row_threads = 256;

} // namespace parity_cuda

#endif
