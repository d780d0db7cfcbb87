// fla.cu: gated RMSNorm "fla" on CUDA (flash-linear-attention's FusedRMSNormGated, Qwen3.5's
// default): y = (w * x_hat) * silu(gate) in one pass each way instead of eager's separate norm,
// activation and product kernels.
//
// Two row layouts, chosen from D and the dtype only (never from the number of rows, so a row's sums
// run in one order whatever batch it is in):
//
//   warp rows (rows of 16-byte vectors that fit one warp: D a multiple of 16 bytes' elements and at most
//   64 vectors, i.e. D <= 512 in bf16, <= 256 in f32, <= 128 in f64; Qwen3.5's D = 128 is the case this
//   is for). A row belongs to a group of LANES = 8, 16 or 32 lanes of one warp, each lane holding
//   ITEMS = 1 or 2 vectors of 16 bytes (column (i * LANES + lane) * VEC); a warp holds 32 / LANES rows
//   at once. At D = 128 bf16 a row is 256 bytes = 16 lanes x one 16-byte load, so one warp-wide load
//   instruction moves 512 contiguous bytes (two rows) with every lane busy. The row's sums (sum of x^2
//   forward, <g, x_hat> backward) are a lane's own elements in order, then a butterfly over the group's
//   lanes (__shfl_xor, offsets LANES/2 .. 1): no shared memory and no __syncthreads anywhere per row.
//     forward:  each warp takes 2 x (32 / LANES) consecutive rows (one 16-byte vector per lane: 2 rows
//               per lane) and issues every load of x and gate for them before its first sum, so a lane
//               has 4 independent 16-byte loads in flight (64 bytes; 2 KiB a warp, ~64 KiB an SM at 32
//               resident warps, twice what Little's law asks of HBM3e at ~4.8 TB/s and ~1 us latency
//               over 132 SMs: ~29 KiB an SM). w (D elements) is read once per lane, before the rows.
//               Bytes per row at D = 128 bf16: 256 x, 256 gate read, 256 y written, 4 (inverse rms):
//               772, of which 768 are the bench's count (3 N D + D elements).
//               The old layout (one 32-thread group per row, 16 lanes idle, gate read only after the
//               row's sum, so two dependent memory trips per row and 16 KiB an SM in flight) reached
//               a third of the copy rate; this one keeps the memory system busy with all lanes. The
//               arithmetic (silu's expf and IEEE division: ~30 instructions an element forward, ~45
//               backward) is estimated at about 2/3 of the memory time at the copy rate, hidden behind
//               the loads of the other resident warps.
//     backward: a grid of about as many blocks as are resident (every block walks a contiguous range
//               of rows, 2 x (32 / LANES) rows a warp per step, their x, gate and dy loads (6 x 16
//               bytes a lane) issued before the row sums: ~72 KiB an SM at 24 resident warps); dx and
//               dgate are written from that one read (g, rounded to the storage dtype as autograd keeps
//               it, stays in registers in storage form, and x_hat is recomputed from x for dx).
//               Each lane keeps its columns' share of dw in registers over all its rows; at the end the
//               warp's groups are added by a butterfly over the groups (offsets LANES .. 16), the
//               block's warps in warp order through shared memory, giving one partial row per block,
//               and the partials are summed over blocks in a fixed order by sum_partials (fused_rows.cuh).
//               No atomics: the result is bitwise the same run to run (PARITY_CAP_DETERMINISTIC) on a
//               device (the number of blocks, hence dw's order of sums, is a function of the number of
//               rows and the device's multiprocessor count and occupancy).
//               Bytes per row at D = 128 bf16: 3 x 256 read (x, gate, dy), 2 x 256 written (dx, dgate),
//               4 (inverse rms) read; dw costs a (blocks, D) f32 partial, ~200 KiB at 262144 rows.
//
//   block rows (every other D: D odd, not a multiple of the 16-byte width, or longer): one row group of
//   threads per row (the row layout of fused_rows.cuh, a multiple of 32 threads), sums through
//   group_sum; backward walks row ranges per block, dw partials through store_block_partial.
//
// Rounding follows the eager reference (HF Qwen3_5RMSNormGated): x_hat rounded to the input dtype,
// h = w * x_hat rounded, y = h * silu(float(gate)); backward in the compute precision with dh, g and
// the dw terms rounded where autograd stores them. silu uses the compute type's exp (expf for
// f32/bf16), not the correctly rounded one of the CPU reference. Both layouts do the same per-element
// arithmetic; only the order of the row sums and of dw's sums differs between them.
#include <algorithm>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/core/cpu_math.h"
#include "ops/registry.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
}

