// backward.cu: the FlashAttention-2 backward on tensor cores with recomputation, and its launcher.
// Three kernels, no atomics: every output element has one owner and every sum runs in a fixed
// order, so the backward is deterministic (bitwise, run to run) by construction.
//   delta   one warp per (token, query head): delta = rowsum(dout * out) in f32.
//   dk, dv  one block of WARPS warps per (key tile of BK = 16 WARPS keys, kv head[, document]); warp w
//           owns keys 16 w .. +15. It walks the query tiles (BQ rows) that can see the key tile, for
//           every query head of the GQA group, q / dout / lse / delta tiles double-buffered:
//             S^T = K Q^T, P^T = exp2(scale log2(e) S^T - log2(e) lse)   (0 where hidden)
//             dP^T = V dout^T, dS^T = P^T (dP^T - delta)
//             dV += bf16(P^T) dout,  dK += bf16(dS^T) Q                  (A operands from registers)
//           then dK *= scale. When D + Dv > 256 the accumulators do not fit the registers: one pass
//           computes dV, a second dK (recomputing S^T and P^T).
//   dq      one block per (query tile of 16 M WARPS rows, query head[, document]) walking the key tiles
//           as the forward does: S = Q K^T, P, dP = dout V^T, dS = P (dP - delta), dQ += bf16(dS) K,
//           then dQ *= scale.
// lse = +inf (a row that saw nothing) gives P = 0 and so zero gradients. Shared-memory rows are
// padded by 8 elements as in forward.cu.
#include "ops/attention/flash/flash.h"
#include "ops/attention/flash/mma.cuh"

