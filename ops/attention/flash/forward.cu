// forward.cu: the FlashAttention-2 forward on tensor cores (mma.sync m16n8k16, bf16 in, f32
// accumulate) and its launcher. One block of WARPS warps per (query tile of BQ = 16 M WARPS rows,
// query head[, document]); warp w owns rows 16 M w .. 16 M (w + 1) - 1 of the tile.
//   q tile (BQ, D) staged once in shared memory (held in registers when D <= 128);
//   key / value tiles (BK, D) / (BK, Dv) double-buffered with cp.async while the previous one computes;
//   per key tile: S = Q K^T (16 x BK a warp, f32), masked -> -inf where the schedule says the tile
//   crosses a bound, x = scale log2(e) S, m' = max(m, rowmax x), p = exp2(x - m'),
//   l = exp2(m - m') l + rowsum p, O = exp2(m - m') O + bf16(p) V (p straight from the registers);
//   at the end out = O / l (0 for a row that saw nothing), lse = ln 2 (m + log2 l) (+inf for it).
// Shared-memory rows are padded by 8 elements (16 bytes) so ldmatrix's 8 row addresses hit 8
// different bank quads for every D here. Instantiated for the head sizes flash.h lists.
#include "ops/attention/flash/flash.h"
#include "ops/attention/flash/mma.cuh"

namespace parity_flash {

template <int D, int DV, int WARPS, int M, int BK> struct forward_shape {
    static constexpr int BQ = 16 * M * WARPS, SQ = D + 8, SV = DV + 8;
    static constexpr size_t shared_bytes = sizeof(bf16) * ((size_t)BQ * SQ + 2 * (size_t)BK * SQ + 2 * (size_t)BK * SV);
};

// M: 16-row atoms a warp owns (each K / V fragment loaded from shared memory feeds M mma's).
template <int D, int DV, int WARPS, int M, int BK, bool BLOCK_MASK>
__global__ void __launch_bounds__(WARPS * 32) flash_forward_kernel(flash_call c) {
    using shape = forward_shape<D, DV, WARPS, M, BK>;
    constexpr int BQ = shape::BQ, SQ = shape::SQ, SV = shape::SV, THREADS = WARPS * 32;
    constexpr bool Q_IN_REGISTERS = M == 1 && D <= 128;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    bf16 *sq = reinterpret_cast<bf16 *>(shared_raw); // (BQ, SQ)
    bf16 *sk = sq + BQ * SQ;                         // 2 x (BK, SQ)
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
    copy_wait<0>();
    __syncthreads();

    const bf16 *q_rows = sq + warp * 16 * M * SQ; // atom m: rows 16 m .. 16 m + 15 of the warp's
    uint32_t q_fragments[Q_IN_REGISTERS ? D / 16 : 1][4];
    if constexpr (Q_IN_REGISTERS) {
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) load_a(q_fragments[kk], q_rows + kk * 16, SQ, lane);
    }

    float o[M][DV / 8][4];
    float row_max[M][2], row_sum[M][2];
#pragma unroll
    for (int m = 0; m < M; m++) {
#pragma unroll
        for (int n = 0; n < DV / 8; n++) o[m][n][0] = o[m][n][1] = o[m][n][2] = o[m][n][3] = 0.f;
        row_max[m][0] = row_max[m][1] = -INFINITY;
        row_sum[m][0] = row_sum[m][1] = 0.f;
    }
    // this thread's rows: row0 + 16 m + 8 half
    const int64_t row0 = walk.first + warp * 16 * M + g;

