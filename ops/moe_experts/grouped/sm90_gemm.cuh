// sm90_gemm.cuh: the device side of fused_quack's grouped GEMMs (sm90_gemm.h), included by
// sm90_gemm.cu alone. Needs sm_90a (wgmma).
//
// CTA: 384 threads = 3 warpgroups.
//   warpgroup 0   producer: its thread 0 issues every TMA load; the other 127 threads exit at once
//   warpgroups 1-2  consumers: warpgroup 1 + w computes rows [64 w, 64 w + 64) of the 128 x 128
//                 tile with wgmma m64n128k16 (64 f32 accumulators a thread), then stores its rows
// Tile: BM = 128 rows (kGroupTileRows: the dispatch's tile_offsets count these) x BN = 128 columns
// x BK = 64 of the contraction (64 bf16 = 128 bytes: one 128-byte swizzle row).
// Shared memory ring: kStages stages, each A (128 rows x 128 B = 16 KiB) then B (16 KiB), every
// operand base 1024-byte aligned (the 128-byte swizzle pattern repeats every 8 rows = 1024 B, and
// the matrix descriptors below assume base offset 0). Two mbarriers a stage:
//   full[s]   1 arrival (the producer's arrive.expect_tx of the stage's 32768 bytes) + the TMA's
//             complete_tx: its phase completes when both operands have landed
//   empty[s]  256 arrivals (every consumer thread, once its wgmma reading the stage has completed,
//             wgmma.wait_group): its phase completes when the stage may be overwritten
// Phases: stage s's k-th fill (k = 0, 1, ...) is full[s]'s phase k; the consumer waits for parity
// k & 1; the producer, before fill k, waits on empty[s] for parity (k & 1) ^ 1 (for k = 0 the
// "preceding phase" of a fresh barrier counts as complete, so the first fill does not wait).
// Persistent schedule: tile t = blockIdx.x, += gridDim.x over tile_offsets[E] row tiles x n_tiles
// column tiles (t / n_tiles: row tile, t % n_tiles: column tile); producer and consumers walk the
// same sequence, so the ring's stage and phase run on across tiles.
// Masking: a row tile may run past its expert's rows into the next expert's (or past R, where TMA
// zero-fills): those rows are computed with this expert's weights and are not stored. Columns past
// N (and K past the end) are zero-filled by TMA; columns >= N are not stored.
// kWeightGrad (the k-grouped weight gradient): tiles (expert, M tile, N tile) of dW_e, K over the
// expert's rows in a padded transposed layout (zeros between experts), an expert without rows
// stores zeros; otherwise the same producer, ring and consumers.
#ifndef PARITY_MOE_SM90_GEMM_CUH
#define PARITY_MOE_SM90_GEMM_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "ops/moe_experts/grouped/sm90_primitives.cuh" // TMA, mbarrier, wgmma
#include "ops/moe_experts/grouped/grouped_math.cuh" // silu_f32, silu_backward_f32, round_bf16, expert_of_tile, store/load_pair, epilogue_kind

