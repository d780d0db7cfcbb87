// chunked_tensor_core.cuh: the forward of chunked.cu (chunk_prepare, chunk_states, chunk_output) on
// tensor cores, for bf16 calls: the same math and the same scratch (w, u, T, S_c, delta in f32, laid
// out as chunk_plan says), every product a warp-level mma.sync m16n8k8 with TF32 operands (10-bit
// mantissa, rounded to nearest from the f32 values) and f32 accumulators, instead of chunked.cu's
// CUDA-core register tiles. The backward's recomputation uses it as well (keep_solve, transposed S).
// Why TF32 and not bf16 operands (fla's choice): a bf16 call of the CUDA-core path carries exactly
// eager's error (the bf16 rounding of o and of the gradients); TF32 operands add a relative ~2^-11
// per product, well inside the "2x eager's relative RMS" rule, where bf16 operands (2^-8) would not be.
//
// Tiles: every chunk is a 64-row tile in shared memory; rows past the chunk's length L are zero
// (zero-fill copies), so the products run over whole 16 x 8 x 8 steps and only the epilogues mask.
// Row strides are padded so that a fragment's 32 lanes hit 32 banks: stride = 4 (mod 32) for operands
// read by ldmatrix (8 rows of 4 floats: A, and B stored n-major), 8 (mod 32) for B read along columns
// by scalar loads. Operands the kernels write themselves (S^T, the scaled delta, P) are stored
// TF32-rounded, so only operands copied from the scratch are converted per use. Dk is a template
// parameter (64 or 128): index arithmetic folds to constants and shifts.
//   prepare (per chunk, value head; 8 warps, 2 blocks an SM): K copied (cp.async), V loaded 16 bytes
//     at a time; A = K K^T on tensor cores; T = (I + A)^-1 by tc_solve (16 x 16 diagonal blocks by
//     substitution in registers, merged to 64 x 64 by 3xTF32 products: f32-accurate); w = T diag(beta
//     exp(G)) K and u = T diag(beta) V (the diagonal applied to T's fragments as they are read).
//   states (per document, value head, NC = 16, 32 or 64 state columns; 8 warps): the next chunk's w, K, u
//     and G are copied (cp.async, double buffered) while this one computes; S (Dk x NC) lives in the
//     warps' accumulators and goes to the scratch from them; delta = u - w S (A = w, B = S^T by
//     ldmatrix), S = exp(G_last) S + K^T diag(exp(G_last - G)) delta; two barriers a chunk. NC = 16
//     while the blocks do not fill the SMs, else 32 (half the bytes staged per state column), or 64
//     where the blocks still fill them (the launcher says what was measured).
//   output (per chunk, value head; 8 warps, a block an SM): Q, K, G, then S_c, then delta staged in
//     three cp.async groups; P = Q K^T o Dm (lower triangle) while S_c and delta arrive; O =
//     diag(exp(G)) Q S_c + P delta, a warp one 16-row tile over half the columns.
// Shapes taken: Dk 64 or 128 (Qwen3.5 / Qwen3-Next: 128), Dv a multiple of 16 up to 128, chunks <= 64,
// v and o 16-byte aligned; other bf16 calls run chunked.cu's CUDA-core kernels. Included by
// chunked.cu after chunk_plan (one translation unit: the plan's types are internal to it).
#ifndef PARITY_GATED_DELTA_RULE_CHUNKED_TENSOR_CORE_CUH
#define PARITY_GATED_DELTA_RULE_CHUNKED_TENSOR_CORE_CUH

#include "ops/attention/flash/mma.cuh"

namespace {

constexpr int tc_rows = 64;      // rows of a chunk tile (chunks of at most 64 tokens)
constexpr int tc_threads = 256;  // 8 warps
constexpr int tc_warps = tc_threads / 32;
constexpr int tc_max_dim = 128;

// ---- warp-level TF32 products ----

__device__ __forceinline__ uint32_t to_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// d (16 x 8) += a (16 x 8) b (8 x 8). Fragments (PTX ISA "mma.m16n8k8", lane = 4 g + t):
//   a0 (g, t) a1 (g + 8, t) a2 (g, t + 4) a3 (g + 8, t + 4); b0 (k t, n g) b1 (k t + 4, n g);
//   d0 d1 (g, 2t .. 2t + 1), d2 d3 (g + 8, 2t .. 2t + 1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// acc[j] (16 x 8) += a (16 x 8, one k step of 8) B[k .., n0 + 8 j ..) for the column tiles j < nj (nj <= 8):
// B row-major in shared memory (row stride ldb; at 8 (mod 32) the lanes' (k t, n g) reads hit 32 banks),
// read by scalar loads from b_row = B + (k + t) ldb + n0 + g and converted to TF32 per use.
__device__ __forceinline__ void mma_row_tiles(float (&acc)[8][4], const uint32_t (&a)[4], const float *b_row, int ldb,
                                              int nj) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if (j >= nj) break;
        const uint32_t b[2] = {to_tf32(b_row[8 * j]), to_tf32(b_row[4 * ldb + 8 * j])};
        mma_tf32(acc[j], a, b);
    }
}

// ---- staging ----

// `count` floats from `from` into `to`, zeros from index `valid` on (4-byte cp.async: any alignment).
__device__ __forceinline__ void copy_floats_async(float *to, const float *from, int count, int valid) {
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(parity_flash::shared_address(to + i)),
                     "l"(from + (i < valid ? i : 0)), "r"(i < valid ? 4 : 0));
}