using namespace parity_fused;

namespace {

const char backend_name[] = "fla";

template <typename C> __device__ __forceinline__ C sigmoid_of(C x) { return C(1) / (C(1) + exp(-x)); }

// ---- the per-element math, shared by both layouts ----

// y of one element from x, the row's inverse rms, w and gate (compute precision).
template <parity_dtype D>
__device__ __forceinline__ typename element<D>::compute gated_output(typename element<D>::compute x,
                                                                     typename element<D>::compute inverse,
                                                                     typename element<D>::compute w,
                                                                     typename element<D>::compute gate) {
    using C = typename element<D>::compute;
    const C x_hat = round_storage<D>(x * inverse);
    const C h = round_storage<D>(w * x_hat);
    return h * (gate * sigmoid_of(gate));
}

// One element's backward: g = dloss / dx_hat (rounded as autograd stores it), dgate, and its dw term.
template <parity_dtype D>
__device__ __forceinline__ void gated_gradients(typename element<D>::compute x_hat, typename element<D>::compute w,
                                                typename element<D>::compute gate, typename element<D>::compute dy,
                                                typename element<D>::compute &g, typename element<D>::compute &dgate,
                                                typename element<D>::compute &dweight_term) {
    using C = typename element<D>::compute;
    const C x_hat_stored = round_storage<D>(x_hat);
    const C h = round_storage<D>(w * x_hat_stored);
    const C sigmoid = sigmoid_of(gate);
    const C activation = gate * sigmoid;
    const C dh = round_storage<D>(dy * activation);
    const C dactivation = dy * h;
    dgate = dactivation * sigmoid * (C(1) + gate * (C(1) - sigmoid));
    dweight_term = round_storage<D>(dh * x_hat_stored);
    g = round_storage<D>(dh * w);
}

// ---- warp rows: a row in LANES lanes of one warp (see the header) ----

constexpr int warp_rows_threads = 256; // 8 warps a block
constexpr int warp_rows_warps = warp_rows_threads / 32;

// Rows a lane group holds at once: 2 when a lane holds one vector of a row, else 1 (about 4 or 6
// 16-byte loads in flight a lane, forward and backward).
template <int ITEMS> __host__ __device__ constexpr int warp_rows_unroll() { return ITEMS == 1 ? 2 : 1; }

// Resident blocks of 256 threads a multiprocessor is built for, i.e. the register budget: 64 a thread
// forward (32 warps an SM); backward 80 with one vector a lane (bf16 at D = 128 takes ~93 unbounded,
// 2 blocks; 80 gives 3, 24 warps with 6 16-byte loads each in flight, for 8 bytes spilled to L1),
// 128 with two.
constexpr int warp_rows_forward_blocks = 4;
template <int ITEMS> constexpr int warp_rows_backward_blocks() { return ITEMS == 1 ? 3 : 2; }

// The sum over this lane's group of LANES consecutive lanes (a butterfly, offsets LANES/2 .. 1):
// every lane of the group gets the same bits. Every lane of the warp must call it.
template <int LANES, typename T> __device__ __forceinline__ T lanes_sum(T value) {
#pragma unroll
    for (int offset = LANES / 2; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

struct warp_layout {
    int lanes; // LANES: 8, 16 or 32
    int items; // ITEMS: 16-byte vectors a lane holds of a row, 1 or 2
};

// The warp-rows layout for rows of `hidden` elements (a function of hidden and the dtype only); false
// when the row is not whole 16-byte vectors or needs more than 64 of them (the block-rows layout).
bool warp_layout_for(int64_t hidden, int full_width, warp_layout *out) {
    if (hidden <= 0 || hidden % full_width != 0) return false;
    const int64_t vectors = hidden / full_width;
    if (vectors > 64) return false;
    *out = vectors <= 8 ? warp_layout{8, 1} : vectors <= 16 ? warp_layout{16, 1} : vectors <= 32 ? warp_layout{32, 1}
                                                                                                : warp_layout{32, 2};
    return true;
}

// Calls fn(integral_constant<LANES>, integral_constant<ITEMS>) for the layout.
template <typename Fn> auto dispatch_warp_layout(const warp_layout &layout, Fn &&fn) {
    using one = std::integral_constant<int, 1>;
    if (layout.items == 2) return fn(std::integral_constant<int, 32>{}, std::integral_constant<int, 2>{});
    switch (layout.lanes) {
    case 8: return fn(std::integral_constant<int, 8>{}, one{});
    case 16: return fn(std::integral_constant<int, 16>{}, one{});
    default: return fn(std::integral_constant<int, 32>{}, one{});
    }
}

// Warp w of the grid takes rows [w R, (w + 1) R), R = (32 / LANES) x UNROLL, as UNROLL steps u of
// 32 / LANES consecutive rows (one warp-wide load instruction covers a step: contiguous memory); lane
// t of group `group` holds the vectors at column (i * LANES + t) * VEC of row w R + u GROUPS + group.
template <parity_dtype D, int LANES, int ITEMS>
__global__ void __launch_bounds__(warp_rows_threads, warp_rows_forward_blocks)
    warp_rows_forward_kernel(const typename element<D>::storage *__restrict__ x,      // (N, D)
                             const typename element<D>::storage *__restrict__ gate,   // (N, D)
                             const typename element<D>::storage *__restrict__ weight, // (D)
                             typename element<D>::storage *__restrict__ y,            // (N, D)
                             typename element<D>::compute *__restrict__ inverse_rms,  // (N)
                             int64_t rows, int64_t hidden, typename element<D>::compute eps, bool vectorized) {
    using C = typename element<D>::compute;
    constexpr int VEC = (int)(16 / sizeof(typename element<D>::storage)); // full_vector<D>()
    constexpr int GROUPS = 32 / LANES, UNROLL = warp_rows_unroll<ITEMS>();
    const int lane = threadIdx.x & 31, group = lane / LANES, t = lane % LANES;
    const int64_t warp = (int64_t)blockIdx.x * warp_rows_warps + (threadIdx.x >> 5);
    const int64_t first = warp * (GROUPS * UNROLL) + group;

    // every load of the warp's rows first (x, gate), then the sums: 2 x UNROLL x ITEMS loads in flight
    raw_vector<D, VEC> xs[UNROLL][ITEMS], gs[UNROLL][ITEMS];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const int64_t row = first + (int64_t)u * GROUPS;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = (int64_t)(i * LANES + t) * VEC;
            const bool ok = row < rows && column < hidden;
            xs[u][i] = ok ? load_raw<D, VEC>(x + row * hidden + column, vectorized) : zero_raw<D, VEC>();
            gs[u][i] = ok ? load_raw<D, VEC>(gate + row * hidden + column, vectorized) : zero_raw<D, VEC>();
        }
    }
    C w[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = (int64_t)(i * LANES + t) * VEC;
        if (column < hidden) {
            load_values<D, VEC>(weight + column, vectorized, w[i]);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; j++) w[i][j] = 0;
        }
    }
    C inverse[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        C sum_squares = 0;
#pragma unroll
        for (int i = 0; i < ITEMS; i++)
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const C value = element<D>::load(xs[u][i].v[j]);
                sum_squares += value * value;
            }
        sum_squares = lanes_sum<LANES>(sum_squares);
        inverse[u] = C(1) / sqrt(sum_squares / C(hidden) + eps);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const int64_t row = first + (int64_t)u * GROUPS;
        if (row >= rows) continue;
        if (t == 0) inverse_rms[row] = inverse[u];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = (int64_t)(i * LANES + t) * VEC;
            if (column >= hidden) continue;
            C out[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++)
                out[j] = gated_output<D>(element<D>::load(xs[u][i].v[j]), inverse[u], w[i][j],
                                         element<D>::load(gs[u][i].v[j]));
            store_values<D, VEC>(y + row * hidden + column, vectorized, out);
        }
    }
}