namespace parity_moe {
namespace sm90 {

constexpr int kBM = 128, kBN = 128, kBK = 64, kStages = 4, kThreads = 384;
constexpr int kOperandBytes = kBM * kBK * 2;        // 16384: 128 rows x 128 bytes (A; B likewise, kBN = 128)
constexpr int kStageBytes = 2 * kOperandBytes;      // 32768: what full[s] expects per fill
constexpr int kBarrierBytes = 2 * kStages * 8;     // full[kStages], empty[kStages] at the start
constexpr int kSharedBytes = kBarrierBytes + 1024 + kStages * kStageBytes; // + slack to align the ring to 1024 B
constexpr int kEmptyArrivals = 256;                 // the two consumer warpgroups' threads
// The kernel's fourth kind beside grouped_math.cuh's epilogue_kind: the k-grouped weight gradient
// dW_e (M, N) = A_e^T B_e, from A^T (M, padded rows) and B^T (N, padded rows) (sm90_gemm.h).
constexpr int kWeightGrad = 3;

// ---- wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
//   bits  0-13  start address >> 4
//   bits 16-29  leading-dimension byte offset >> 4: unused for K-major operands with a swizzle
//               whose width (128 B) covers the instruction's K extent (16 bf16 = 32 B); set to 1
//   bits 32-45  stride-dimension byte offset >> 4: from one 8-row core-matrix group to the next
//               along M (A) or N (B): 8 rows x 128 B = 1024 B -> 64
//   bits 49-51  base offset: 0 (every operand base is 1024-byte aligned)
//   bits 62-63  swizzle mode: 1 = 128-byte swizzle (what TMA's CU_TENSOR_MAP_SWIZZLE_128B writes)
// The K-th 16-element slice of a 64-element (128-byte) swizzled row starts 32 K bytes later: the
// hardware applies the swizzle (address bits [4, 7) ^= bits [7, 10)) to the computed address, so
// advancing the start address by 32 B (2 in the >> 4 field) selects the next slice.
__device__ __forceinline__ uint64_t smem_descriptor(uint32_t address) {
    uint64_t descriptor = 0;
    descriptor |= (uint64_t)((address >> 4) & 0x3FFF);
    descriptor |= (uint64_t)1 << 16;           // LBO (unused, see above)
    descriptor |= (uint64_t)(1024 >> 4) << 32; // SBO = 1024 B
    descriptor |= (uint64_t)1 << 62;           // 128-byte swizzle
    return descriptor;
}

struct params {
    int64_t rows;                  // R: the A map's row count
    int64_t k_size;                // contraction K (row-grouped kinds; the weight gradient's is per expert)
    int64_t m_size;                // kWeightGrad: output rows M a expert
    int64_t n_size;                // output columns: N (STORE, kWeightGrad) or I (the SwiGLU kinds)
    const int64_t *expert_offsets; // (E + 1)
    const int64_t *tile_offsets;   // (E + 1), in kBM-row tiles
    int experts;
    bf16 *c;                       // STORE: (R, N); SWIGLU: h (R, I); kWeightGrad: (E, M, N)
    bf16 *gate_up;                 // SWIGLU: written; SWIGLU_BACKWARD: read (R, 2I)
    bf16 *dgate_up;                // SWIGLU_BACKWARD: written (R, 2I)
};

// Where tile t is: its expert, first output row (a sorted row, or a row of dW_e) and the end of the
// rows it may store, first output column, first K element and K slices, its output matrix.
struct tile_place {
    int expert;
    int64_t row_begin, row_end, n0, k_begin, slices;
    bf16 *c;
};

// Tiles in the schedule: row-grouped kinds tile_offsets[E] row tiles x n_tiles (read on the
// device); kWeightGrad E x m_tiles x n_tiles, t = (e m_tiles + m_tile) n_tiles + n_tile.
template <int EPI> __device__ __forceinline__ int64_t tile_count(const params &p, int64_t n_tiles) {
    if (EPI == kWeightGrad) return (int64_t)p.experts * ((p.m_size + kBM - 1) / kBM) * n_tiles;
    return p.tile_offsets[p.experts] * n_tiles;
}

template <int EPI> __device__ __forceinline__ tile_place place_of(const params &p, int64_t t, int64_t n_tiles) {
    constexpr int64_t columns = EPI == EPILOGUE_SWIGLU ? kBN / 2 : kBN; // output columns a tile
    tile_place place;
    place.n0 = (t % n_tiles) * columns;
    if (EPI == kWeightGrad) {
        // K runs over the expert's rows in the padded order: columns [tile_offsets[e] kBM, + count)
        // of A^T and B^T, zeros after them up to the next kBM boundary (so ceil(count / kBK) slices).
        const int64_t m_tiles = (p.m_size + kBM - 1) / kBM, em = t / n_tiles;
        place.expert = (int)(em / m_tiles);
        place.row_begin = (em % m_tiles) * kBM;
        place.row_end = p.m_size;
        place.k_begin = p.tile_offsets[place.expert] * kBM;
        place.slices = (p.expert_offsets[place.expert + 1] - p.expert_offsets[place.expert] + kBK - 1) / kBK;
        place.c = p.c + (int64_t)place.expert * p.m_size * p.n_size;
    } else {
        const int64_t row_tile = t / n_tiles;
        place.expert = expert_of_tile(p.tile_offsets, p.experts, row_tile);
        place.row_begin = p.expert_offsets[place.expert] + (row_tile - p.tile_offsets[place.expert]) * kBM;
        place.row_end = p.expert_offsets[place.expert + 1];
        place.k_begin = 0;
        place.slices = (p.k_size + kBK - 1) / kBK;
        place.c = p.c;
    }
    return place;
}

// The tensor maps (sm90_gemm.cu makes them; all bf16, 128-byte swizzle, box inner extent 64):
//   a_map  2D (K, R), box (64, 128)
//   b_map  STORE, SWIGLU_BACKWARD: 3D (K, N, E), box (64, 128, 1): expert e's B (N, K)
//          kWeightGrad: a_map 2D (padded rows, M), b_map 2D (padded rows, N), box (64, 128) each
//          SWIGLU: 4D (H, I, 2, E), box (64, 64, 1, 1): gate_up_proj[e] as its gate half (index 0)
//          and up half (1), so a box of gate rows never runs into the up rows (zero-filled past I)
template <int EPI>
__global__ void __launch_bounds__(kThreads, 1)
    grouped_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map, const params p) {
    extern __shared__ __align__(16) unsigned char shared_raw[];
    // The barriers first (2 kStages x 8 bytes), then the ring from the next 1024-byte boundary
    // (kSharedBytes carries the slack).
    uint64_t *full = reinterpret_cast<uint64_t *>(shared_raw), *empty = full + kStages;
    const uint32_t ring = (shared_address(shared_raw) + kBarrierBytes + 1023u) & ~1023u;

    const int warpgroup = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; s++) {
            barrier_init(&full[s], 1);
            barrier_init(&empty[s], kEmptyArrivals);
        }
        barrier_init_fence();
    }
    __syncthreads(); // the only block-wide barrier: after it the producer's idle threads may exit

    constexpr int64_t columns = EPI == EPILOGUE_SWIGLU ? kBN / 2 : kBN;
    const int64_t n_tiles = (p.n_size + columns - 1) / columns;
    const int64_t tiles = tile_count<EPI>(p, n_tiles);

    if (warpgroup == 0) {
        // ---- producer ----
        if (threadIdx.x != 0) return;
        int stage = 0;
        uint32_t phase = 0;
        for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
            tile_place place = place_of<EPI>(p, t, n_tiles);
            for (int64_t kt = 0; kt < place.slices; kt++) {
                barrier_wait(&empty[stage], phase ^ 1);
                barrier_arrive_expect(&full[stage], kStageBytes);
                uint32_t a_shared = ring + stage * kStageBytes, b_shared = a_shared + kOperandBytes;
                int32_t k0 = (int32_t)(place.k_begin + kt * kBK);
                tma_load_2d(a_shared, &a_map, k0, (int32_t)place.row_begin, &full[stage]);
                if (EPI == kWeightGrad) {
                    tma_load_2d(b_shared, &b_map, k0, (int32_t)place.n0, &full[stage]);
                } else if (EPI == EPILOGUE_SWIGLU) {
                    // B rows [0, 64): gate rows n0..n0+63; rows [64, 128): up rows I+n0..I+n0+63.
                    tma_load_4d(b_shared, &b_map, k0, (int32_t)place.n0, 0, place.expert, &full[stage]);
                    tma_load_4d(b_shared + kOperandBytes / 2, &b_map, k0, (int32_t)place.n0, 1, place.expert, &full[stage]);
                } else {
                    tma_load_3d(b_shared, &b_map, k0, (int32_t)place.n0, place.expert, &full[stage]);
                }
                if (++stage == kStages) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
        return;
    }

    // ---- consumers ----
    const int w = warpgroup - 1;                  // rows [64 w, 64 w + 64) of the tile
    const int local = threadIdx.x - 128 * warpgroup; // thread of the warpgroup
    const int warp = local / 32, lane = local % 32;
    int stage = 0;
    uint32_t phase = 0;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.0f; // never read (the first wgmma of a tile has scale-d 0)
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        tile_place place = place_of<EPI>(p, t, n_tiles);
        int previous = -1; // the stage whose wgmma group may still be in flight
        if (place.slices == 0) // an expert without rows (kWeightGrad only): dW_e = 0
#pragma unroll
            for (int i = 0; i < 64; i++) acc[i] = 0.0f;
        for (int64_t kt = 0; kt < place.slices; kt++) {
            barrier_wait(&full[stage], phase);
            __syncwarp(); // the .sync.aligned wgmma instructions want converged warps (after the spin, the epilogue)
            uint32_t a_shared = ring + stage * kStageBytes + w * (kOperandBytes / 2); // 64 rows x 128 B
            uint32_t b_shared = ring + stage * kStageBytes + kOperandBytes;
            uint64_t a_descriptor = smem_descriptor(a_shared), b_descriptor = smem_descriptor(b_shared);
            wgmma_fence(); // orders the accumulators' earlier register uses before the wgmma
#pragma unroll
            for (int kk = 0; kk < kBK / 16; kk++)
                wgmma_m64n128k16(acc, a_descriptor + 2 * kk, b_descriptor + 2 * kk, kt > 0 || kk > 0);
            wgmma_commit();
            // The group of slice kt - 1 is complete once at most this one is pending: free its stage.
            wgmma_wait<1>();
            if (previous >= 0) barrier_arrive(&empty[previous]);
            previous = stage;
            if (++stage == kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
        wgmma_wait<0>();
        fence_accumulators(acc);
        if (previous >= 0) barrier_arrive(&empty[previous]);

        // ---- epilogue from registers: row 64 w + 16 warp + lane / 4 + 8 h, column 8 j + 2 (lane % 4) ----
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t position = place.row_begin + 64 * w + 16 * warp + lane / 4 + 8 * h;
            if (position >= place.row_end) continue; // the next expert's rows (or past R, or past M)
            if (EPI == EPILOGUE_STORE || EPI == kWeightGrad) {
#pragma unroll
                for (int j = 0; j < 16; j++) {
                    const int64_t column = place.n0 + 8 * j + 2 * (lane % 4);
                    if (column < p.n_size)
                        store_pair(place.c + position * p.n_size + column, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                }
            } else if (EPI == EPILOGUE_SWIGLU) {
                const int64_t I = p.n_size;
#pragma unroll
                for (int j = 0; j < 8; j++) { // accumulator columns 8 j.. gate, 64 + 8 j.. up
                    const int64_t column = place.n0 + 8 * j + 2 * (lane % 4);
                    if (column >= I) continue;
                    float g0 = round_bf16(acc[4 * j + 2 * h]), g1 = round_bf16(acc[4 * j + 2 * h + 1]);
                    float u0 = round_bf16(acc[4 * (j + 8) + 2 * h]), u1 = round_bf16(acc[4 * (j + 8) + 2 * h + 1]);
                    store_pair(p.gate_up + position * 2 * I + column, g0, g1);
                    store_pair(p.gate_up + position * 2 * I + I + column, u0, u1);
                    store_pair(p.c + position * I + column, silu_f32(g0) * u0, silu_f32(g1) * u1);
                }
            } else { // SWIGLU_BACKWARD: acc = dh (R, I) in f32
                const int64_t I = p.n_size;
#pragma unroll
                for (int j = 0; j < 16; j++) {
                    const int64_t column = place.n0 + 8 * j + 2 * (lane % 4);
                    if (column >= I) continue;
                    float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
                    float2 gate = load_pair(p.gate_up + position * 2 * I + column);
                    float2 up = load_pair(p.gate_up + position * 2 * I + I + column);
                    store_pair(p.dgate_up + position * 2 * I + column, silu_backward_f32(v0 * up.x, gate.x),
                               silu_backward_f32(v1 * up.y, gate.y));
                    store_pair(p.dgate_up + position * 2 * I + I + column, v0 * silu_f32(gate.x), v1 * silu_f32(gate.y));
                }
            }
        }
    }
}

// out[p] = hidden[permuted_rows[p] / top_k]: one thread per 8 elements (16 bytes).
__global__ void gather_rows_kernel(const bf16 *hidden, const int64_t *permuted_rows, int64_t top_k, int64_t rows,
                                   int64_t hidden_size, bf16 *out) {
    const int64_t chunks = hidden_size / 8;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * chunks; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t p = i / chunks, c = i % chunks;
        int64_t source = permuted_rows[p] / top_k;
        reinterpret_cast<uint4 *>(out + p * hidden_size)[c] = reinterpret_cast<const uint4 *>(hidden + source * hidden_size)[c];
    }
}