// The float whose bits are x rounded to TF32 (low 13 mantissa bits zero): an operand written to
// shared memory once in this form is fed to mma.sync without a conversion per use.
__device__ __forceinline__ float round_tf32(float x) { return __uint_as_float(to_tf32(x)); }

// Four 8 x 4 f32 matrices from shared memory (ldmatrix .b16 over pairs: a row of 4 floats is a row of
// 8 b16): lanes 8i .. 8i + 7 address the rows of matrix i, r[i] is its element (lane / 4, lane % 4).
__device__ __forceinline__ void load_f32_x4(uint32_t (&r)[4], const float *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(parity_flash::shared_address(row)));
}

// `ROWS` rows of WIDTH floats, source row stride `stride` (rows and `to` 16-byte aligned), into `to`
// (row stride LD); rows >= rows_valid are zero. Compile-time widths: the index arithmetic is shifts.
template <int ROWS, int WIDTH, int LD>
__device__ __forceinline__ void copy_tile_async(float *to, const float *from, int64_t stride, int rows_valid) {
    constexpr int vectors = WIDTH / 4;
#pragma unroll
    for (int i = threadIdx.x; i < ROWS * vectors; i += tc_threads) {
        const int r = i / vectors, c = i % vectors * 4;
        const bool valid = r < rows_valid;
        parity_flash::copy_16(to + r * LD + c, from + (valid ? r * stride + c : 0), valid);
    }
}

// Whether the tensor-core forward takes the call: bf16, Dk 64 or 128 (tc_states is compiled for those
// two), Dv a multiple of 16 up to 128, every row the copies read 16-byte aligned (the prepared q/k and the scratch are allocations of their own).
inline bool tensor_core_forward_fits(const delta_shape &shape, const void *value, const void *output) {
    return ((uintptr_t)value | (uintptr_t)output) % 16 == 0 && (shape.key_dim == 64 || shape.key_dim == 128) && shape.value_dim % 16 == 0 &&
           shape.value_dim <= tc_max_dim;
}

// ---- prepare ----

// One of the 20 (16 x 8) tiles on or below the diagonal 16 x 16 blocks of X Y^T (64 x 64; X, Y (64, DK)
// row-major in shared memory, row stride LD = 4 or 8 (mod 32)): row tile m has 2 (m + 1) of them. Sets
// the tile's corner (m0, n0) and its product in mma.sync's accumulator layout (d0 d1 (g, 2t ..), d2 d3
// (g + 8, 2t ..)); X and Y by ldmatrix, both converted to TF32 per use, even and odd k steps in two
// accumulators summed at the end.
template <int DK, int LD>
__device__ __forceinline__ void lower_tile_product(const float *X, const float *Y, int tile, int &m0, int &n0,
                                                   float (&out)[4]) {
    const int lane = threadIdx.x % 32, mi = lane / 8, mr = lane % 8;
    const int m = tile < 2 ? 0 : tile < 6 ? 1 : tile < 12 ? 2 : 3;
    m0 = 16 * m, n0 = 8 * (tile - m * (m + 1));
    const float *x_lane = X + (m0 + mr + 8 * (mi & 1)) * LD + 4 * (mi >> 1);
    const float *y_lane = Y + (n0 + mr) * LD + 4 * mi;
    float acc[2][4] = {};
#pragma unroll
    for (int k = 0; k < DK; k += 16) {
        uint32_t a[2][4], bf[4];
        load_f32_x4(a[0], x_lane + k);
        load_f32_x4(a[1], x_lane + k + 8);
        load_f32_x4(bf, y_lane + k);
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int e = 0; e < 4; e++) a[h][e] = to_tf32(__uint_as_float(a[h][e]));
        const uint32_t b_even[2] = {to_tf32(__uint_as_float(bf[0])), to_tf32(__uint_as_float(bf[1]))};
        const uint32_t b_odd[2] = {to_tf32(__uint_as_float(bf[2])), to_tf32(__uint_as_float(bf[3]))};
        mma_tf32(acc[0], a[0], b_even);
        mma_tf32(acc[1], a[1], b_odd);
    }
#pragma unroll
    for (int e = 0; e < 4; e++) out[e] = acc[0][e] + acc[1][e];
}


// acc (16 x 8) += A[m0 .., k0 .. k1) B[k0 .. k1), n0 ..) in "3xTF32": each operand split into a TF32
// high part and a TF32 remainder, hi hi + hi lo + lo hi, an f32-accurate product for the UT solve.
// A and B row-major in shared memory (lda, ldb); k0, k1 multiples of 8.
__device__ __forceinline__ void mma_3xtf32(float (&acc)[4], const float *A, int lda, const float *B, int ldb, int m0, int n0,
                                           int k0, int k1) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int k = k0; k < k1; k += 8) {
        const float av[4] = {A[(m0 + g) * lda + k + t], A[(m0 + g + 8) * lda + k + t], A[(m0 + g) * lda + k + t + 4],
                             A[(m0 + g + 8) * lda + k + t + 4]};
        const float bv[2] = {B[(k + t) * ldb + n0 + g], B[(k + t + 4) * ldb + n0 + g]};
        uint32_t ah[4], al[4], bh[2], bl[2];
#pragma unroll
        for (int e = 0; e < 4; e++) ah[e] = to_tf32(av[e]), al[e] = to_tf32(av[e] - __uint_as_float(ah[e]));
#pragma unroll
        for (int e = 0; e < 2; e++) bh[e] = to_tf32(bv[e]), bl[e] = to_tf32(bv[e] - __uint_as_float(bh[e]));
        mma_tf32(acc, al, bh);
        mma_tf32(acc, ah, bl);
        mma_tf32(acc, ah, bh);
    }
}

