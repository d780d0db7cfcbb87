// ordered_column_sum.cuh: out[c] = the serial sum over rows r = 0, 1, ..., R - 1 of term(r, c), starting
// from zero (`sum = sum + term(r, c)`), bit for bit that loop, for the weight and bias gradients of the
// eager backends (the CPU's row order, deterministic). The order is the point: no tree, no split of a
// column's rows, so a column's time is at least R dependent adds (~0.55 ms for 262144 f32 rows).
// Two phases, so that the adds are all that is serial:
//   1. terms: a parallel kernel of the caller (ordered_sum_terms, a grid over all rows x columns,
//      coalesced) evaluates term(r, c) once per element into scratch (R, ld) of the compute type,
//      row-major, ld = D rounded up to 16 bytes. Why: a term costs several dependent global loads; made
//      inside the serial pass (as before: one block of 32 columns, 7 warps computing tiles for 1 adding)
//      they, not the adds, set the pace (26.9 ms for the gated RMSNorm's dw at 262144 x 128).
//   2. the ordered sum (ordered_column_sum_kernel): one warp a block takes 32 bytes of every row (8 f32
//      or 4 f64 columns: one sector, and more blocks on the chip when D is small, e.g. 16 at D = 128)
//      and streams its rows through a ring of shared-memory stages filled by cp.async (16-byte copies
//      when the rows are 16-byte aligned, else one element a copy), issued several stages ahead and
//      interleaved with the adds; lane c adds column c in row order from zero, only the rows that exist
//      (a padded zero would turn a -0 sum into +0), and stores the sum rounded once.
// The scratch is bounded (ordered_sum_scratch_bytes, 128 MiB: all of 262144 x 128 f32): a larger problem
// runs in chunks of rows, phase 1 then phase 2 for each, every column's sum carried from chunk to chunk in
// the compute type (D values behind the terms), which is the same serial loop. So there is no separate
// small-problem path: a small problem costs two launches and a small scratch, a huge one a bounded
// scratch and a few more launches. Terms that already exist in memory in the compute type (linear's dy
// in f32 / f64) are summed by phase 2 alone, without scratch.
// The scratch is a scoped_tensor (eager_support.cuh), as the other eager backends' temporaries: the
// device's stream-ordered pool, counted in memory.h's peak, released on every path out (the free is
// ordered after the kernels: ops/core/cuda/cuda_runtime.cu). For .cu files only.
#ifndef PARITY_CORE_CUDA_ORDERED_COLUMN_SUM_CUH
#define PARITY_CORE_CUDA_ORDERED_COLUMN_SUM_CUH

#include <stdint.h>
#include <stdlib.h>

#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cpu_math.h"
}