// Block b walks rows [b * rows_per_block, (b + 1) * rows_per_block) (rows_per_block a multiple of
// the block's step, 8 warps x (32 / LANES) x UNROLL rows) in steps; in each step warp w takes the
// step's rows [w R, (w + 1) R) as the forward does. dweight_partial[b] gets the block's dw (NULL:
// no dw); dinput / dgate NULL: not written.
template <parity_dtype D, int LANES, int ITEMS>
__global__ void __launch_bounds__(warp_rows_threads, warp_rows_backward_blocks<ITEMS>())
    warp_rows_backward_kernel(const typename element<D>::storage *__restrict__ x,          // (N, D)
                              const typename element<D>::storage *__restrict__ gate,       // (N, D)
                              const typename element<D>::storage *__restrict__ weight,     // (D)
                              const typename element<D>::storage *__restrict__ doutput,    // (N, D)
                              const typename element<D>::compute *__restrict__ inverse_rms, // (N)
                              typename element<D>::storage *__restrict__ dinput,           // (N, D) or NULL
                              typename element<D>::storage *__restrict__ dgate,            // (N, D) or NULL
                              typename element<D>::compute *__restrict__ dweight_partial,  // (blocks, D) or NULL
                              int64_t rows, int64_t hidden, int64_t rows_per_block, bool vectorized) {
    using C = typename element<D>::compute;
    constexpr int VEC = (int)(16 / sizeof(typename element<D>::storage)); // full_vector<D>()
    constexpr int GROUPS = 32 / LANES, UNROLL = warp_rows_unroll<ITEMS>();
    constexpr int WARP_ROWS = GROUPS * UNROLL, STEP = warp_rows_warps * WARP_ROWS, WIDTH = LANES * ITEMS * VEC;
    __shared__ C combined[warp_rows_warps][WIDTH];
    const int lane = threadIdx.x & 31, group = lane / LANES, t = lane % LANES, warp = threadIdx.x >> 5;
    const int64_t first = (int64_t)blockIdx.x * rows_per_block;
    const int64_t last = first + rows_per_block < rows ? first + rows_per_block : rows;

    C w[ITEMS][VEC], dweight[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = (int64_t)(i * LANES + t) * VEC;
        if (column < hidden) {
            load_values<D, VEC>(weight + column, vectorized, w[i]);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; j++) w[i][j] = 0;
        }
#pragma unroll
        for (int j = 0; j < VEC; j++) dweight[i][j] = 0;
    }

    for (int64_t step = first; step < last; step += STEP) {
        const int64_t warp_first = step + (int64_t)warp * WARP_ROWS + group;
        raw_vector<D, VEC> xs[UNROLL][ITEMS], gs[UNROLL][ITEMS], dys[UNROLL][ITEMS];
        C inverse[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int64_t row = warp_first + (int64_t)u * GROUPS;
            const bool active = row < last;
            inverse[u] = active ? inverse_rms[row] : C(0);
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = (int64_t)(i * LANES + t) * VEC;
                const bool ok = active && column < hidden;
                const int64_t at = row * hidden + column;
                xs[u][i] = ok ? load_raw<D, VEC>(x + at, vectorized) : zero_raw<D, VEC>();
                gs[u][i] = ok ? load_raw<D, VEC>(gate + at, vectorized) : zero_raw<D, VEC>();
                dys[u][i] = ok ? load_raw<D, VEC>(doutput + at, vectorized) : zero_raw<D, VEC>();
            }
        }
        // g (dloss / dx_hat) is rounded to the storage dtype, so it is kept in storage form (exact);
        // x_hat is recomputed from x for dx (the same product, the same bits)
        raw_vector<D, VEC> gvals[UNROLL][ITEMS];
        C dot[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int64_t row = warp_first + (int64_t)u * GROUPS;
            dot[u] = 0;
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = (int64_t)(i * LANES + t) * VEC;
                const bool ok = row < last && column < hidden;
                C dgate_out[VEC];
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const C x_hat = element<D>::load(xs[u][i].v[j]) * inverse[u];
                    C g, term;
                    gated_gradients<D>(x_hat, w[i][j], element<D>::load(gs[u][i].v[j]),
                                       element<D>::load(dys[u][i].v[j]), g, dgate_out[j], term);
                    if (ok) dweight[i][j] += term;
                    gvals[u][i].v[j] = element<D>::store(g);
                    dot[u] += g * x_hat;
                }
                if (ok && dgate) store_values<D, VEC>(dgate + row * hidden + column, vectorized, dgate_out);
            }
            dot[u] = lanes_sum<LANES>(dot[u]);
        }
        if (dinput) {
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                const int64_t row = warp_first + (int64_t)u * GROUPS;
                if (row >= last) continue;
                const C mean_dot = dot[u] / C(hidden);
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                    const int64_t column = (int64_t)(i * LANES + t) * VEC;
                    if (column >= hidden) continue;
                    C dx[VEC];
#pragma unroll
                    for (int j = 0; j < VEC; j++) {
                        const C x_hat = element<D>::load(xs[u][i].v[j]) * inverse[u];
                        dx[j] = inverse[u] * (element<D>::load(gvals[u][i].v[j]) - x_hat * mean_dot);
                    }
                    store_values<D, VEC>(dinput + row * hidden + column, vectorized, dx);
                }
            }
        }
    }
    if (!dweight_partial) return; // the same for every thread of the block
    // the warp's groups (butterfly over the groups: the same bits in each), then the warps in order
