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
//     forward:  each warp takes 32 / LANES consecutive rows (one row per lane group) and issues every
//               load of x and gate for them before its first sum, so a lane has 2 x ITEMS independent
//               16-byte loads in flight (at D = 128 bf16: 32 bytes, 1 KiB a warp, ~32 KiB an SM at 32
//               resident warps, about what Little's law asks of HBM3e at ~4.8 TB/s and ~1 us latency
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
//               of rows, 4 x (32 / LANES) rows a warp per step with one vector a lane, else 32 / LANES,
//               their x, gate and dy loads (12 x 16 bytes a lane at D = 128 bf16) issued before the
//               row sums: ~96 KiB an SM at 16 resident warps); dx and
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


// ---- the per-element math, shared by both layouts ----

// Fast f32 forms of PTX: 2^t (MUFU.EX2, ~2 ulp) and 1 / d (MUFU.RCP, 1 ulp), subnormals flushed.
__device__ __forceinline__ float exp2_approx(float t) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
    return r;
}
__device__ __forceinline__ float reciprocal_approx(float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    return r;
}

// sigmoid(x) = 1 / (1 + exp(-x)) in the compute precision of D. f64: exp and IEEE division. f32: expf
// (~2 ulp) and the 1-ulp reciprocal. bf16 data (f32 compute): exp(-x) as 2^(x * -log2(e)) on the
// special-function unit, 2 instructions instead of expf's 10: the product's rounding adds |x| 2^-24 of
// relative error, ~3e-7 at |x| = 5, a thousandth of the 2^-9 rounding of a bf16 result. Limits as the
// IEEE form's: x = +inf gives 1, x = -inf 0 (so silu(-inf) = -inf * 0 = NaN, as eager), NaN stays NaN.
template <parity_dtype D> __device__ __forceinline__ typename element<D>::compute sigmoid_of(typename element<D>::compute x) {
    if constexpr (D == PARITY_F64) {
        return 1.0 / (1.0 + exp(-x));
    } else if constexpr (D == PARITY_F32) {
        return reciprocal_approx(1.0f + expf(-x));
    } else {
        return reciprocal_approx(1.0f + exp2_approx(x * -1.4426950408889634f));
    }
}

// dloss / dgate from dloss / dsilu, gate and its sigmoid (eager's silu_backward: (d * s) * (1 + x (1 - s))).
template <typename C> __device__ __forceinline__ C silu_gradient(C dactivation, C gate, C sigmoid) {
    return dactivation * sigmoid * (C(1) + gate * (C(1) - sigmoid));
}

// The row's mean of `sum` over `hidden` columns: sum * mean_scale when mean_scale is nonzero (the
// host passes 1 / hidden when hidden is a power of two, where the product is the quotient's exact
// bits), else the IEEE quotient.
template <typename C> __device__ __forceinline__ C mean_of(C sum, int64_t hidden, C mean_scale) {
    return mean_scale != C(0) ? sum * mean_scale : sum / C(hidden);
}

// 1 / sqrt(mean + eps): f32 correctly rounded (__frsqrt_rn, as the CPU's f64 1 / sqrt rounded to
// f32), f64 the IEEE sqrt and quotient (as the CPU's).
template <typename C> __device__ __forceinline__ C inverse_rms_of(C mean, C eps) {
    if constexpr (sizeof(C) == 4) {
        return __frsqrt_rn(mean + eps);
    } else {
        return C(1) / sqrt(mean + eps);
    }
}

// y of one element from x, the row's inverse rms, w and gate (compute precision).
template <parity_dtype D>
__device__ __forceinline__ typename element<D>::compute gated_output(typename element<D>::compute x,
                                                                     typename element<D>::compute inverse,
                                                                     typename element<D>::compute w,
                                                                     typename element<D>::compute gate) {
    using C = typename element<D>::compute;
    const C x_hat = round_storage<D>(x * inverse);
    const C h = round_storage<D>(w * x_hat);
    return h * (gate * sigmoid_of<D>(gate));
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
    const C sigmoid = sigmoid_of<D>(gate);
    const C activation = gate * sigmoid;
    const C dh = round_storage<D>(dy * activation);
    dgate = silu_gradient(dy * h, gate, sigmoid);
    dweight_term = round_storage<D>(dh * x_hat_stored);
    g = round_storage<D>(dh * w);
}