// T = (I + A)^-1 for the strictly lower (64, 64) A (ld 68), into T (zeroed by the caller, ld 68): the
// four 16 x 16 diagonal blocks by forward substitution in registers (warps 0-3, lane c = column c),
// then merged to 32 x 32 and to 64 x 64 (T_21 = -T_22 A_21 T_11) with 3xTF32 products through the
// (32, 36) scratch X. Rows past the chunk's length keep a unit diagonal; nothing reads them.
__device__ void tc_solve(float *T, const float *A, float *X) {
    constexpr int ld = tc_rows + 4, ldx = 36;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    if (warp < 4 && lane < 16) {
        const int b = 16 * warp, c = lane;
        float x[16];
#pragma unroll
        for (int r = 0; r < 16; r++) {
            const float *row = A + (b + r) * ld + b;
            float sum = 0.0f;
#pragma unroll
            for (int m = 0; m < r; m++) sum += row[m] * x[m];
            x[r] = r == c ? 1.0f : r < c ? 0.0f : -sum;
        }
#pragma unroll
        for (int r = 0; r < 16; r++) T[(b + r) * ld + b + c] = x[r];
    }
    __syncthreads();
    // 32: blocks (16..32, 0..16) and (48..64, 32..48): Y = A_21 T_11 then T_21 = -T_22 Y (warps 0-3)
    if (warp < 4) {
        const int pair = warp / 2, n0 = warp % 2 * 8, base = 32 * pair;
        float acc[4] = {};
        mma_3xtf32(acc, A + (base + 16) * ld + base, ld, T + base * ld + base, ld, 0, n0, 0, 16);
#pragma unroll
        for (int e = 0; e < 4; e++) X[(16 * pair + g + 8 * (e / 2)) * ldx + n0 + 2 * t + e % 2] = acc[e];
    }
    __syncthreads();
    if (warp < 4) {
        const int pair = warp / 2, n0 = warp % 2 * 8, base = 32 * pair;
        float acc[4] = {};
        mma_3xtf32(acc, T + (base + 16) * ld + base + 16, ld, X + 16 * pair * ldx, ldx, 0, n0, 0, 16);
#pragma unroll
        for (int e = 0; e < 4; e++) T[(base + 16 + g + 8 * (e / 2)) * ld + base + n0 + 2 * t + e % 2] = -acc[e];
    }
    __syncthreads();
    // 64: Y = A[32.., ..32] T[..32, ..32] (32 x 32), then T[32.., ..32] = -T[32.., 32..] Y; a tile a warp
    {
        const int m0 = warp / 4 * 16, n0 = warp % 4 * 8;
        float acc[4] = {};
        mma_3xtf32(acc, A + 32 * ld, ld, T, ld, m0, n0, 0, 32);
#pragma unroll
        for (int e = 0; e < 4; e++) X[(m0 + g + 8 * (e / 2)) * ldx + n0 + 2 * t + e % 2] = acc[e];
    }
    __syncthreads();
    {
        const int m0 = warp / 4 * 16, n0 = warp % 4 * 8;
        float acc[4] = {};
        mma_3xtf32(acc, T + 32 * ld + 32, ld, X, ldx, m0, n0, 0, 32);
#pragma unroll
        for (int e = 0; e < 4; e++) T[(32 + m0 + g + 8 * (e / 2)) * ld + n0 + 2 * t + e % 2] = -acc[e];
    }
    __syncthreads();
}

// Shared memory of tc_prepare<DK> in floats: K (64, DK + 8), V (64, Dv + 8), A and T (64, 68), the
// solve's X (32, 36), G, beta, beta exp(G) (64 each). ~110 KB at DK = Dv = 128: 2 blocks an SM.
template <int DK> struct tc_prepare_layout {
    static constexpr int ldk = DK + 8, ldc = tc_rows + 4;
    int ldv, v_at, a_at, t_at, x_at, g_at;
    size_t floats;
    __host__ __device__ explicit tc_prepare_layout(int Dv)
        : ldv(Dv + 8), v_at(tc_rows * ldk), a_at(v_at + tc_rows * ldv), t_at(a_at + tc_rows * ldc), x_at(t_at + tc_rows * ldc),
          g_at(x_at + 32 * 36), floats((size_t)g_at + 3 * tc_rows) {}
};