#pragma unroll
    for (int i = 0; i < ITEMS; i++)
#pragma unroll
        for (int j = 0; j < VEC; j++)
#pragma unroll
            for (int offset = LANES; offset < 32; offset <<= 1)
                dweight[i][j] += __shfl_xor_sync(0xffffffffu, dweight[i][j], offset);
    if (group == 0) {
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int column = (i * LANES + t) * VEC;
#pragma unroll
            for (int j = 0; j < VEC; j++) combined[warp][column + j] = dweight[i][j];
        }
    }
    __syncthreads();
    C *partial = dweight_partial + (int64_t)blockIdx.x * hidden;
    for (int column = threadIdx.x; column < hidden; column += warp_rows_threads) {
        C sum = combined[0][column];
        for (int w = 1; w < warp_rows_warps; w++) sum += combined[w][column];
        partial[column] = sum;
    }
}

// ---- block rows: a row in a group of whole warps (the row layout of fused_rows.cuh) ----

// Block-size bounds matching the launches (row layouts of fused_rows.cuh): forward layouts of up to
// 2 accesses run in blocks of <= 256 threads, backward layouts of 1 access in blocks of <= 512.
template <int ITEMS> constexpr int forward_max_threads() { return ITEMS <= 2 ? 256 : 1024; }
template <int ITEMS> constexpr int backward_max_threads() { return ITEMS <= 1 ? 512 : 1024; }