// ---- 16-byte vectors (the warp-rows kernels) ----

// 16 bytes of a row as they sit in memory (8 bf16, 4 f32 or 2 f64) as four 32-bit words: a word holds
// a bf16 pair, element 2k in its low half (memory order), an f32, or half an f64.
struct alignas(16) bits16 {
    uint32_t w[4];
};

// Elements in 16 bytes (fused_rows.cuh's full_vector, callable on the device).
template <parity_dtype D> __host__ __device__ constexpr int vector_width() {
    return (int)(16 / sizeof(typename element<D>::storage));
}

__device__ __forceinline__ bits16 zero16() { return bits16{{0u, 0u, 0u, 0u}}; }

// Element j of a vector in the compute precision (exact; a bf16 is the high half of its f32).
template <parity_dtype D> __device__ __forceinline__ typename element<D>::compute get(const bits16 &v, int j) {
    if constexpr (D == PARITY_BF16) {
        return (j & 1) ? __uint_as_float(v.w[j >> 1] & 0xffff0000u) : __uint_as_float(v.w[j >> 1] << 16);
    } else if constexpr (D == PARITY_F32) {
        return __uint_as_float(v.w[j]);
    } else {
        return __hiloint2double((int)v.w[2 * j + 1], (int)v.w[2 * j]);
    }
}

// Sets element j of an f32 or f64 vector (bf16 vectors are written a pair at a time, bf16x2_round).
template <parity_dtype D> __device__ __forceinline__ void put(bits16 &v, int j, typename element<D>::compute value) {
    static_assert(D != PARITY_BF16, "bf16 vectors are written in pairs");
    if constexpr (D == PARITY_F32) {
        v.w[j] = __float_as_uint(value);
    } else {
        v.w[2 * j] = (uint32_t)__double2loint(value);
        v.w[2 * j + 1] = (uint32_t)__double2hiint(value);
    }
}

// The low and high bf16 of a pair as f32 (exact: one shift or mask each).
__device__ __forceinline__ float bf16_low(uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float bf16_high(uint32_t pair) { return __uint_as_float(pair & 0xffff0000u); }

// Two f32 rounded to a bf16 pair (one cvt.rn.bf16x2.f32: F2FP.BF16.F32.PACK_AB, round to nearest even).
__device__ __forceinline__ uint32_t bf16x2_round(float low, float high) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    uint32_t bits;
    memcpy(&bits, &pair, sizeof bits);
    return bits;
}

// The product of two bf16 pairs, each rounded once to bf16 (HFMA2.BF16 with -0). The f32 product of
// two bf16 is exact (8 x 8 significant bits), so this is the f32 product rounded to bf16 bit for bit,
// the eager order (w * x_hat in f32, then stored as bf16), except below f32's normal range (|product|
// < 2^-126), where the f32 product would be rounded twice and this once.
__device__ __forceinline__ uint32_t bf16x2_product(uint32_t a, uint32_t b) {
    __nv_bfloat162 x, y;
    memcpy(&x, &a, sizeof a);
    memcpy(&y, &b, sizeof b);
    const __nv_bfloat162 z = __hmul2_rn(x, y);
    uint32_t bits;
    memcpy(&bits, &z, sizeof bits);
    return bits;
}

// Streamed 16-byte accesses: each row is read and written once, so loads do not allocate in L1
// (ld.global.nc.L1::no_allocate) and stores are marked evict-first (st.global.cs).
__device__ __forceinline__ bits16 load16_streamed(const void *source) {
    bits16 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                 : "l"(source));
    return v;
}
__device__ __forceinline__ void store16_streamed(void *destination, const bits16 &v) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(destination), "r"(v.w[0]), "r"(v.w[1]),
                 "r"(v.w[2]), "r"(v.w[3])
                 : "memory");
}