// Per (chunk, value head): G, A, T = (I + A)^-1, w, u (and T when keep_solve), as chunk_prepare.
//   A[i][j] = beta_i exp(G_i - G_j) k_i . k_j (j < i): the 20 column tiles of 8 on or below the
//     diagonal 16 x 16 blocks, K by ldmatrix (both operands);
//   w = T diag(beta exp(G)) K, u = T diag(beta) V: warp w takes row tile w % 4 and half the columns,
//     T by ldmatrix with the diagonal applied to its columns as the fragments are read.
template <int DK>
__global__ void __launch_bounds__(tc_threads, 2)
    tc_prepare(chunk_plan<PARITY_BF16> p, const uint16_t *value, const uint16_t *beta_in, bool keep_solve) {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    const int Cc = p.capacity, Dv = (int)p.shape.value_dim;
    const int64_t Hv = p.shape.value_heads;
    using layout = tc_prepare_layout<DK>;
    const layout lay(Dv);
    constexpr int ldk = layout::ldk, ldc = layout::ldc;
    float *smem = reinterpret_cast<float *>(shared_bytes);
    float *Ks = smem, *Vs = smem + lay.v_at, *A = smem + lay.a_at, *T = smem + lay.t_at, *X = smem + lay.x_at;
    float *G = smem + lay.g_at, *beta = G + tc_rows, *beta_decay = beta + tc_rows;
    const chunk_slot s = slot_of(p, blockIdx.x);
    const int L = s.length, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int mi = lane / 8, mr = lane % 8;
    copy_tile_async<tc_rows, DK, ldk>(Ks, key_rows(p, p.key, s), key_stride(p), L);
    parity_flash::copy_commit();
    // V: every 16-byte load (8 values) of the chunk issued before the first is used (Dv <= 128: at
    // most 4 a thread), then widened into Vs; G and beta meanwhile
    const uint16_t *V = value + (s.start * Hv + s.head) * Dv; // (L, Dv), row stride Hv Dv
    const int vectors = Dv / 8;
    uint4 raw[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int i = threadIdx.x + j * tc_threads, r = i / vectors, c = i % vectors * 8;
        raw[j] = i < tc_rows * vectors && r < L ? *reinterpret_cast<const uint4 *>(V + (int64_t)r * Hv * Dv + c)
                                                : make_uint4(0, 0, 0, 0);
    }
    for (int i = threadIdx.x; i < tc_rows; i += blockDim.x) {
        int64_t row = (s.start + i) * Hv + s.head;
        G[i] = i < L ? (float)load_f64(p.g, p.shape.g_dtype, row) : 0.0f;
        beta[i] = i < L ? scalar<PARITY_BF16>::load(beta_in[row]) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int i = threadIdx.x + j * tc_threads, r = i / vectors, c = i % vectors * 8;
        if (i >= tc_rows * vectors) break;
        const uint32_t words[4] = {raw[j].x, raw[j].y, raw[j].z, raw[j].w};
        float4 *to = reinterpret_cast<float4 *>(Vs + r * lay.ldv + c);
        to[0] = make_float4(__uint_as_float(words[0] << 16), __uint_as_float(words[0] & 0xffff0000u),
                            __uint_as_float(words[1] << 16), __uint_as_float(words[1] & 0xffff0000u));
        to[1] = make_float4(__uint_as_float(words[2] << 16), __uint_as_float(words[2] & 0xffff0000u),
                            __uint_as_float(words[3] << 16), __uint_as_float(words[3] & 0xffff0000u));
    }
    for (int i = threadIdx.x; i < tc_rows * ldc / 4; i += blockDim.x)
        reinterpret_cast<float4 *>(T)[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    // G = cumsum(g): warp 0, two values a lane, then a shuffle scan over the lanes' pair sums
    if (warp == 0) {
        float first = G[2 * lane], pair = first + G[2 * lane + 1];
        for (int offset = 1; offset < 32; offset <<= 1) {
            float before = __shfl_up_sync(0xffffffffu, pair, offset);
            if (lane >= offset) pair += before;
        }
        float preceding = __shfl_up_sync(0xffffffffu, pair, 1);
        if (lane == 0) preceding = 0.0f;
        G[2 * lane] = preceding + first;
        G[2 * lane + 1] = pair;
    }
    parity_flash::copy_wait<0>();
    __syncthreads();
    for (int i = threadIdx.x; i < tc_rows; i += blockDim.x) {
        beta_decay[i] = i < L ? beta[i] * precise_exp(G[i]) : 0.0f;
        if (i < L) p.cumulative[s.slot * Cc + i] = G[i];
    }
    // A: the column tiles of 8 on or below the diagonal blocks, K K^T scaled
    for (int tile = warp; tile < 20; tile += tc_warps) {
        int m0, n0;
        float acc[4];
        lower_tile_product<DK, ldk>(Ks, Ks, tile, m0, n0, acc);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = m0 + g + 8 * (e / 2), c = n0 + 2 * t + e % 2;
            A[r * ldc + c] = c < r && r < L ? beta[r] * acc[e] * precise_exp(G[r] - G[c]) : 0.0f;
        }
    }
    // the strictly upper 16 x 16 blocks of A stay unread (tc_solve reads on and below the diagonal blocks)
    __syncthreads();
    tc_solve(T, A, X);
    if (keep_solve)
        for (int index = threadIdx.x; index < Cc * Cc; index += blockDim.x) {
            int r = index / Cc, c = index % Cc;
            p.solve[s.slot * Cc * Cc + index] = r < L && c < L ? T[r * ldc + c] : 0.0f;
        }
    // w = T diag(beta exp(G)) K (L x DK), u = T diag(beta) V (L x Dv): 2 x (columns / 16) tiles of 8 a warp
    const int m0 = warp % 4 * 16, half = warp / 4;
    const float *t_lane = T + (m0 + mr + 8 * (mi & 1)) * ldc + 4 * (mi >> 1);
    auto product = [&](const float *B, int ldb, const float *scale, int N, float *out) {
        const int nj = N / 16, n_base = half * (N / 2);
        float acc[8][4] = {};
        const int k_end = (L + 7) / 8 * 8;
        for (int k = 0; k < k_end; k += 8) {
            uint32_t a[4];
            load_f32_x4(a, t_lane + k);
            const float s0 = scale[k + t], s1 = scale[k + t + 4];
            a[0] = to_tf32(__uint_as_float(a[0]) * s0), a[1] = to_tf32(__uint_as_float(a[1]) * s0);
            a[2] = to_tf32(__uint_as_float(a[2]) * s1), a[3] = to_tf32(__uint_as_float(a[3]) * s1);
            mma_row_tiles(acc, a, B + (k + t) * ldb + n_base + g, ldb, nj);
        }
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (j >= nj) break;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = m0 + g + 8 * h, c = n_base + 8 * j + 2 * t;
                if (r < L) *reinterpret_cast<float2 *>(out + r * N + c) = make_float2(acc[j][2 * h], acc[j][2 * h + 1]);
            }
        }
    };
    if (m0 >= L) return;
    product(Ks, ldk, beta_decay, DK, p.w + s.slot * Cc * DK);
    product(Vs, lay.ldv, beta, Dv, p.u + s.slot * Cc * Dv);
}