// out[e] (cols, rows) = in[e] (rows, cols)^T through a 32 x 33 shared tile: block (x, y, e) owns
// in's rows [32 y, 32 y + 32) x columns [32 x, 32 x + 32); 32 x 8 threads.
__global__ void transpose_kernel(const bf16 *in, int64_t rows, int64_t cols, bf16 *out) {
    __shared__ bf16 tile[32][33];
    const int64_t e = blockIdx.z, r0 = (int64_t)blockIdx.y * 32, c0 = (int64_t)blockIdx.x * 32;
    const bf16 *source = in + e * rows * cols;
    bf16 *target = out + e * rows * cols;
    for (int i = threadIdx.y; i < 32; i += 8) {
        int64_t r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = source[r * cols + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        int64_t c = c0 + i, r = r0 + threadIdx.x; // out row c, column r
        if (r < rows && c < cols) target[c * rows + r] = tile[threadIdx.x][i];
    }
}

// The weight gradient's operands: out (m_size, padded) with out[m][q] = src[source(q)][m] for the
// padded column q = tile_offsets[e] kBM + (p - expert_offsets[e]) of sorted row p (source(q) = p, or
// gather[p] / divisor), and 0 in every expert's padding and past the last expert's tiles.
// Block (32, 8) owns columns q in [32 x, 32 x + 32) x rows m in [32 y, 32 y + 32), through a
// 32 x 33 bf16 tile of dynamic shared memory (kTransposeSharedBytes).
constexpr int kTransposeSharedBytes = 32 * 33 * 2;
__global__ void transpose_padded_kernel(const bf16 *src, const int64_t *gather, int64_t divisor, int64_t m_size,
                                        int64_t padded, const int64_t *expert_offsets, const int64_t *tile_offsets,
                                        int experts, bf16 *out) {
    extern __shared__ __align__(16) unsigned char shared_raw[];
    bf16(*tile)[33] = reinterpret_cast<bf16(*)[33]>(shared_raw);
    const int64_t q0 = (int64_t)blockIdx.x * 32, m0 = (int64_t)blockIdx.y * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int64_t q = q0 + i, m = m0 + threadIdx.x, row_tile = q / kBM;
        bf16 value = __float2bfloat16_rn(0.0f);
        if (q < padded && m < m_size && row_tile < tile_offsets[experts]) {
            const int e = expert_of_tile(tile_offsets, experts, row_tile);
            const int64_t p = expert_offsets[e] + (q - tile_offsets[e] * kBM);
            if (p < expert_offsets[e + 1]) value = src[(gather ? gather[p] / divisor : p) * m_size + m];
        }
        tile[i][threadIdx.x] = value;
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int64_t m = m0 + i, q = q0 + threadIdx.x;
        if (m < m_size && q < padded) out[m * padded + q] = tile[threadIdx.x][i];
    }
}

} // namespace sm90
} // namespace parity_moe

#endif