// A vector of elements read one at a time (rows not 16-byte aligned): the same bits as a 16-byte load.
template <parity_dtype D> __device__ __forceinline__ bits16 load_elements(const typename element<D>::storage *source) {
    typename element<D>::storage values[vector_width<D>()];
#pragma unroll
    for (int j = 0; j < vector_width<D>(); j++) values[j] = source[j];
    bits16 v;
    memcpy(&v, values, sizeof v);
    return v;
}

// A row vector: one streamed 16-byte load when `vectorized` (16-byte aligned), element loads otherwise.
template <parity_dtype D>
__device__ __forceinline__ bits16 load_row_vector(const typename element<D>::storage *source, bool vectorized) {
    return vectorized ? load16_streamed(source) : load_elements<D>(source);
}

// w's vector: read by every warp, so through the read-only cache as usual.
template <parity_dtype D>
__device__ __forceinline__ bits16 load_weight_vector(const typename element<D>::storage *source, bool vectorized) {
    if (!vectorized) return load_elements<D>(source);
    const uint4 v = *reinterpret_cast<const uint4 *>(source);
    return bits16{{v.x, v.y, v.z, v.w}};
}

template <parity_dtype D>
__device__ __forceinline__ void store_row_vector(typename element<D>::storage *destination, bool vectorized,
                                                 const bits16 &v) {
    if (vectorized) {
        store16_streamed(destination, v);
        return;
    }
    typename element<D>::storage values[vector_width<D>()];
    memcpy(values, &v, sizeof v);
#pragma unroll
    for (int j = 0; j < vector_width<D>(); j++) destination[j] = values[j];
}

// The sum of squares of a vector's elements in element order, added to `sum` (one FFMA each).
template <parity_dtype D>
__device__ __forceinline__ void add_squares(const bits16 &x, typename element<D>::compute &sum) {
#pragma unroll
    for (int j = 0; j < vector_width<D>(); j++) {
        const typename element<D>::compute value = get<D>(x, j);
        sum += value * value;
    }
}

// y of a vector (gated_output's arithmetic). bf16 a pair at a time: x_hat rounded as a pair
// (F2FP), h = w * x_hat as one bf16x2 product, y rounded as a pair: ~12 instructions an element,
// 5 of them silu's (FMUL, MUFU.EX2, FADD, MUFU.RCP, FMUL).
template <parity_dtype D>
__device__ __forceinline__ bits16 gated_vector(const bits16 &x, const bits16 &gate, const bits16 &w,
                                               typename element<D>::compute inverse) {
    bits16 y;
    if constexpr (D == PARITY_BF16) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t x_hat = bf16x2_round(get<D>(x, 2 * k) * inverse, get<D>(x, 2 * k + 1) * inverse);
            const uint32_t h = bf16x2_product(w.w[k], x_hat);
            const float g0 = get<D>(gate, 2 * k), g1 = get<D>(gate, 2 * k + 1);
            y.w[k] = bf16x2_round(bf16_low(h) * (g0 * sigmoid_of<D>(g0)), bf16_high(h) * (g1 * sigmoid_of<D>(g1)));
        }
    } else {
#pragma unroll
        for (int j = 0; j < vector_width<D>(); j++)
            put<D>(y, j, gated_output<D>(get<D>(x, j), inverse, get<D>(w, j), get<D>(gate, j)));
    }
    return y;
}