// ---- states ----

// Shared memory of tc_states<NC, DK> in floats: two buffers of (w, K, u, G), S^T and the scaled delta^T
// (both TF32-rounded: the B operands).
template <int NC, int DK> struct tc_states_layout {
    static constexpr int ldw = DK + 4;       // w (64, ldw): A via ldmatrix, rows 4 (mod 32) banks apart
    static constexpr int ldk = DK + 8;       // K (64, ldk): A = K^T read along columns, t ldk + g on 32 banks
    static constexpr int ldu = NC + 4;       // u (64, ldu)
    static constexpr int ldst = DK + 4;      // S^T (NC, ldst): B via ldmatrix
    static constexpr int ldd = tc_rows + 4;  // (exp(G_last - G) delta)^T (NC, ldd): B via ldmatrix
    static constexpr int w_at = 0, k_at = w_at + tc_rows * ldw, u_at = k_at + tc_rows * ldk, g_at = u_at + tc_rows * ldu;
    static constexpr int buffer = g_at + tc_rows;
    static constexpr int st_at = 2 * buffer, d_at = st_at + NC * ldst;
    static constexpr size_t floats = (size_t)d_at + (size_t)NC * ldd;
};

// Per (document, value head, NC state columns), over the document's chunks in order, as chunk_states:
//   delta = u - w S_c (stored), S_{c+1} = exp(G_last) S_c + K^T diag(exp(G_last - G)) delta.
// The document's chunks are found by arithmetic (chunk i starts at the document's first token +
// i x capacity: every chunk but a document's last has the capacity's length), so staging the next
// chunk waits on no global load. S (DK x NC) lives in the warps' accumulators across the chunks (its
// TF32 copy S^T in shared memory is delta's B operand) and goes to the scratch straight from them.
// Per chunk: wait for the staged chunk, barrier, stage the next chunk (cp.async, double buffer),
// delta on tensor cores, barrier, S update; two barriers a chunk.
//   delta (64 x NC): warp w takes row tile w % 4 and DN = NC / 16 column tiles, two accumulators
//     each (even / odd k steps), A = w by ldmatrix, B = S^T by ldmatrix.
//   S (DK x NC): warp w takes row tile w % (DK / 16) and SN column tiles, A = K^T (scalar loads), B =
//     the scaled delta^T by ldmatrix.
template <int NC, int DK> __global__ void __launch_bounds__(tc_threads, 1) tc_states(chunk_plan<PARITY_BF16> p) {
    using lay = tc_states_layout<NC, DK>;
    constexpr int NT = NC / 8, DN = NT / 2;               // column tiles; delta's a warp
    constexpr int MT = DK / 16, SN = NT / (tc_warps / MT); // S's row tiles; S's column tiles a warp
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    float *smem = reinterpret_cast<float *>(shared_bytes);
    float *St = smem + lay::st_at, *Dt = smem + lay::d_at;
    const int Cc = p.capacity, Dv = (int)p.shape.value_dim;
    const int64_t Hv = p.shape.value_heads;
    const int64_t document = blockIdx.x / Hv, head = blockIdx.x % Hv;
    const int v0 = blockIdx.y * NC;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int64_t first = p.first_chunk[document], end = p.first_chunk[document + 1];
    if (first >= end) return;
    const int64_t begin = p.chunk_start[first], finish = p.chunk_start[end - 1] + p.chunk_length[end - 1];
    const int64_t kstride = key_stride(p);
    const float *key_base = p.key + (begin * p.shape.key_heads + head / p.shape.group) * DK; // row `begin`
    auto length_of = [&](int64_t chunk) {
        int64_t start = begin + (chunk - first) * Cc;
        return (int)(finish - start < Cc ? finish - start : Cc);
    };
    auto stage = [&](int64_t chunk, int b) {
        float *buffer = smem + b * lay::buffer;
        const int64_t slot = chunk * Hv + head;
        const int L = length_of(chunk);
        copy_tile_async<tc_rows, DK, lay::ldw>(buffer + lay::w_at, p.w + slot * Cc * DK, DK, L);
        copy_tile_async<tc_rows, DK, lay::ldk>(buffer + lay::k_at, key_base + (chunk - first) * Cc * kstride, kstride, L);
        copy_tile_async<tc_rows, NC, lay::ldu>(buffer + lay::u_at, p.u + slot * Cc * Dv + v0, Dv, L);
        copy_floats_async(buffer + lay::g_at, p.cumulative + slot * Cc, tc_rows, L);
        parity_flash::copy_commit();
    };
    // S at a chunk's start to the scratch, from the accumulators
    const int s_m0 = warp % MT * 16, s_n0 = warp / MT * SN * 8;
    auto store_state = [&](int64_t chunk, const float (&S)[SN][4]) {
        float *out = p.states + (chunk * Hv + head) * DK * Dv;
#pragma unroll
        for (int j = 0; j < SN; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = s_m0 + g + 8 * h, c = v0 + s_n0 + 8 * j + 2 * t;
                if (p.states_transposed) {
                    out[(int64_t)c * DK + r] = S[j][2 * h];
                    out[(int64_t)(c + 1) * DK + r] = S[j][2 * h + 1];
                } else {
                    *reinterpret_cast<float2 *>(out + (int64_t)r * Dv + c) = make_float2(S[j][2 * h], S[j][2 * h + 1]);
                }
            }
    };
    float S[SN][4] = {};
    for (int i = threadIdx.x; i < NC * lay::ldst; i += tc_threads) St[i] = 0.0f;
    store_state(first, S);
    stage(first, 0);
    // per-lane ldmatrix row addresses: lanes 8i .. 8i + 7 give matrix i's rows
    const int mi = lane / 8, mr = lane % 8;
    const int d_m0 = warp % 4 * 16, d_n0 = warp / 4 * DN * 8;
    const float *w_lane = smem + lay::w_at + (d_m0 + mr + 8 * (mi & 1)) * lay::ldw + 4 * (mi >> 1); // + b buffer
    const float *st_lane = St + (d_n0 + mr) * lay::ldst + 4 * mi;                                   // + 8 j rows
    const float *dt_lane = Dt + (s_n0 + mr) * lay::ldd + 4 * mi;                                    // + 8 j rows
    for (int64_t chunk = first; chunk < end; chunk++) {
        const int b = (int)((chunk - first) & 1);
        const int L = length_of(chunk);
        const int64_t slot = chunk * Hv + head;
        parity_flash::copy_wait<0>();
        __syncthreads(); // the staged chunk visible; the previous chunk's S^T written and its buffer free
        if (chunk + 1 < end) stage(chunk + 1, b ^ 1);
        const float *buffer = smem + b * lay::buffer;
        const float *Ks = buffer + lay::k_at, *us = buffer + lay::u_at, *G = buffer + lay::g_at;
        const float G_last = G[L - 1];
        // delta = u - w S
        {
            float acc[DN][2][4] = {};
            const float *w_row = w_lane + b * lay::buffer;
#pragma unroll
            for (int k = 0; k < DK; k += 16) {
                uint32_t a[2][4];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    load_f32_x4(a[h], w_row + k + 8 * h);
#pragma unroll
                    for (int e = 0; e < 4; e++) a[h][e] = to_tf32(__uint_as_float(a[h][e]));
                }
#pragma unroll
                for (int j = 0; j < DN; j++) {
                    uint32_t bf[4]; // (b0, b1) at k, (b0, b1) at k + 8
                    load_f32_x4(bf, st_lane + 8 * j * lay::ldst + k);
                    const uint32_t b_even[2] = {bf[0], bf[1]}, b_odd[2] = {bf[2], bf[3]};
                    mma_tf32(acc[j][0], a[0], b_even);
                    mma_tf32(acc[j][1], a[1], b_odd);
                }
            }
            float *delta_out = p.delta + slot * Cc * Dv + v0;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = d_m0 + g + 8 * h;
                const bool valid = r < L;
                const float scale = valid ? precise_exp(G_last - G[r]) : 0.0f;
#pragma unroll
                for (int j = 0; j < DN; j++) {
                    const int c = d_n0 + 8 * j + 2 * t;
                    const float2 uu = *reinterpret_cast<const float2 *>(us + r * lay::ldu + c);
                    const float d0 = uu.x - (acc[j][0][2 * h] + acc[j][1][2 * h]);
                    const float d1 = uu.y - (acc[j][0][2 * h + 1] + acc[j][1][2 * h + 1]);
                    if (valid) *reinterpret_cast<float2 *>(delta_out + (int64_t)r * Dv + c) = make_float2(d0, d1);
                    Dt[c * lay::ldd + r] = round_tf32(scale * d0);
                    Dt[(c + 1) * lay::ldd + r] = round_tf32(scale * d1);
                }
            }
        }
        __syncthreads(); // Dt complete; every read of St done
        // S = exp(G_last) S + K^T Dt^T
        {
            const float last = precise_exp(G_last);
#pragma unroll
            for (int j = 0; j < SN; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) S[j][e] *= last;
            const int k_end = (L + 15) / 16 * 16;
            const float *k_lane = Ks + t * lay::ldk + s_m0 + g;
#pragma unroll
            for (int k = 0; k < tc_rows; k += 16) {
                if (k >= k_end) break;
                uint32_t a[2][4];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float *q = k_lane + (k + 8 * h) * lay::ldk;
                    a[h][0] = to_tf32(q[0]);
                    a[h][1] = to_tf32(q[8]);
                    a[h][2] = to_tf32(q[4 * lay::ldk]);
                    a[h][3] = to_tf32(q[4 * lay::ldk + 8]);
                }
#pragma unroll
                for (int j = 0; j < SN; j++) {
                    uint32_t bf[4];
                    load_f32_x4(bf, dt_lane + 8 * j * lay::ldd + k);
                    const uint32_t b_even[2] = {bf[0], bf[1]}, b_odd[2] = {bf[2], bf[3]};
                    mma_tf32(S[j], a[0], b_even);
                    mma_tf32(S[j], a[1], b_odd);
                }
            }