namespace parity_cuda {

constexpr int ordered_sum_row_bytes = 32;     // a block's slice of a row (phase 2): one 32-byte sector
constexpr int ordered_sum_stage_rows = 128;   // rows a shared-memory stage
constexpr int ordered_sum_stages = 6;         // stages in the ring: 5 in flight while 1 is added
constexpr int ordered_sum_parts = 8;          // a stage's copies are issued in 8 parts between its adds
constexpr int ordered_sum_term_threads = 256; // phase 1 block
constexpr size_t ordered_sum_scratch_default = (size_t)128 << 20;

// The bound on phase 1's scratch: 128 MiB, or PARITY_ORDERED_SUM_SCRATCH_BYTES when set to a positive
// number (a test hook: a small bound runs the chunked path on small problems).
inline size_t ordered_sum_scratch_bytes() {
    const char *text = getenv("PARITY_ORDERED_SUM_SCRATCH_BYTES");
    if (text && *text) {
        char *end = NULL;
        unsigned long long value = strtoull(text, &end, 10);
        if (end && *end == '\0' && value > 0) return (size_t)value;
    }
    return ordered_sum_scratch_default;
}

// The row stride of the scratch: `columns` rounded up to 16 bytes of C.
template <typename C> inline int64_t ordered_sum_stride(int64_t columns) {
    constexpr int64_t v = 16 / sizeof(C);
    return (columns + v - 1) / v * v;
}

// Phase 1's grid for `count` rows x `columns` (launch with ordered_sum_term_threads threads).
inline unsigned ordered_sum_term_grid(int64_t count, int64_t columns) {
    return grid_for(count * columns, ordered_sum_term_threads);
}

// Phase 1, called by every thread of the caller's kernel: terms[r * ld + c] = term(row0 + r, c) for
// r < count, c < columns; element e = r * columns + c goes to thread e of the grid (grid-stride), so
// neighbouring threads read neighbouring elements. term(row, column) -> C.
template <typename C, typename Term>
__device__ void ordered_sum_terms(int64_t row0, int64_t count, int64_t columns, int64_t ld, Term term,
                                  C *terms) { // (count, ld)
    const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, total = count * columns;
    if (first >= total) return;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t stride_rows = stride / columns, stride_columns = stride % columns;
    int64_t r = first / columns, c = first % columns; // one division; then (r, c) advances by the stride
    while (r < count) {
        terms[r * ld + c] = term(row0 + r, c);
        r += stride_rows;
        c += stride_columns;
        if (c >= columns) {
            c -= columns;
            r++;
        }
    }
}

__device__ __forceinline__ float ordered_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double ordered_add(double a, double b) { return __dadd_rn(a, b); }

__device__ __forceinline__ uint32_t ordered_sum_shared(const void *pointer) {
    return (uint32_t)__cvta_generic_to_shared(pointer);
}

// Phase 2: one warp a block, block b owning columns [b * W, b * W + W), W = 32 bytes of C. The sum
// starts from resume_from[c] (a previous chunk's) or, without it, from zero; it ends in carry_to[c] (for
// the next chunk) and / or out[c] rounded once to the storage dtype. The two may alias. VECTOR: rows
// 16-byte aligned (ld a multiple of 16 bytes, terms 16-byte aligned), copies of 16 bytes.
template <parity_dtype D, bool VECTOR>
__global__ void __launch_bounds__(32)
    ordered_column_sum_kernel(const typename scalar<D>::compute *terms,       // (rows, ld)
                              int64_t rows, int64_t columns, int64_t ld,
                              const typename scalar<D>::compute *resume_from, // (columns) or NULL
                              typename scalar<D>::compute *carry_to,          // (columns) or NULL
                              typename scalar<D>::storage *out) {             // (columns) or NULL
    using C = typename scalar<D>::compute;
    constexpr int W = ordered_sum_row_bytes / (int)sizeof(C); // columns a block (f32 8, f64 4)
    constexpr int T = ordered_sum_stage_rows, S = ordered_sum_stages, PARTS = ordered_sum_parts;
    constexpr int E = VECTOR ? 16 / (int)sizeof(C) : 1;       // elements a copy
    constexpr int P = W / E;                                  // copies a row
    constexpr int J = T * P / 32;                             // copies a lane a stage
    constexpr int JP = J / PARTS, RP = T / PARTS;             // a part: copies a lane, rows
    static_assert(J % PARTS == 0 && T % PARTS == 0, "a stage splits into whole parts");
    // The copies carry no "memory" clobber: what they write is read only after cp.async.wait_group and
    // __syncwarp (barriers to the compiler too), and without one the reads of the stage being added may
    // be scheduled across the copies into another.
    __shared__ __align__(16) C ring[S][T][W]; // (S, T, W)

    const int lane = (int)threadIdx.x;
    const int64_t column0 = (int64_t)blockIdx.x * W;
    const int64_t tiles = (rows + T - 1) / T;
    const bool active = lane < W && column0 + lane < columns;
    // Every lane adds (no divergence); lanes past W read column 0 and their sums are dropped, as are
    // those of columns >= `columns` (whose shared memory is never written).
    const int read_lane = lane < W ? lane : 0;
    // The copies: copy j of a lane (j < J) is piece lane % P of row j * RJ + lane / P of the stage
    // (consecutive lanes, consecutive addresses). What depends on the lane only is computed once here,
    // what depends on the stage once a stage (`target`), so a copy costs an address add and a compare.
    // Pieces of columns >= `columns` and of rows >= rows are not copied: nothing reads them.
    constexpr int RJ = 32 / P; // rows a copy step
    const int lane_row = lane / P, lane_piece = lane % P;
    const bool lane_columns = column0 + lane_piece * E < columns;
    const C *lane_terms = terms + column0 + (int64_t)lane_row * ld + lane_piece * E;
    const uint32_t lane_ring = ordered_sum_shared(&ring[0][lane_row][lane_piece * E]);
    const int64_t step = RJ * ld;
    constexpr uint32_t ring_step = RJ * W * sizeof(C), slot_bytes = T * W * sizeof(C);
    struct target {
        const C *from; // this lane's first copy of the stage
        uint32_t to;   // its shared address
        int rows;      // the stage's rows (0: no stage, nothing to copy)
    };
    auto target_of = [&](int64_t t, int slot) {
        target out;
        out.from = lane_terms + t * T * ld;
        out.to = lane_ring + (uint32_t)slot * slot_bytes;
        int64_t left = rows - t * T;
        out.rows = t < tiles && lane_columns ? (left < T ? (int)left : T) : 0;
        return out;
    };
    auto fill = [&](const target &to, int j0, int j1) {
#pragma unroll
        for (int j = j0; j < j1; j++)
            if (j * RJ + lane_row < to.rows) {
                const C *from = to.from + j * step;
                if constexpr (E * sizeof(C) == 16)
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to.to + j * ring_step), "l"(from));
                else
                    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to.to + j * ring_step), "l"(from),
                                 "n"((int)sizeof(C)));
            }
    };
    auto commit = [] { asm volatile("cp.async.commit_group;\n" ::: "memory"); };

    for (int s = 0; s < S - 1; s++) { // the prologue: stages 0 .. S - 2, a group each
        fill(target_of(s, s), 0, J);
        commit();
    }
    C sum = active && resume_from ? resume_from[column0 + lane] : C(0);
    int slot = 0; // stage t's slot, t % S
    for (int64_t t = 0; t < tiles; t++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(S - 2) : "memory"); // this lane's copies of stage t
        __syncwarp(); // everyone's copies of stage t landed; everyone is done with stage t - 1's slot
        const C(*stage)[W] = ring[slot];
        // stage t + S - 1 goes into stage t - 1's slot
        const target next = target_of(t + S - 1, slot == 0 ? S - 1 : slot - 1);
        if (rows - t * T >= T) {
            // A full stage in PARTS parts: part k's copies of the next stage, part k + 1's values read
            // into registers, part k's values added (the reads run ahead of the dependent adds).
            C now[RP], later[RP];
#pragma unroll
            for (int r = 0; r < RP; r++) now[r] = stage[r][read_lane];
#pragma unroll
            for (int part = 0; part < PARTS; part++) {
                fill(next, part * JP, part * JP + JP);
                if (part + 1 < PARTS) {
#pragma unroll
                    for (int r = 0; r < RP; r++) later[r] = stage[(part + 1) * RP + r][read_lane];
                }
#pragma unroll
                for (int r = 0; r < RP; r++) sum = ordered_add(sum, now[r]);
                if (part + 1 < PARTS) {
#pragma unroll
                    for (int r = 0; r < RP; r++) now[r] = later[r];
                }
            }
        } else { // the last stage, partial: nothing left to fill
            const int count = (int)(rows - t * T);
            for (int r = 0; r < count; r++) sum = ordered_add(sum, stage[r][read_lane]);
        }
        commit(); // a group an iteration, empty past the end, so wait_group's count holds
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    if (active) {
        if (carry_to) carry_to[column0 + lane] = sum;
        if (out) out[column0 + lane] = scalar<D>::store(sum);
    }
}