// A vector's backward before the row sum (gated_gradients' arithmetic): returns dgate, sets g (dloss /
// dx_hat, in storage form), adds the dw terms to dweight when `ok` and g * x_hat to dot, in element
// order. bf16 a pair at a time: h, the dw term and g are bf16x2 products (exact as in bf16x2_product),
// dh and dgate rounded as pairs.
template <parity_dtype D>
__device__ __forceinline__ bits16 gated_vector_gradients(const bits16 &x, const bits16 &gate, const bits16 &dy,
                                                         const bits16 &w, typename element<D>::compute inverse, bool ok,
                                                         bits16 &g,
                                                         typename element<D>::compute (&dweight)[vector_width<D>()],
                                                         typename element<D>::compute &dot) {
    using C = typename element<D>::compute;
    bits16 dgate;
    if constexpr (D == PARITY_BF16) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float a0 = get<D>(x, 2 * k) * inverse, a1 = get<D>(x, 2 * k + 1) * inverse; // x_hat (f32)
            const uint32_t x_hat = bf16x2_round(a0, a1);                                      // as stored
            const uint32_t h = bf16x2_product(w.w[k], x_hat);
            const float g0 = get<D>(gate, 2 * k), g1 = get<D>(gate, 2 * k + 1);
            const float s0 = sigmoid_of<D>(g0), s1 = sigmoid_of<D>(g1);
            const float d0 = get<D>(dy, 2 * k), d1 = get<D>(dy, 2 * k + 1);
            const uint32_t dh = bf16x2_round(d0 * (g0 * s0), d1 * (g1 * s1));
            const uint32_t term = bf16x2_product(dh, x_hat);
            if (ok) {
                dweight[2 * k] += bf16_low(term);
                dweight[2 * k + 1] += bf16_high(term);
            }
            const uint32_t gk = bf16x2_product(dh, w.w[k]);
            g.w[k] = gk;
            dot += bf16_low(gk) * a0;
            dot += bf16_high(gk) * a1;
            dgate.w[k] = bf16x2_round(silu_gradient(d0 * bf16_low(h), g0, s0), silu_gradient(d1 * bf16_high(h), g1, s1));
        }
    } else {
#pragma unroll
        for (int j = 0; j < vector_width<D>(); j++) {
            const C x_hat = get<D>(x, j) * inverse;
            C gj, dgate_j, term;
            gated_gradients<D>(x_hat, get<D>(w, j), get<D>(gate, j), get<D>(dy, j), gj, dgate_j, term);
            if (ok) dweight[j] += term;
            put<D>(g, j, gj);
            dot += gj * x_hat;
            put<D>(dgate, j, dgate_j);
        }
    }
    return dgate;
}

// dx of a vector: inverse * (g - x_hat * mean_dot), x_hat recomputed from x (the same product, the
// same bits as before the row sum).
template <parity_dtype D>
__device__ __forceinline__ bits16 input_gradient_vector(const bits16 &x, const bits16 &g,
                                                        typename element<D>::compute inverse,
                                                        typename element<D>::compute mean_dot) {
    using C = typename element<D>::compute;
    bits16 dx;
    if constexpr (D == PARITY_BF16) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float a0 = get<D>(x, 2 * k) * inverse, a1 = get<D>(x, 2 * k + 1) * inverse;
            dx.w[k] = bf16x2_round(inverse * (bf16_low(g.w[k]) - a0 * mean_dot),
                                   inverse * (bf16_high(g.w[k]) - a1 * mean_dot));
        }
    } else {
#pragma unroll
        for (int j = 0; j < vector_width<D>(); j++) {
            const C x_hat = get<D>(x, j) * inverse;
            put<D>(dx, j, inverse * (get<D>(g, j) - x_hat * mean_dot));
        }
    }
    return dx;
}

// ---- warp rows: a row in LANES lanes of one warp (see the header) ----

constexpr int warp_rows_threads = 256; // 8 warps a block
constexpr int warp_rows_warps = warp_rows_threads / 32;