#pragma unroll
            for (int j = 0; j < SN; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    St[(s_n0 + 8 * j + 2 * t + e % 2) * lay::ldst + s_m0 + g + 8 * (e / 2)] = round_tf32(S[j][e]);
            if (chunk + 1 < end) store_state(chunk + 1, S);
        }
    }
}

// ---- output ----

// Rows of `vectors` 16-byte vectors (runtime width) from `from` (row stride `stride` floats) into `to`
// (row stride ld); rows >= rows_valid are zero. Each thread keeps one column and walks rows: one
// division per call, not one per vector.
__device__ __forceinline__ void copy_rows_strided_async(float *to, int ld, const float *from, int64_t stride, int rows,
                                                        int rows_valid, int vectors) {
    const int per_pass = tc_threads / vectors, c = threadIdx.x % vectors * 4;
    if ((int)threadIdx.x >= per_pass * vectors) return;
    for (int r = threadIdx.x / vectors; r < rows; r += per_pass) {
        const bool valid = r < rows_valid;
        parity_flash::copy_16(to + r * ld + c, from + (valid ? r * stride + c : 0), valid);
    }
}

// Shared memory of tc_output<DK> in floats: Q, K (64, DK + 4), P (64, 68), S_c (DK, Dv + 8), delta
// (64, Dv + 8), G (64).
template <int DK> struct tc_output_layout {
    static constexpr int ldq = DK + 4, ldp = tc_rows + 4;
    int lds;
    int q_at, k_at, p_at, s_at, d_at, g_at;
    size_t floats;
    __host__ __device__ explicit tc_output_layout(int Dv)
        : lds(Dv + 8), q_at(0), k_at(tc_rows * ldq), p_at(2 * tc_rows * ldq), s_at(p_at + tc_rows * ldp),
          d_at(s_at + DK * lds), g_at(d_at + tc_rows * lds), floats((size_t)g_at + tc_rows) {}
};