    for (int j = 0; j < tiles; j++) {
        if (j + 1 < tiles) load_tile(j + 1, (j + 1) & 1);
        copy_commit();
        copy_wait<1>();
        __syncthreads();
        const bf16 *k_tile = sk + (j & 1) * BK * SQ, *v_tile = sv + (j & 1) * BK * SV;
        bool masked;
        int64_t key0 = walk.template tile<BQ, BK>(c, h, j, &masked);

        float s[M][BK / 8][4];
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int n = 0; n < BK / 8; n++) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t a[M][4];
#pragma unroll
            for (int m = 0; m < M; m++) {
                if constexpr (Q_IN_REGISTERS) {
#pragma unroll
                    for (int e = 0; e < 4; e++) a[m][e] = q_fragments[kk][e];
                } else {
                    load_a(a[m], q_rows + m * 16 * SQ + kk * 16, SQ, lane);
                }
            }
#pragma unroll
            for (int n = 0; n < BK / 16; n++) {
                uint32_t b[4];
                load_b_nk(b, k_tile + n * 16 * SQ + kk * 16, SQ, lane);
#pragma unroll
                for (int m = 0; m < M; m++) {
                    mma_16816(s[m][2 * n], a[m], b[0], b[1]);
                    mma_16816(s[m][2 * n + 1], a[m], b[2], b[3]);
                }
            }
        }
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int n = 0; n < BK / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s[m][n][e] *= c.scale_log2;
                    if (masked) {
                        int64_t query = row0 + m * 16 + (e / 2) * 8, key = key0 + n * 8 + 2 * t + (e % 2);
                        if (!walk.visible(c, query, key)) s[m][n][e] = -INFINITY;
                    }
                }
        // Online softmax per row (this thread's 2 M rows; a row's 4 threads are one quad).
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int half = 0; half < 2; half++) {
                float top = row_max[m][half];
#pragma unroll
                for (int n = 0; n < BK / 8; n++) top = fmaxf(top, fmaxf(s[m][n][2 * half], s[m][n][2 * half + 1]));
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
                float base = top == -INFINITY ? 0.f : top; // a row that saw nothing yet keeps p = 0
                float alpha = exp2f(row_max[m][half] - base);
                row_max[m][half] = top;
                float sum = 0.f;
#pragma unroll
                for (int n = 0; n < BK / 8; n++) {
                    s[m][n][2 * half] = exp2f(s[m][n][2 * half] - base);
                    s[m][n][2 * half + 1] = exp2f(s[m][n][2 * half + 1] - base);
                    sum += s[m][n][2 * half] + s[m][n][2 * half + 1];
                }
                row_sum[m][half] = alpha * row_sum[m][half] + sum;
#pragma unroll
                for (int n = 0; n < DV / 8; n++) {
                    o[m][n][2 * half] *= alpha;
                    o[m][n][2 * half + 1] *= alpha;
                }
            }
        // O += P V, P from the S registers.
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t a[M][4];
#pragma unroll
            for (int m = 0; m < M; m++) {
                a[m][0] = pack_bf16(s[m][2 * kk][0], s[m][2 * kk][1]);
                a[m][1] = pack_bf16(s[m][2 * kk][2], s[m][2 * kk][3]);
                a[m][2] = pack_bf16(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
                a[m][3] = pack_bf16(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
            }
#pragma unroll
            for (int n = 0; n < DV / 16; n++) {
                uint32_t b[4];
                load_b_kn(b, v_tile + kk * 16 * SV + n * 16, SV, lane);
#pragma unroll
                for (int m = 0; m < M; m++) {
                    mma_16816(o[m][2 * n], a[m], b[0], b[1]);
                    mma_16816(o[m][2 * n + 1], a[m], b[2], b[3]);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            float sum = row_sum[m][half];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            int64_t row = row0 + m * 16 + half * 8;
            if (row >= walk.limit) continue;
            float inverse = sum > 0.f ? 1.f / sum : 0.f;
            bf16 *out_row = c.out + (row * qh + h) * DV;
#pragma unroll
            for (int n = 0; n < DV / 8; n++) {
                __nv_bfloat162 pair =
                    __floats2bfloat162_rn(o[m][n][2 * half] * inverse, o[m][n][2 * half + 1] * inverse);
                *reinterpret_cast<__nv_bfloat162 *>(out_row + n * 8 + 2 * t) = pair;
            }
            if (t == 0)
                c.lse[row * qh + h] = sum > 0.f ? (row_max[m][half] + log2f(sum)) * 0.69314718055994531f : INFINITY;
        }
}

template <int D, int DV, int WARPS, int M, int BK, bool BLOCK_MASK>
parity_error *launch_forward(const flash_call &call, const flash_grid &grid, cudaStream_t stream) {
    using shape = forward_shape<D, DV, WARPS, M, BK>;
    auto kernel = flash_forward_kernel<D, DV, WARPS, M, BK, BLOCK_MASK>;
    PARITY_TRY(flash_allow_shared((const void *)kernel, "forward", shape::shared_bytes, grid.device_index));
    dim3 blocks((unsigned)((grid.longest + shape::BQ - 1) / shape::BQ), (unsigned)call.query_heads,
                (unsigned)grid.documents);
    kernel<<<blocks, WARPS * 32, shape::shared_bytes, stream>>>(call);
    PARITY_CUDA_TRY_LAUNCH("flash_forward");
    return NULL;
}

// Tiles per head size (H200, (4, 16, 4096, 128) causal: 32 rows a warp with key tiles of 32 ran at
// 185 TFLOP/s where 16 rows with tiles of 64 ran at 157): 4 warps of 32 query rows (128) and key tiles
// of 32 up to Dv = 128; above that 16 rows a warp (registers), key tiles of 64 (32 at D = 256).
template <int D, int DV> parity_error *flash_forward_for(const flash_call &call, const flash_grid &grid, cudaStream_t stream) {
    constexpr int M = DV <= 128 ? 2 : 1, BK = M == 2 || D >= 256 ? 32 : 64;
    return grid.block_mask ? launch_forward<D, DV, 4, M, BK, true>(call, grid, stream)
                           : launch_forward<D, DV, 4, M, BK, false>(call, grid, stream);
}

#define PARITY_FLASH_FORWARD_INSTANCE(D, DV)                                                                          \
    template parity_error *flash_forward_for<D, DV>(const flash_call &, const flash_grid &, cudaStream_t);
PARITY_FLASH_HEAD_SIZES(PARITY_FLASH_FORWARD_INSTANCE)

} // namespace parity_flash