// Rows a lane group holds at once (UNROLL) and resident blocks of 256 threads a multiprocessor is
// built for (the register budget), measured on the H200 at 262144 x 128 bf16 (one vector a lane;
// reports/baselines/h200/gated-delta-net, 2026-12-04): forward UNROLL 1 at 4 blocks (64 registers)
// 84% of the copy rate (2: 78%, 4: 81%); backward UNROLL 4 at 2 blocks (128 registers) 0.097 ms
// (1: 0.103, 2 at 4 blocks: 0.106). With two vectors a lane both are 1 (2 blocks backward).
constexpr int warp_rows_forward_unroll = 1;
template <int ITEMS> __host__ __device__ constexpr int warp_rows_backward_unroll() { return ITEMS == 1 ? 4 : 1; }
constexpr int warp_rows_forward_blocks = 4;
constexpr int warp_rows_backward_blocks = 2;

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

// Calls fn(integral_constant<LANES>, integral_constant<ITEMS>, bool_constant<VECTORIZED>) for the layout
// and whether every pointer is 16-byte aligned (the kernels' accesses are compiled for one or the other:
// a runtime choice would leave the element path's instructions predicated off in the vector path).
template <typename Fn> auto dispatch_warp_layout(const warp_layout &layout, bool vectorized, Fn &&fn) {
    auto with_shape = [&](auto v) {
        using one = std::integral_constant<int, 1>;
        if (layout.items == 2) return fn(std::integral_constant<int, 32>{}, std::integral_constant<int, 2>{}, v);
        switch (layout.lanes) {
        case 8: return fn(std::integral_constant<int, 8>{}, one{}, v);
        case 16: return fn(std::integral_constant<int, 16>{}, one{}, v);
        default: return fn(std::integral_constant<int, 32>{}, one{}, v);
        }
    };
    return vectorized ? with_shape(std::true_type{}) : with_shape(std::false_type{});
}

// Warp w of the grid takes rows [w R, (w + 1) R), R = (32 / LANES) x UNROLL, as UNROLL steps u of
// 32 / LANES consecutive rows (one warp-wide load instruction covers a step: contiguous memory); lane
// t of group `group` holds the vectors at column (i * LANES + t) * VEC of row w R + u GROUPS + group.
template <parity_dtype D, int LANES, int ITEMS, bool VECTORIZED>
__global__ void __launch_bounds__(warp_rows_threads, warp_rows_forward_blocks)
    warp_rows_forward_kernel(const typename element<D>::storage *__restrict__ x,      // (N, D)
                             const typename element<D>::storage *__restrict__ gate,   // (N, D)
                             const typename element<D>::storage *__restrict__ weight, // (D)
                             typename element<D>::storage *__restrict__ y,            // (N, D)
                             typename element<D>::compute *__restrict__ inverse_rms,  // (N)
                             int64_t rows, int64_t hidden, typename element<D>::compute mean_scale,
                             typename element<D>::compute eps) {
    using C = typename element<D>::compute;
    constexpr int VEC = vector_width<D>();
    constexpr int GROUPS = 32 / LANES, UNROLL = warp_rows_forward_unroll;
    const int lane = threadIdx.x & 31, group = lane / LANES, t = lane % LANES;
    const int64_t warp = (int64_t)blockIdx.x * warp_rows_warps + (threadIdx.x >> 5);
    const int64_t first = warp * (GROUPS * UNROLL) + group;

    // every load of the warp's rows first (x, gate), then the sums: 2 x UNROLL x ITEMS loads in flight
    bits16 xs[UNROLL][ITEMS], gs[UNROLL][ITEMS];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const int64_t row = first + (int64_t)u * GROUPS;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = (int64_t)(i * LANES + t) * VEC;
            xs[u][i] = gs[u][i] = zero16();
            if (row < rows && column < hidden) {
                xs[u][i] = load_row_vector<D>(x + row * hidden + column, VECTORIZED);
                gs[u][i] = load_row_vector<D>(gate + row * hidden + column, VECTORIZED);
            }
        }
    }
    bits16 w[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = (int64_t)(i * LANES + t) * VEC;
        w[i] = column < hidden ? load_weight_vector<D>(weight + column, VECTORIZED) : zero16();
    }
    C inverse[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        C sum_squares = 0;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) add_squares<D>(xs[u][i], sum_squares);
        inverse[u] = inverse_rms_of(mean_of(lanes_sum<LANES>(sum_squares), hidden, mean_scale), eps);
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
            store_row_vector<D>(y + row * hidden + column, VECTORIZED, gated_vector<D>(xs[u][i], gs[u][i], w[i], inverse[u]));
        }
    }
}