template <parity_dtype D, int VEC, int ITEMS>
__global__ void __launch_bounds__(forward_max_threads<ITEMS>()) rms_norm_gated_forward_kernel(const typename element<D>::storage *x,      // (N, D)
                                              const typename element<D>::storage *gate,   // (N, D)
                                              const typename element<D>::storage *weight, // (D)
                                              typename element<D>::storage *y,            // (N, D)
                                              typename element<D>::compute *inverse_rms,  // (N)
                                              int64_t rows, int64_t hidden, int threads,
                                              typename element<D>::compute eps, bool vectorized) {
    using C = typename element<D>::compute;
    __shared__ C scratch[32];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t row = (int64_t)blockIdx.x * groups + group;
    const bool active = row < rows;
    const int64_t base = (active ? row : 0) * hidden;
    raw_vector<D, VEC> xs[ITEMS];
    C sum_squares = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        xs[i] = active && column < hidden ? load_raw<D, VEC>(x + base + column, vectorized) : zero_raw<D, VEC>();
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const C value = element<D>::load(xs[i].v[j]);
            sum_squares += value * value;
        }
    }
    sum_squares = group_sum(sum_squares, scratch, threads);
    const C inverse = C(1) / sqrt(sum_squares / C(hidden) + eps);
    if (!active) return;
    if (t == 0) inverse_rms[row] = inverse;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        if (column >= hidden) continue;
        C w[VEC], g[VEC], out[VEC];
        load_values<D, VEC>(weight + column, vectorized, w);
        load_values<D, VEC>(gate + base + column, vectorized, g);
#pragma unroll
        for (int j = 0; j < VEC; j++) out[j] = gated_output<D>(element<D>::load(xs[i].v[j]), inverse, w[j], g[j]);
        store_values<D, VEC>(y + base + column, vectorized, out);
    }
}