namespace parity_flash {

namespace {

constexpr float log2_e = 1.4426950408889634f;

// delta[row] = sum_e dout[row, e] out[row, e] over the Dv values of one (token, query head) row.
__global__ void flash_delta_kernel(const bf16 *dout, const bf16 *out, int64_t rows, int dv, float *delta) {
    int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float sum = 0.f;
    for (int e = lane * 2; e < dv; e += 64) {
        __nv_bfloat162 a = *reinterpret_cast<const __nv_bfloat162 *>(dout + row * dv + e);
        __nv_bfloat162 b = *reinterpret_cast<const __nv_bfloat162 *>(out + row * dv + e);
        sum += __low2float(a) * __low2float(b) + __high2float(a) * __high2float(b);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) delta[row] = sum;
}

template <int D, int DV, int WARPS, int BQ> struct key_value_shape {
    static constexpr int BK = 16 * WARPS, SQ = D + 8, SV = DV + 8;
    // K, V once; Q and dout double-buffered; lse and delta double-buffered (f32).
    static constexpr size_t shared_bytes = sizeof(bf16) * ((size_t)BK * SQ + (size_t)BK * SV + 2 * (size_t)BQ * SQ +
                                                           2 * (size_t)BQ * SV) +
                                           sizeof(float) * 4 * BQ;
};

template <int D, int DV, int WARPS, int BQ, bool BLOCK_MASK, bool DO_DK, bool DO_DV>
__global__ void __launch_bounds__(WARPS * 32) flash_key_value_kernel(flash_call c) {
    using shape = key_value_shape<D, DV, WARPS, BQ>;
    constexpr int BK = shape::BK, SQ = shape::SQ, SV = shape::SV, THREADS = WARPS * 32;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    bf16 *sk = reinterpret_cast<bf16 *>(shared_raw); // (BK, SQ)
    bf16 *sv = sk + BK * SQ;                         // (BK, SV)
    bf16 *sq = sv + BK * SV;                         // 2 x (BQ, SQ)
    bf16 *sdo = sq + 2 * BQ * SQ;                    // 2 x (BQ, SV)
    float *slse = reinterpret_cast<float *>(sdo + 2 * BQ * SV); // 2 x BQ, log2(e) lse
    float *sdelta = slse + 2 * BQ;                               // 2 x BQ

    tile_walk<BLOCK_MASK> walk;
    if (!walk.template key_tile<BK, BQ>(c)) return;
    const int hk = walk.head, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int64_t qh = c.query_heads, kh = c.kv_heads;

    for (int i = threadIdx.x; i < BK * (D / 8); i += THREADS) {
        int r = i / (D / 8), chunk = i % (D / 8);
        int64_t token = walk.first + r;
        bool ok = token < walk.limit;
        copy_16(sk + r * SQ + chunk * 8, c.k + ((ok ? token : 0) * kh + hk) * D + chunk * 8, ok);
    }
    for (int i = threadIdx.x; i < BK * (DV / 8); i += THREADS) {
        int r = i / (DV / 8), chunk = i % (DV / 8);
        int64_t token = walk.first + r;
        bool ok = token < walk.limit;
        copy_16(sv + r * SV + chunk * 8, c.v + ((ok ? token : 0) * kh + hk) * DV + chunk * 8, ok);
    }

    // The (query head, query tile) pairs walked, head-major: head hk * group + j / tiles for the
    // documents schedule and head-broadcast masks, a scan over the group's heads otherwise.
    auto locate = [&](int step, int *head, int *j) {
        int h = hk * c.group;
        int n = walk.template tiles<BQ>(h);
        while (step >= n) {
            step -= n;
            h++;
            n = walk.template tiles<BQ>(h);
        }
        *head = h;
        *j = step;
    };
    int steps = 0;
    for (int h = hk * c.group; h < (hk + 1) * c.group; h++) steps += walk.template tiles<BQ>(h);

    auto load_tile = [&](int step, int buffer) {
        int h, j;
        locate(step, &h, &j);
        bool masked;
        int64_t query0 = walk.template tile<BK, BQ>(c, h, j, &masked);
        bf16 *q_tile = sq + buffer * BQ * SQ, *do_tile = sdo + buffer * BQ * SV;
        for (int i = threadIdx.x; i < BQ * (D / 8); i += THREADS) {
            int r = i / (D / 8), chunk = i % (D / 8);
            int64_t token = query0 + r;
            bool ok = token < walk.end;
            copy_16(q_tile + r * SQ + chunk * 8, c.q + ((ok ? token : 0) * qh + h) * D + chunk * 8, ok);
        }
        if (DO_DK || DO_DV)
            for (int i = threadIdx.x; i < BQ * (DV / 8); i += THREADS) {
                int r = i / (DV / 8), chunk = i % (DV / 8);
                int64_t token = query0 + r;
                bool ok = token < walk.end;
                copy_16(do_tile + r * SV + chunk * 8, c.dout + ((ok ? token : 0) * qh + h) * DV + chunk * 8, ok);
            }
        for (int i = threadIdx.x; i < BQ; i += THREADS) {
            int64_t token = query0 + i;
            bool ok = token < walk.end;
            slse[buffer * BQ + i] = ok ? c.lse[token * qh + h] * log2_e : INFINITY;
            sdelta[buffer * BQ + i] = ok ? c.delta[token * qh + h] : 0.f;
        }
    };

    float dk[DO_DK ? D / 8 : 1][4], dv[DO_DV ? DV / 8 : 1][4];
#pragma unroll
    for (int n = 0; n < (DO_DK ? D / 8 : 1); n++) dk[n][0] = dk[n][1] = dk[n][2] = dk[n][3] = 0.f;
#pragma unroll
    for (int n = 0; n < (DO_DV ? DV / 8 : 1); n++) dv[n][0] = dv[n][1] = dv[n][2] = dv[n][3] = 0.f;
    const int64_t key_row0 = walk.first + warp * 16 + g; // this thread's keys key_row0 and key_row0 + 8
    const bf16 *k_rows = sk + warp * 16 * SQ, *v_rows = sv + warp * 16 * SV;

    if (steps > 0) load_tile(0, 0);
    copy_commit();
    for (int step = 0; step < steps; step++) {
        __syncthreads(); // the buffer about to be refilled is no longer read
        if (step + 1 < steps) load_tile(step + 1, (step + 1) & 1);
        copy_commit();
        copy_wait<1>();
        __syncthreads();
        int buffer = step & 1, h, j;
        locate(step, &h, &j);
        bool masked;
        int64_t query0 = walk.template tile<BK, BQ>(c, h, j, &masked);
        const bf16 *q_tile = sq + buffer * BQ * SQ, *do_tile = sdo + buffer * BQ * SV;
        const float *lse_tile = slse + buffer * BQ, *delta_tile = sdelta + buffer * BQ;

        // S^T = K Q^T: 16 keys x BQ queries a warp.
        float p[BQ / 8][4];
#pragma unroll
        for (int n = 0; n < BQ / 8; n++) p[n][0] = p[n][1] = p[n][2] = p[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t a[4];
            load_a(a, k_rows + kk * 16, SQ, lane);
#pragma unroll
            for (int n = 0; n < BQ / 16; n++) {
                uint32_t b[4];
                load_b_nk(b, q_tile + n * 16 * SQ + kk * 16, SQ, lane);
                mma_16816(p[2 * n], a, b[0], b[1]);
                mma_16816(p[2 * n + 1], a, b[2], b[3]);
            }
        }
        // P^T: element (key key_row0 + 8 (e / 2), query query0 + 8 n + 2 t + e % 2).
#pragma unroll
        for (int n = 0; n < BQ / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int column = n * 8 + 2 * t + (e % 2);
                float value = exp2f(p[n][e] * c.scale_log2 - lse_tile[column]);
                if (masked && !walk.visible(c, query0 + column, key_row0 + (e / 2) * 8)) value = 0.f;
                p[n][e] = value;
            }
        if constexpr (DO_DV) {
            // dV += P^T dout (contraction over the BQ queries).
#pragma unroll
            for (int kk = 0; kk < BQ / 16; kk++) {
                uint32_t a[4] = {pack_bf16(p[2 * kk][0], p[2 * kk][1]), pack_bf16(p[2 * kk][2], p[2 * kk][3]),
                                 pack_bf16(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                                 pack_bf16(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
                for (int n = 0; n < DV / 16; n++) {
                    uint32_t b[4];
                    load_b_kn(b, do_tile + kk * 16 * SV + n * 16, SV, lane);
                    mma_16816(dv[2 * n], a, b[0], b[1]);
                    mma_16816(dv[2 * n + 1], a, b[2], b[3]);
                }
            }
        }
        if constexpr (DO_DK) {
            // dP^T = V dout^T, then dS^T = P^T (dP^T - delta) in place of dP^T.
            float ds[BQ / 8][4];
#pragma unroll
            for (int n = 0; n < BQ / 8; n++) ds[n][0] = ds[n][1] = ds[n][2] = ds[n][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < DV / 16; kk++) {
                uint32_t a[4];
                load_a(a, v_rows + kk * 16, SV, lane);
#pragma unroll
                for (int n = 0; n < BQ / 16; n++) {
                    uint32_t b[4];
                    load_b_nk(b, do_tile + n * 16 * SV + kk * 16, SV, lane);
                    mma_16816(ds[2 * n], a, b[0], b[1]);
                    mma_16816(ds[2 * n + 1], a, b[2], b[3]);
                }
            }
#pragma unroll
            for (int n = 0; n < BQ / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) ds[n][e] = p[n][e] * (ds[n][e] - delta_tile[n * 8 + 2 * t + (e % 2)]);
            // dK += dS^T Q.
#pragma unroll
            for (int kk = 0; kk < BQ / 16; kk++) {
                uint32_t a[4] = {pack_bf16(ds[2 * kk][0], ds[2 * kk][1]), pack_bf16(ds[2 * kk][2], ds[2 * kk][3]),
                                 pack_bf16(ds[2 * kk + 1][0], ds[2 * kk + 1][1]),
                                 pack_bf16(ds[2 * kk + 1][2], ds[2 * kk + 1][3])};
#pragma unroll
                for (int n = 0; n < D / 16; n++) {
                    uint32_t b[4];
                    load_b_kn(b, q_tile + kk * 16 * SQ + n * 16, SQ, lane);
                    mma_16816(dk[2 * n], a, b[0], b[1]);
                    mma_16816(dk[2 * n + 1], a, b[2], b[3]);
                }
            }
        }
    }

#pragma unroll
    for (int half = 0; half < 2; half++) {
        int64_t key = key_row0 + half * 8;
        if (key >= walk.limit) continue;
        if constexpr (DO_DK) {
            bf16 *row = c.dk + (key * kh + hk) * D;
#pragma unroll
            for (int n = 0; n < D / 8; n++)
                *reinterpret_cast<__nv_bfloat162 *>(row + n * 8 + 2 * t) =
                    __floats2bfloat162_rn(dk[n][2 * half] * c.scale, dk[n][2 * half + 1] * c.scale);
        }
        if constexpr (DO_DV) {
            bf16 *row = c.dv + (key * kh + hk) * DV;
#pragma unroll
            for (int n = 0; n < DV / 8; n++)
                *reinterpret_cast<__nv_bfloat162 *>(row + n * 8 + 2 * t) =
                    __floats2bfloat162_rn(dv[n][2 * half], dv[n][2 * half + 1]);
        }
    }
}

template <int D, int DV, int WARPS, int M, int BK> struct query_shape {
    static constexpr int BQ = 16 * M * WARPS, SQ = D + 8, SV = DV + 8;
    static constexpr size_t shared_bytes =
        sizeof(bf16) * ((size_t)BQ * SQ + (size_t)BQ * SV + 2 * (size_t)BK * SQ + 2 * (size_t)BK * SV);
};

// M: 16-row atoms a warp owns (each K / V fragment loaded from shared memory feeds M mma's).
template <int D, int DV, int WARPS, int M, int BK, bool BLOCK_MASK>
__global__ void __launch_bounds__(WARPS * 32) flash_query_kernel(flash_call c) {
    using shape = query_shape<D, DV, WARPS, M, BK>;
    constexpr int BQ = shape::BQ, SQ = shape::SQ, SV = shape::SV, THREADS = WARPS * 32;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    bf16 *sq = reinterpret_cast<bf16 *>(shared_raw); // (BQ, SQ)
    bf16 *sdo = sq + BQ * SQ;                        // (BQ, SV)
    bf16 *sk = sdo + BQ * SV;                        // 2 x (BK, SQ)
    bf16 *sv = sk + 2 * BK * SQ;                     // 2 x (BK, SV)

    tile_walk<BLOCK_MASK> walk;
    if (!walk.template query_tile<BQ, BK>(c)) return;
    const int h = walk.head, hk = h / c.group, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int64_t qh = c.query_heads, kh = c.kv_heads;

    for (int i = threadIdx.x; i < BQ * (D / 8); i += THREADS) {
        int r = i / (D / 8), chunk = i % (D / 8);
        int64_t token = walk.first + r;
        bool ok = token < walk.limit;
        copy_16(sq + r * SQ + chunk * 8, c.q + ((ok ? token : 0) * qh + h) * D + chunk * 8, ok);
    }
    for (int i = threadIdx.x; i < BQ * (DV / 8); i += THREADS) {
        int r = i / (DV / 8), chunk = i % (DV / 8);
        int64_t token = walk.first + r;
        bool ok = token < walk.limit;
        copy_16(sdo + r * SV + chunk * 8, c.dout + ((ok ? token : 0) * qh + h) * DV + chunk * 8, ok);
    }
    const int tiles = walk.template tiles<BK>(h);
    auto load_tile = [&](int j, int buffer) {
        bool masked;
        int64_t key0 = walk.template tile<BQ, BK>(c, h, j, &masked);
        bf16 *k_tile = sk + buffer * BK * SQ, *v_tile = sv + buffer * BK * SV;
        for (int i = threadIdx.x; i < BK * (D / 8); i += THREADS) {
            int r = i / (D / 8), chunk = i % (D / 8);
            int64_t token = key0 + r;
            bool ok = token < walk.end;
            copy_16(k_tile + r * SQ + chunk * 8, c.k + ((ok ? token : 0) * kh + hk) * D + chunk * 8, ok);
        }
        for (int i = threadIdx.x; i < BK * (DV / 8); i += THREADS) {
            int r = i / (DV / 8), chunk = i % (DV / 8);
            int64_t token = key0 + r;
            bool ok = token < walk.end;
            copy_16(v_tile + r * SV + chunk * 8, c.v + ((ok ? token : 0) * kh + hk) * DV + chunk * 8, ok);
        }
    };
    if (tiles > 0) load_tile(0, 0);
    copy_commit();

    // this thread's rows: row0 + 16 m + 8 half
    const int64_t row0 = walk.first + warp * 16 * M + g;
    float row_lse[M][2], row_delta[M][2];
    float dq[M][D / 8][4];
#pragma unroll
    for (int m = 0; m < M; m++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t row = row0 + m * 16 + half * 8;
            bool ok = row < walk.limit;
            row_lse[m][half] = ok ? c.lse[row * qh + h] * log2_e : INFINITY;
            row_delta[m][half] = ok ? c.delta[row * qh + h] : 0.f;
        }
#pragma unroll
        for (int n = 0; n < D / 8; n++) dq[m][n][0] = dq[m][n][1] = dq[m][n][2] = dq[m][n][3] = 0.f;
    }
    const bf16 *q_rows = sq + warp * 16 * M * SQ, *do_rows = sdo + warp * 16 * M * SV;

    for (int j = 0; j < tiles; j++) {
        if (j + 1 < tiles) load_tile(j + 1, (j + 1) & 1);
        copy_commit();
        copy_wait<1>();
        __syncthreads();
        const bf16 *k_tile = sk + (j & 1) * BK * SQ, *v_tile = sv + (j & 1) * BK * SV;
        bool masked;
        int64_t key0 = walk.template tile<BQ, BK>(c, h, j, &masked);

        float p[M][BK / 8][4], ds[M][BK / 8][4];
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int n = 0; n < BK / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) p[m][n][e] = ds[m][n][e] = 0.f;
        // S = Q K^T and dP = dout V^T.
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t a[M][4];
#pragma unroll
            for (int m = 0; m < M; m++) load_a(a[m], q_rows + m * 16 * SQ + kk * 16, SQ, lane);
#pragma unroll
            for (int n = 0; n < BK / 16; n++) {
                uint32_t b[4];
                load_b_nk(b, k_tile + n * 16 * SQ + kk * 16, SQ, lane);
#pragma unroll
                for (int m = 0; m < M; m++) {
                    mma_16816(p[m][2 * n], a[m], b[0], b[1]);
                    mma_16816(p[m][2 * n + 1], a[m], b[2], b[3]);
                }
            }
        }
#pragma unroll
        for (int kk = 0; kk < DV / 16; kk++) {
            uint32_t a[M][4];
#pragma unroll
            for (int m = 0; m < M; m++) load_a(a[m], do_rows + m * 16 * SV + kk * 16, SV, lane);
#pragma unroll
            for (int n = 0; n < BK / 16; n++) {
                uint32_t b[4];
                load_b_nk(b, v_tile + n * 16 * SV + kk * 16, SV, lane);
#pragma unroll
                for (int m = 0; m < M; m++) {
                    mma_16816(ds[m][2 * n], a[m], b[0], b[1]);
                    mma_16816(ds[m][2 * n + 1], a[m], b[2], b[3]);
                }
            }
        }
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int n = 0; n < BK / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float value = exp2f(p[m][n][e] * c.scale_log2 - row_lse[m][e / 2]);
                    if (masked && !walk.visible(c, row0 + m * 16 + (e / 2) * 8, key0 + n * 8 + 2 * t + (e % 2)))
                        value = 0.f;
                    ds[m][n][e] = value * (ds[m][n][e] - row_delta[m][e / 2]);
                }
        // dQ += dS K (contraction over the BK keys).
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t a[M][4];
#pragma unroll
            for (int m = 0; m < M; m++) {
                a[m][0] = pack_bf16(ds[m][2 * kk][0], ds[m][2 * kk][1]);
                a[m][1] = pack_bf16(ds[m][2 * kk][2], ds[m][2 * kk][3]);
                a[m][2] = pack_bf16(ds[m][2 * kk + 1][0], ds[m][2 * kk + 1][1]);
                a[m][3] = pack_bf16(ds[m][2 * kk + 1][2], ds[m][2 * kk + 1][3]);
            }
#pragma unroll
            for (int n = 0; n < D / 16; n++) {
                uint32_t b[4];
                load_b_kn(b, k_tile + kk * 16 * SQ + n * 16, SQ, lane);
#pragma unroll
                for (int m = 0; m < M; m++) {
                    mma_16816(dq[m][2 * n], a[m], b[0], b[1]);
                    mma_16816(dq[m][2 * n + 1], a[m], b[2], b[3]);
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t row = row0 + m * 16 + half * 8;
            if (row >= walk.limit) continue;
            bf16 *out_row = c.dq + (row * qh + h) * D;
#pragma unroll
            for (int n = 0; n < D / 8; n++)
                *reinterpret_cast<__nv_bfloat162 *>(out_row + n * 8 + 2 * t) =
                    __floats2bfloat162_rn(dq[m][n][2 * half] * c.scale, dq[m][n][2 * half + 1] * c.scale);
        }
}

template <int D, int DV, int WARPS, int BQ, bool BLOCK_MASK, bool DO_DK, bool DO_DV>
parity_error *launch_key_value(const flash_call &call, const flash_grid &grid, cudaStream_t stream) {
    using shape = key_value_shape<D, DV, WARPS, BQ>;
    auto kernel = flash_key_value_kernel<D, DV, WARPS, BQ, BLOCK_MASK, DO_DK, DO_DV>;
    PARITY_TRY(flash_allow_shared((const void *)kernel, "dk/dv backward", shape::shared_bytes, grid.device_index));
    dim3 blocks((unsigned)((grid.longest + shape::BK - 1) / shape::BK), (unsigned)call.kv_heads, (unsigned)grid.documents);
    kernel<<<blocks, WARPS * 32, shape::shared_bytes, stream>>>(call);
    PARITY_CUDA_TRY_LAUNCH("flash_key_value");
    return NULL;
}

template <int D, int DV, int WARPS, int M, int BK, bool BLOCK_MASK>
parity_error *launch_query(const flash_call &call, const flash_grid &grid, cudaStream_t stream) {
    using shape = query_shape<D, DV, WARPS, M, BK>;
    auto kernel = flash_query_kernel<D, DV, WARPS, M, BK, BLOCK_MASK>;
    PARITY_TRY(flash_allow_shared((const void *)kernel, "dq backward", shape::shared_bytes, grid.device_index));
    dim3 blocks((unsigned)((grid.longest + shape::BQ - 1) / shape::BQ), (unsigned)call.query_heads,
                (unsigned)grid.documents);
    kernel<<<blocks, WARPS * 32, shape::shared_bytes, stream>>>(call);
    PARITY_CUDA_TRY_LAUNCH("flash_query");
    return NULL;
}

template <int D, int DV, bool BLOCK_MASK>
parity_error *backward_schedule(const flash_call &call, const flash_grid &grid, cudaStream_t stream) {
    // dq: 32 query rows a warp with key tiles of 32 up to D = 128 (H200, (4, 16, 4096, 128) causal:
    // fwd+bwd 145 TFLOP/s against 140 with 16 rows and tiles of 64); 16 rows above (registers).
    // dk/dv: 16 keys a warp, query tiles of 32.
    constexpr int BQ_KV = 32, M_Q = D <= 128 ? 2 : 1, BK_Q = M_Q == 2 || D >= 256 ? 32 : 64;
    if (call.dk || call.dv) {
        if constexpr (D + DV <= 256) {
            PARITY_TRY((launch_key_value<D, DV, 4, BQ_KV, BLOCK_MASK, true, true>(call, grid, stream)));
        } else {
            if (call.dv) PARITY_TRY((launch_key_value<D, DV, 4, BQ_KV, BLOCK_MASK, false, true>(call, grid, stream)));
            if (call.dk) PARITY_TRY((launch_key_value<D, DV, 4, BQ_KV, BLOCK_MASK, true, false>(call, grid, stream)));
        }
    }
    if (call.dq) PARITY_TRY((launch_query<D, DV, 4, M_Q, BK_Q, BLOCK_MASK>(call, grid, stream)));
    return NULL;
}

} // namespace

// Delta first (into call.delta, which the caller allocated), then dk/dv and dq.
template <int D, int DV>
parity_error *flash_backward_for(const flash_call &call, const flash_grid &grid, cudaStream_t stream) {
    int64_t rows = call.tokens * call.query_heads;
    flash_delta_kernel<<<(unsigned)((rows * 32 + 255) / 256), 256, 0, stream>>>(call.dout, call.out, rows, DV,
                                                                                const_cast<float *>(call.delta));
    PARITY_CUDA_TRY_LAUNCH("flash_delta");
    return grid.block_mask ? backward_schedule<D, DV, true>(call, grid, stream)
                           : backward_schedule<D, DV, false>(call, grid, stream);
}

#define PARITY_FLASH_BACKWARD_INSTANCE(D, DV)                                                                         \
    template parity_error *flash_backward_for<D, DV>(const flash_call &, const flash_grid &, cudaStream_t);
PARITY_FLASH_HEAD_SIZES(PARITY_FLASH_BACKWARD_INSTANCE)

} // namespace parity_flash