// Block b walks rows [b * rows_per_block, (b + 1) * rows_per_block) (rows_per_block a multiple of
// the block's step, 8 warps x (32 / LANES) x UNROLL rows) in steps; in each step warp w takes the
// step's rows [w R, (w + 1) R) as the forward does. dweight_partial[b] gets the block's dw (NULL:
// no dw); dinput / dgate NULL: not written.
template <parity_dtype D, int LANES, int ITEMS, bool VECTORIZED>
__global__ void __launch_bounds__(warp_rows_threads, warp_rows_backward_blocks)
    warp_rows_backward_kernel(const typename element<D>::storage *__restrict__ x,          // (N, D)
                              const typename element<D>::storage *__restrict__ gate,       // (N, D)
                              const typename element<D>::storage *__restrict__ weight,     // (D)
                              const typename element<D>::storage *__restrict__ doutput,    // (N, D)
                              const typename element<D>::compute *__restrict__ inverse_rms, // (N)
                              typename element<D>::storage *__restrict__ dinput,           // (N, D) or NULL
                              typename element<D>::storage *__restrict__ dgate,            // (N, D) or NULL
                              typename element<D>::compute *__restrict__ dweight_partial,  // (blocks, D) or NULL
                              int64_t rows, int64_t hidden, typename element<D>::compute mean_scale,
                              int64_t rows_per_block) {
    using C = typename element<D>::compute;
    constexpr int VEC = vector_width<D>();
    constexpr int GROUPS = 32 / LANES, UNROLL = warp_rows_backward_unroll<ITEMS>();
    constexpr int WARP_ROWS = GROUPS * UNROLL, STEP = warp_rows_warps * WARP_ROWS, WIDTH = LANES * ITEMS * VEC;
    __shared__ C combined[warp_rows_warps][WIDTH];
    const int lane = threadIdx.x & 31, group = lane / LANES, t = lane % LANES, warp = threadIdx.x >> 5;
    const int64_t first = (int64_t)blockIdx.x * rows_per_block;
    const int64_t last = first + rows_per_block < rows ? first + rows_per_block : rows;

    bits16 w[ITEMS];
    C dweight[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = (int64_t)(i * LANES + t) * VEC;
        w[i] = column < hidden ? load_weight_vector<D>(weight + column, VECTORIZED) : zero16();
#pragma unroll
        for (int j = 0; j < VEC; j++) dweight[i][j] = 0;
    }

    for (int64_t step = first; step < last; step += STEP) {
        const int64_t warp_first = step + (int64_t)warp * WARP_ROWS + group;
        bits16 xs[UNROLL][ITEMS], gs[UNROLL][ITEMS], dys[UNROLL][ITEMS];
        C inverse[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int64_t row = warp_first + (int64_t)u * GROUPS;
            const bool active = row < last;
            inverse[u] = active ? inverse_rms[row] : C(0);
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = (int64_t)(i * LANES + t) * VEC;
                const int64_t at = row * hidden + column;
                xs[u][i] = gs[u][i] = dys[u][i] = zero16();
                if (active && column < hidden) {
                    xs[u][i] = load_row_vector<D>(x + at, VECTORIZED);
                    gs[u][i] = load_row_vector<D>(gate + at, VECTORIZED);
                    dys[u][i] = load_row_vector<D>(doutput + at, VECTORIZED);
                }
            }
        }
        // row by row: g (dloss / dx_hat, rounded to the storage dtype, so kept in storage form: exact),
        // dgate and the dw terms, the row's sum, then dx from x_hat recomputed from x (the same product,
        // the same bits): a row's registers are free before the next row's arithmetic
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int64_t row = warp_first + (int64_t)u * GROUPS;
            bits16 gvals[ITEMS];
            C dot = 0;
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = (int64_t)(i * LANES + t) * VEC;
                const bool ok = row < last && column < hidden;
                const bits16 dgate_out =
                    gated_vector_gradients<D>(xs[u][i], gs[u][i], dys[u][i], w[i], inverse[u], ok, gvals[i], dweight[i], dot);
                if (ok && dgate) store_row_vector<D>(dgate + row * hidden + column, VECTORIZED, dgate_out);
            }
            dot = lanes_sum<LANES>(dot);
            if (!dinput || row >= last) continue;
            const C mean_dot = mean_of(dot, hidden, mean_scale);
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = (int64_t)(i * LANES + t) * VEC;
                if (column >= hidden) continue;
                store_row_vector<D>(dinput + row * hidden + column, VECTORIZED,
                                    input_gradient_vector<D>(xs[u][i], gvals[i], inverse[u], mean_dot));
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
                                              typename element<D>::compute mean_scale,
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
    const C inverse = inverse_rms_of(mean_of(sum_squares, hidden, mean_scale), eps);
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
                                               int64_t rows, int64_t hidden, int threads,
                                               typename element<D>::compute mean_scale, int64_t rows_per_block,
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
        const C mean_dot = mean_of(dot, hidden, mean_scale);
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