// Per (chunk, value head): O = diag(exp(G)) Q S_c + (Q K^T o Dm) delta, as chunk_output. Everything
// the block reads is staged by cp.async in three groups (Q, K, G; S_c; delta) so that P = Q K^T o Dm
// (lower triangle, TF32-rounded into shared memory) is computed while S_c and delta are in flight.
// Warp w computes the 16-row tile w % 4 of O over half of its columns (Dv / 16 column tiles of 8, A
// fragments by ldmatrix shared across them); ~190 KB of shared memory at DK = Dv = 128, a block an SM.
template <int DK> __global__ void __launch_bounds__(tc_threads, 1) tc_output(chunk_plan<PARITY_BF16> p, uint16_t *output) {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    const int Cc = p.capacity, Dv = (int)p.shape.value_dim;
    const int64_t Hv = p.shape.value_heads;
    const tc_output_layout<DK> lay(Dv);
    constexpr int ldq = tc_output_layout<DK>::ldq, ldp = tc_output_layout<DK>::ldp;
    float *smem = reinterpret_cast<float *>(shared_bytes);
    float *Qs = smem + lay.q_at, *Ks = smem + lay.k_at, *P = smem + lay.p_at, *Ss = smem + lay.s_at, *Ds = smem + lay.d_at,
          *G = smem + lay.g_at;
    const chunk_slot s = slot_of(p, blockIdx.x);
    const int L = s.length, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    copy_tile_async<tc_rows, DK, ldq>(Qs, key_rows(p, p.query, s), key_stride(p), L);
    copy_tile_async<tc_rows, DK, ldq>(Ks, key_rows(p, p.key, s), key_stride(p), L);
    copy_floats_async(G, p.cumulative + s.slot * Cc, tc_rows, L);
    parity_flash::copy_commit();
    copy_rows_strided_async(Ss, lay.lds, p.states + s.slot * DK * Dv, Dv, DK, DK, Dv / 4); // (DK, Dv)
    parity_flash::copy_commit();
    copy_rows_strided_async(Ds, lay.lds, p.delta + s.slot * Cc * Dv, Dv, tc_rows, L, Dv / 4); // (64, Dv)
    parity_flash::copy_commit();
    parity_flash::copy_wait<2>();
    __syncthreads();
    const int mi = lane / 8, mr = lane % 8;
    // P: the 20 column tiles of 8 on or below the diagonal's 16 x 16 blocks, Q K^T decayed, TF32-rounded
    for (int tile = warp; tile < 20; tile += tc_warps) {
        int m0, n0;
        float acc[4];
        lower_tile_product<DK, ldq>(Qs, Ks, tile, m0, n0, acc);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = m0 + g + 8 * (e / 2), c = n0 + 2 * t + e % 2;
            P[r * ldp + c] = c <= r && r < L ? round_tf32(acc[e] * precise_exp(G[r] - G[c])) : 0.0f;
        }
    }
    // the strictly upper 16 x 16 blocks of P stay unread: row tile m reads columns < 16 (m + 1)
    parity_flash::copy_wait<0>();
    __syncthreads(); // P, S_c and delta visible
    const int m0 = warp % 4 * 16, nj = Dv / 16, n_base = warp / 4 * (Dv / 2);
    uint16_t *out = output + (s.start * Hv + s.head) * Dv; // (L, Dv), row stride Hv Dv
    if (m0 >= L) return;
    float acc[8][4] = {};
    // Q S_c
    {
        const float *q_lane = Qs + (m0 + mr + 8 * (mi & 1)) * ldq + 4 * (mi >> 1);
#pragma unroll 4
        for (int k = 0; k < DK; k += 8) {
            uint32_t a[4];
            load_f32_x4(a, q_lane + k);
#pragma unroll
            for (int e = 0; e < 4; e++) a[e] = to_tf32(__uint_as_float(a[e]));
            mma_row_tiles(acc, a, Ss + (k + t) * lay.lds + n_base + g, lay.lds, nj);
        }
        const float low = precise_exp(G[m0 + g]), high = precise_exp(G[m0 + g + 8]);
#pragma unroll
        for (int j = 0; j < 8; j++) acc[j][0] *= low, acc[j][1] *= low, acc[j][2] *= high, acc[j][3] *= high;
    }
    // + P delta over k < 16 (m + 1) (P is lower triangular)
    {
        const float *p_lane = P + (m0 + mr + 8 * (mi & 1)) * ldp + 4 * (mi >> 1);
        const int k_end = m0 + 16 < L ? m0 + 16 : (L + 7) / 8 * 8;
        for (int k = 0; k < k_end; k += 8) {
            uint32_t a[4];
            load_f32_x4(a, p_lane + k); // already TF32
            mma_row_tiles(acc, a, Ds + (k + t) * lay.lds + n_base + g, lay.lds, nj);
        }
    }
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if (j >= nj) break;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = m0 + g + 8 * h, c = n_base + 8 * j + 2 * t;
            if (r < L) {
                uint32_t pair = (uint32_t)scalar<PARITY_BF16>::store(acc[j][2 * h]) |
                                ((uint32_t)scalar<PARITY_BF16>::store(acc[j][2 * h + 1]) << 16);
                *reinterpret_cast<uint32_t *>(out + (int64_t)r * Hv * Dv + c) = pair;
            }
        }
    }
}