// Block b walks rows [b * rows_per_block, (b + 1) * rows_per_block); dweight_partial[b] gets its
// columns' dw (NULL: no dw). dinput / dgate NULL: not written.
template <parity_dtype D, int VEC, int ITEMS>
__global__ void __launch_bounds__(backward_max_threads<ITEMS>()) rms_norm_gated_backward_kernel(const typename element<D>::storage *x,          // (N, D)
                                               const typename element<D>::storage *gate,       // (N, D)
                                               const typename element<D>::storage *weight,     // (D)
                                               const typename element<D>::storage *doutput,    // (N, D)
                                               const typename element<D>::compute *inverse_rms, // (N)
                                               typename element<D>::storage *dinput,           // (N, D) or NULL
                                               typename element<D>::storage *dgate,            // (N, D) or NULL
                                               typename element<D>::compute *dweight_partial,  // (blocks, D) or NULL
                                               int64_t rows, int64_t hidden, int threads, int64_t rows_per_block,
                                               bool vectorized) {
    using C = typename element<D>::compute;
    extern __shared__ unsigned char combine_bytes[];
    __shared__ C scratch[32];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t first = (int64_t)blockIdx.x * rows_per_block;
    const int64_t last = first + rows_per_block < rows ? first + rows_per_block : rows;
    C dweight[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++)
#pragma unroll
        for (int j = 0; j < VEC; j++) dweight[i][j] = 0;

    const int64_t iterations = (rows_per_block + groups - 1) / groups;
    for (int64_t iteration = 0; iteration < iterations; iteration++) {
        const int64_t row = first + iteration * groups + group;
        const bool active = row < last;
        const C inverse = active ? inverse_rms[row] : C(0);
        const int64_t base = (active ? row : 0) * hidden;
        C x_hat[ITEMS][VEC], g[ITEMS][VEC]; // x_hat in the compute precision; g = dloss / dx_hat
        C dot = 0;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = ((int64_t)i * threads + t) * VEC;
            if (!(active && column < hidden)) {
#pragma unroll
                for (int j = 0; j < VEC; j++) x_hat[i][j] = g[i][j] = 0;
                continue;
            }
            C xv[VEC], gv[VEC], dy[VEC], w[VEC], dgate_out[VEC];
            load_values<D, VEC>(x + base + column, vectorized, xv);
            load_values<D, VEC>(gate + base + column, vectorized, gv);
            load_values<D, VEC>(doutput + base + column, vectorized, dy);
            load_values<D, VEC>(weight + column, vectorized, w);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                x_hat[i][j] = xv[j] * inverse;
                C term;
                gated_gradients<D>(x_hat[i][j], w[j], gv[j], dy[j], g[i][j], dgate_out[j], term);
                dweight[i][j] += term;
                dot += g[i][j] * x_hat[i][j];
            }
            if (dgate) store_values<D, VEC>(dgate + base + column, vectorized, dgate_out);
        }
        dot = group_sum(dot, scratch, threads);
        const C mean_dot = dot / C(hidden);
        if (active && dinput) {
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = ((int64_t)i * threads + t) * VEC;
                if (column >= hidden) continue;
                C dx[VEC];
#pragma unroll
                for (int j = 0; j < VEC; j++) dx[j] = inverse * (g[i][j] - x_hat[i][j] * mean_dot);
                store_values<D, VEC>(dinput + base + column, vectorized, dx);
            }
        }
    }
    if (!dweight_partial) return;
    // The groups' column sums into group 0, in group order, then into dweight_partial[b].
    store_block_partial(dweight, reinterpret_cast<C *>(combine_bytes), dweight_partial, hidden, threads, groups, group, t);
}

parity_error *check_devices(const parity_rms_norm_gated_args *args, const parity_rms_norm_gated_grads *grads) {
    const parity_device device = args->input->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rms_norm_gated: input is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend_name);
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "gate", args->gate, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "output", args->output, device));
    if (grads) {
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "doutput", grads->doutput, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dinput", grads->dinput, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dgate", grads->dgate, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dweight", grads->dweight, device));
    }
    return NULL;
}