// 1 / hidden when hidden is a power of two (the mean's product with it is the quotient's exact bits),
// else 0: the kernels divide (mean_of).
template <typename C> C row_mean_scale(int64_t hidden) {
    return (hidden & (hidden - 1)) == 0 ? C(1) / C(hidden) : C(0);
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
        const C mean_scale = row_mean_scale<C>(hidden);
        const S *x = (const S *)args->input->data, *gate = (const S *)args->gate->data;
        const S *weight = (const S *)args->weight->data;
        S *y = (S *)args->output->data;
        if (warp_rows) {
            return dispatch_warp_layout(warp, aligned16(x, gate, weight, y), [&](auto lanes, auto items, auto vectorized) -> parity_error * {
                constexpr int LANES = decltype(lanes)::value, ITEMS = decltype(items)::value;
                const int64_t block_rows = (int64_t)warp_rows_warps * (32 / LANES) * warp_rows_forward_unroll;
                const unsigned grid = (unsigned)((rows + block_rows - 1) / block_rows);
                warp_rows_forward_kernel<D, LANES, ITEMS, decltype(vectorized)::value>
                    <<<grid, warp_rows_threads, 0, parity_cuda_stream(exec)>>>(x, gate, weight, y, (C *)inverse_rms->data,
                                                                             rows, hidden, mean_scale, (C)args->eps);
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
                x, gate, weight, y, (C *)inverse_rms->data, rows, hidden, layout.threads, mean_scale, (C)args->eps,
                vectorized);
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
        const C mean_scale = row_mean_scale<C>(hidden);
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
            return dispatch_warp_layout(warp, aligned16(x, gate, weight, dy, dx, dgate), [&](auto lanes, auto items, auto vectorized) -> parity_error * {
                constexpr int LANES = decltype(lanes)::value, ITEMS = decltype(items)::value;
                auto kernel = warp_rows_backward_kernel<D, LANES, ITEMS, decltype(vectorized)::value>;
                const int64_t step = (int64_t)warp_rows_warps * (32 / LANES) * warp_rows_backward_unroll<ITEMS>();
                return run(kernel, warp_rows_threads, 0, step, [&](unsigned blocks, int64_t rows_per_block, C *partial) {
                    kernel<<<blocks, warp_rows_threads, 0, parity_cuda_stream(exec)>>>(
                        x, gate, weight, dy, inverse, dx, dgate, partial, rows, hidden, mean_scale, rows_per_block);
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
                                                                            mean_scale, rows_per_block, vectorized);
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