// ---- launcher ----

template <int NC, int DK>
parity_error *launch_states(const chunk_plan<PARITY_BF16> &plan, const delta_call &call, int device, int64_t sequences,
                            cudaStream_t stream) {
    const size_t shared = tc_states_layout<NC, DK>::floats * sizeof(float);
    PARITY_TRY(allow_shared(tc_states<NC, DK>, shared, call.sizes, device));
    tc_states<NC, DK><<<dim3((unsigned)sequences, (unsigned)(plan.shape.value_dim / NC)), tc_threads, shared, stream>>>(plan);
    return NULL;
}

// The tensor-core forward of a bf16 call (tensor_core_forward_fits): prepare, states, output (when
// `output` is given), as chunked.cu's run_forward launches its kernels.
inline parity_error *run_tensor_core_forward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                             const delta_call &call, const chunk_plan<PARITY_BF16> &plan, bool keep_solve,
                                             uint16_t *output) {
    const int device = args->query->device.index;
    const unsigned slots = (unsigned)(plan.chunks * plan.shape.value_heads);
    if (slots == 0) return NULL;
    const cudaStream_t stream = parity_cuda_stream(exec);
    const int Dk = (int)plan.shape.key_dim, Dv = (int)plan.shape.value_dim;
    const uint16_t *value = static_cast<const uint16_t *>(args->value->data), *beta = static_cast<const uint16_t *>(args->beta->data);
    size_t shared;
    if (Dk == 128) {
        shared = tc_prepare_layout<128>(Dv).floats * sizeof(float);
        PARITY_TRY(allow_shared(tc_prepare<128>, shared, call.sizes, device));
        tc_prepare<128><<<slots, tc_threads, shared, stream>>>(plan, value, beta, keep_solve);
    } else {
        shared = tc_prepare_layout<64>(Dv).floats * sizeof(float);
        PARITY_TRY(allow_shared(tc_prepare<64>, shared, call.sizes, device));
        tc_prepare<64><<<slots, tc_threads, shared, stream>>>(plan, value, beta, keep_solve);
    }
    PARITY_CUDA_TRY_LAUNCH("tc_prepare");
    // State columns a block: 16 while that leaves SMs idle (one document, few heads), else 32 (half the
    // staged bytes per column), or 64 where 64 still gives every SM a block (w and K, 64 KB of a
    // chunk's staging, shared by twice the columns). Measured on the H200 (2026-12-04, bf16, forward):
    // 4x4096x32x128x128 2.88 ms at 32, 2.62 at 64; 1x8192x16x128x128 0.94 at 16, 1.02 at 32, 1.20 at
    // 64. The split does not change a single sum (the columns of S never mix): same bits at 16, 32, 64.
    // A width whose staging does not fit the device's shared memory is not taken (64 needs 219 KiB at Dk 128).
    int sms = 0, shared_limit = 0;
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&shared_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const auto fits = [&](size_t floats) { return floats * sizeof(float) <= (size_t)shared_limit; };
    const bool fits32 = fits(Dk == 128 ? tc_states_layout<32, 128>::floats : tc_states_layout<32, 64>::floats);
    const bool fits64 = fits(Dk == 128 ? tc_states_layout<64, 128>::floats : tc_states_layout<64, 64>::floats);
    const int64_t sequences = plan.shape.documents * plan.shape.value_heads;
    const int columns = Dv % 32 != 0 || sequences * (Dv / 16) <= sms || !fits32 ? 16
                        : Dv % 64 == 0 && sequences * (Dv / 64) >= sms && fits64 ? 64
                                                                                 : 32;
    parity_error *(*launch)(const chunk_plan<PARITY_BF16> &, const delta_call &, int, int64_t, cudaStream_t) =
        Dk == 128 ? (columns == 64 ? launch_states<64, 128> : columns == 32 ? launch_states<32, 128> : launch_states<16, 128>)
                  : (columns == 64 ? launch_states<64, 64> : columns == 32 ? launch_states<32, 64> : launch_states<16, 64>);
    PARITY_TRY(launch(plan, call, device, sequences, stream));
    PARITY_CUDA_TRY_LAUNCH("tc_states");
    if (output) {
        if (Dk == 128) {
            shared = tc_output_layout<128>(Dv).floats * sizeof(float);
            PARITY_TRY(allow_shared(tc_output<128>, shared, call.sizes, device));
            tc_output<128><<<slots, tc_threads, shared, stream>>>(plan, output);
        } else {
            shared = tc_output_layout<64>(Dv).floats * sizeof(float);
            PARITY_TRY(allow_shared(tc_output<64>, shared, call.sizes, device));
            tc_output<64><<<slots, tc_threads, shared, stream>>>(plan, output);
        }
        PARITY_CUDA_TRY_LAUNCH("tc_output");
    }
    return NULL;
}

} // namespace

#endif