parity_error *layout_of(parity_dtype dtype, int64_t hidden, bool backward, row_layout *layout) {
    int full_width = (int)(16 / parity_dtype_size(dtype));
    if (!row_layout_for(hidden, full_width, backward, layout))
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "rms_norm_gated: the %s backend holds a row in one block's registers; D %lld is too long",
                            backend_name, (long long)hidden);
    return NULL;
}

// The warp-rows layout when the row allows it (warp_layout_for), else the block-rows one.
parity_error *choose_layout(parity_dtype dtype, int64_t hidden, bool backward, bool *warp_rows, warp_layout *warp,
                            row_layout *block) {
    const int full_width = (int)(16 / parity_dtype_size(dtype));
    *warp_rows = warp_layout_for(hidden, full_width, warp);
    return *warp_rows ? NULL : layout_of(dtype, hidden, backward, block);
}

parity_error *forward(const parity_exec *exec, const parity_rms_norm_gated_args *args, parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(check_devices(args, NULL));
    bool warp_rows;
    warp_layout warp;
    row_layout layout;
    PARITY_TRY(choose_layout(args->input->dtype, hidden, false, &warp_rows, &warp, &layout));
    parity_tensor *inverse_rms;
    int64_t shape[1] = {rows};
    PARITY_TRY(parity_saved_alloc(saved, &inverse_rms, parity_compute_dtype(args->input->dtype), args->input->device, 1,
                                  shape));
    if (rows == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(args->input->device.index));
    return dispatch_float(args->input->dtype, "rms_norm_gated", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        const S *x = (const S *)args->input->data, *gate = (const S *)args->gate->data;
        const S *weight = (const S *)args->weight->data;
        S *y = (S *)args->output->data;
        if (warp_rows) {
            const bool vectorized = aligned16(x, gate, weight, y);
            return dispatch_warp_layout(warp, [&](auto lanes, auto items) -> parity_error * {
                constexpr int LANES = decltype(lanes)::value, ITEMS = decltype(items)::value;
                const int64_t block_rows = (int64_t)warp_rows_warps * (32 / LANES) * warp_rows_unroll<ITEMS>();
                const unsigned grid = (unsigned)((rows + block_rows - 1) / block_rows);
                warp_rows_forward_kernel<D, LANES, ITEMS><<<grid, warp_rows_threads, 0, parity_cuda_stream(exec)>>>(
                    x, gate, weight, y, (C *)inverse_rms->data, rows, hidden, (C)args->eps, vectorized);
                PARITY_CUDA_TRY_LAUNCH("warp_rows_forward_kernel");
                return NULL;
            });
        }
        const int groups = std::max(1, 256 / layout.threads);
        const unsigned block = (unsigned)(groups * layout.threads), grid = (unsigned)((rows + groups - 1) / groups);
        const bool vectorized = layout.vector > 1 && aligned16(x, gate, weight, y);
        return dispatch_layout<full_vector<D>()>(layout, [&](auto vec, auto items) -> parity_error * {
            constexpr int VEC = decltype(vec)::value, ITEMS = decltype(items)::value;
            rms_norm_gated_forward_kernel<D, VEC, ITEMS><<<grid, block, 0, parity_cuda_stream(exec)>>>(
                x, gate, weight, y, (C *)inverse_rms->data, rows, hidden, layout.threads, (C)args->eps, vectorized);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_gated_forward_kernel");
            return NULL;
        });
    });
}

// Rows a block of a row-walking backward takes: about as many blocks as are resident, each a whole
// number of `step` rows.
void split_rows(int64_t rows, int64_t step, int64_t resident, int64_t *rows_per_block, int64_t *blocks) {
    const int64_t steps = (rows + step - 1) / step;
    const int64_t wanted = std::max<int64_t>(1, std::min(resident, steps));
    *rows_per_block = (steps + wanted - 1) / wanted * step;
    *blocks = (rows + *rows_per_block - 1) / *rows_per_block;
}