// Phase 2 over terms (rows, ld) in memory, on exec's stream (see ordered_column_sum_kernel).
template <parity_dtype D>
inline parity_error *ordered_column_sum_pass(const parity_exec *exec, const typename scalar<D>::compute *terms,
                                             int64_t rows, int64_t columns, int64_t ld,
                                             const typename scalar<D>::compute *resume_from,
                                             typename scalar<D>::compute *carry_to, typename scalar<D>::storage *out) {
    using C = typename scalar<D>::compute;
    constexpr int W = ordered_sum_row_bytes / (int)sizeof(C);
    if (columns <= 0) return NULL;
    int64_t blocks = (columns + W - 1) / W;
    bool vector = ld % (16 / (int64_t)sizeof(C)) == 0 && (uintptr_t)terms % 16 == 0;
    if (vector)
        ordered_column_sum_kernel<D, true><<<(unsigned)blocks, 32, 0, parity_cuda_stream(exec)>>>(
            terms, rows, columns, ld, resume_from, carry_to, out);
    else
        ordered_column_sum_kernel<D, false><<<(unsigned)blocks, 32, 0, parity_cuda_stream(exec)>>>(
            terms, rows, columns, ld, resume_from, carry_to, out);
    PARITY_CUDA_TRY_LAUNCH("ordered_column_sum_kernel");
    return NULL;
}