parity_error *backward(const parity_exec *exec, const parity_rms_norm_gated_args *args, const parity_saved *saved,
                       const parity_rms_norm_gated_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_gated_check_grads(args, grads));
    PARITY_TRY(check_devices(args, grads));
    bool warp_rows;
    warp_layout warp;
    row_layout layout;
    PARITY_TRY(choose_layout(args->input->dtype, hidden, true, &warp_rows, &warp, &layout));
    const parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_rms));
    const int device_index = args->input->device.index;
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    if (rows == 0) {
        if (grads->dweight)
            PARITY_CUDA_TRY(cudaMemsetAsync(grads->dweight->data, 0, parity_tensor_nbytes(grads->dweight),
                                            parity_cuda_stream(exec)));
        return NULL;
    }
    int multiprocessors = 1;
    PARITY_TRY(multiprocessor_count(device_index, &multiprocessors));
    return dispatch_float(args->input->dtype, "rms_norm_gated", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        const S *x = (const S *)args->input->data, *gate = (const S *)args->gate->data;
        const S *weight = (const S *)args->weight->data, *dy = (const S *)grads->doutput->data;
        const C *inverse = (const C *)inverse_rms->data;
        S *dx = grads->dinput ? (S *)grads->dinput->data : nullptr, *dgate = grads->dgate ? (S *)grads->dgate->data : nullptr;
        // launches `kernel` with blocks of `block` threads, each taking whole `step`s of rows, then sums
        // the blocks' dw partials (fixed order)
        auto run = [&](auto kernel, unsigned block, size_t shared, int64_t step, auto &&launch) -> parity_error * {
            int per_multiprocessor = 0;
            PARITY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, (int)block, shared));
            int64_t rows_per_block, blocks;
            split_rows(rows, step, (int64_t)multiprocessors * std::max(1, per_multiprocessor), &rows_per_block, &blocks);
            pool_scratch partial;
            if (grads->dweight)
                PARITY_TRY(partial.alloc(args->input->device, (size_t)(blocks * hidden) * sizeof(C),
                                         parity_cuda_stream(exec)));
            launch((unsigned)blocks, rows_per_block, partial.as<C>());
            PARITY_CUDA_TRY_LAUNCH("rms_norm_gated backward kernel");
            return grads->dweight ? sum_partials<D>(exec, partial.as<const C>(), blocks, hidden, (S *)grads->dweight->data)
                                  : NULL;
        };
        if (warp_rows) {
            const bool vectorized = aligned16(x, gate, weight, dy, dx, dgate);
            return dispatch_warp_layout(warp, [&](auto lanes, auto items) -> parity_error * {
                constexpr int LANES = decltype(lanes)::value, ITEMS = decltype(items)::value;
                auto kernel = warp_rows_backward_kernel<D, LANES, ITEMS>;
                const int64_t step = (int64_t)warp_rows_warps * (32 / LANES) * warp_rows_unroll<ITEMS>();
                return run(kernel, warp_rows_threads, 0, step, [&](unsigned blocks, int64_t rows_per_block, C *partial) {
                    kernel<<<blocks, warp_rows_threads, 0, parity_cuda_stream(exec)>>>(
                        x, gate, weight, dy, inverse, dx, dgate, partial, rows, hidden, rows_per_block, vectorized);
                });
            });
        }
        const int groups = std::min(8, std::max(1, 512 / layout.threads));
        const unsigned block = (unsigned)(groups * layout.threads);
        const size_t shared = groups > 1 ? (size_t)hidden * sizeof(C) : 0;
        const bool vectorized = layout.vector > 1 && aligned16(x, gate, weight, dy, dx, dgate);
        return dispatch_layout<full_vector<D>()>(layout, [&](auto vec, auto items) -> parity_error * {
            constexpr int VEC = decltype(vec)::value, ITEMS = decltype(items)::value;
            auto kernel = rms_norm_gated_backward_kernel<D, VEC, ITEMS>;
            return run(kernel, block, shared, groups, [&](unsigned blocks, int64_t rows_per_block, C *partial) {
                kernel<<<blocks, block, shared, parity_cuda_stream(exec)>>>(x, gate, weight, dy, inverse, dx, dgate,
                                                                            partial, rows, hidden, layout.threads,
                                                                            rows_per_block, vectorized);
            });
        });
    });
}

const parity_rms_norm_gated_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(rms_norm_gated, fla, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM_GATED;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused gated RMSNorm (w * x_hat * silu(gate)), one pass each way, f64/f32/bf16";
    return parity_registry_add(&backend);
}