// out (columns) = the ordered column sums of terms (rows, columns) that already exist in memory in the
// compute type, row-major (phase 2 alone, no scratch).
template <parity_dtype D>
inline parity_error *ordered_column_sum_of(const parity_exec *exec, const typename scalar<D>::compute *terms,
                                           int64_t rows, int64_t columns, typename scalar<D>::storage *out) {
    return ordered_column_sum_pass<D>(exec, terms, rows, columns, columns, NULL, NULL, out);
}

// out (columns) = the ordered column sums of the terms that make_terms computes: phase 1, then phase 2,
// a chunk of rows at a time (one chunk unless the scratch would pass ordered_sum_scratch_bytes).
// make_terms(row0, count, terms, ld) -> parity_error * launches the caller's kernel on exec's stream
// (ordered_sum_term_grid(count, columns) blocks of ordered_sum_term_threads, calling ordered_sum_terms)
// writing terms (count, ld) for rows row0 .. row0 + count - 1. `out` gets the sums rounded once to the
// storage dtype, `sums` (when not NULL, device memory of `columns` compute values) the sums themselves,
// for a caller that goes on computing with them (gdn_gating's dA_log = -sum * rate); either may be NULL.
template <parity_dtype D, typename MakeTerms>
parity_error *ordered_column_sum(const parity_exec *exec, parity_device device, int64_t rows, int64_t columns,
                                 MakeTerms make_terms, typename scalar<D>::storage *out,
                                 typename scalar<D>::compute *sums = NULL) {
    using C = typename scalar<D>::compute;
    if (columns <= 0) return NULL;
    if (rows <= 0) return ordered_column_sum_pass<D>(exec, NULL, 0, columns, columns, NULL, sums, out); // zeros
    const int64_t ld = ordered_sum_stride<C>(columns);
    const int64_t row_bytes = ld * (int64_t)sizeof(C);
    int64_t chunk = (int64_t)(ordered_sum_scratch_bytes() / (size_t)row_bytes);
    if (chunk < 1) chunk = 1;
    if (chunk > rows) chunk = rows;
    const bool chunked = chunk < rows;
    scoped_tensor scratch; // (chunk, ld) terms, then (ld) the carried sums when chunked
    PARITY_TRY(scratch.alloc_1d(parity_compute_dtype(D), device, chunk * ld + (chunked ? ld : 0)));
    C *terms = scratch.data<C>(), *carry = chunked ? terms + chunk * ld : NULL;
    for (int64_t row0 = 0; row0 < rows; row0 += chunk) {
        const int64_t count = rows - row0 < chunk ? rows - row0 : chunk;
        const bool first = row0 == 0, last = row0 + count == rows;
        PARITY_TRY(make_terms(row0, count, terms, ld));
        PARITY_TRY(ordered_column_sum_pass<D>(exec, terms, count, columns, ld, first ? NULL : carry,
                                              last ? sums : carry, last ? out : NULL));
    }
    return NULL;
}

} // namespace parity_cuda

#endif
