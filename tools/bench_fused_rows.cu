// bench_fused_rows.cu: times variants of the memory-bound RMSNorm and SwiGLU kernels side by side
// on one GPU, in one process, the way `parity bench` does (CUDA events, a 256 MiB write before each
// run so nothing is cached, >= 200 ms of warm-up, median of 30), and checks that variants meant to
// give the same bits do. Why: a device call is scarce; one binary answers every question of a
// tuning round. It includes the kernels' .cu files to reach their templates, and calls them with no
// execution context (nullptr): they then queue on the legacy default stream, where its events are.
//
// Build (from the repository root, after `make BUILD=build-perf`):
//   nvcc -std=c++17 -O2 -arch=sm_90 -I. tools/bench_fused_rows.cu build-perf/libparity.a \
//        -o build-perf/bench-fused-rows -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lyaml \
//        -lcjson -lopenblas -lpthread -lm -ldl -lrt
// The numbers it gave, with those of the variants earlier rounds of it timed (warp-per-row and
// pipelined forwards, bulk-copy SwiGLU), are in reports/baselines/h200/README.md.
// Run: build-perf/bench-fused-rows   (prints one line per variant: ms, GB/s, % of the copy)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ops/rms_norm/rms_norm_cuda.cu"
#include "ops/swiglu/liger_kernel.cu"

namespace {

#define CHECK(...)                                                                                                     \
    do {                                                                                                               \
        cudaError_t status_ = (__VA_ARGS__);                                                                                  \
        if (status_ != cudaSuccess) {                                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #__VA_ARGS__, cudaGetErrorString(status_));                \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#define TRY(...)                                                                                                       \
    do {                                                                                                               \
        parity_error *error_ = (__VA_ARGS__);                                                                                 \
        if (error_) {                                                                                                  \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #__VA_ARGS__);                                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

using bf16 = __nv_bfloat16;

__global__ void fill_random(bf16 *out, int64_t count, uint32_t seed, float low, float high) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        h *= 0x846ca68bu;
        h ^= h >> 16;
        out[i] = __float2bfloat16_rn(low + (high - low) * (h >> 8) * (1.0f / 16777216.0f));
    }
}

__global__ void read_all(const int4 *in, int64_t count, int *sink) {
    int acc = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        acc ^= in[i].x;
    if (acc == 0x12345678) *sink = acc;
}

struct timer {
    void *flush = nullptr;
    size_t flush_bytes = 0;
    int *sink = nullptr;
    cudaEvent_t start, stop;
    timer() {
        int l2 = 0;
        CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
        flush_bytes = std::max<size_t>((size_t)4 * l2, (size_t)256 << 20);
        CHECK(cudaMalloc(&flush, flush_bytes));
        CHECK(cudaMalloc(&sink, 4));
        CHECK(cudaEventCreate(&start));
        CHECK(cudaEventCreate(&stop));
    }
    // clean: the flush reads the buffer (L2 left holding clean lines) instead of writing it
    double measure(const std::function<void()> &step, bool clean = false, int runs = 30) {
        for (int i = 0; i < 400; i++) CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, 0));
        double warm = 0;
        for (int calls = 0; calls < 20000 && (calls < 3 || warm < 200); calls++) {
            CHECK(cudaEventRecord(start, 0));
            step();
            CHECK(cudaEventRecord(stop, 0));
            CHECK(cudaEventSynchronize(stop));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            warm += ms;
        }
        std::vector<double> times;
        for (int i = 0; i < runs; i++) {
            if (clean) {
                CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, 0));
                read_all<<<132 * 8, 256>>>((const int4 *)flush, (int64_t)(flush_bytes / 16), sink);
            } else {
                CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, 0));
            }
            CHECK(cudaEventRecord(start, 0));
            step();
            CHECK(cudaEventRecord(stop, 0));
            CHECK(cudaEventSynchronize(stop));
            CHECK(cudaGetLastError());
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        return times[times.size() / 2];
    }
};

double copy_rate = 0;
void report(const char *name, double ms, double bytes) {
    const double rate = bytes / (ms * 1e-3) / 1e9;
    printf("%-44s %9.4f ms %7.0f GB/s %5.1f%% of copy\n", name, ms, rate, copy_rate > 0 ? 100 * rate / copy_rate : 0);
    fflush(stdout);
}

std::vector<uint16_t> host_copy(const void *device, size_t count) {
    std::vector<uint16_t> out(count);
    CHECK(cudaMemcpy(out.data(), device, count * 2, cudaMemcpyDeviceToHost));
    return out;
}

int failures = 0;
void same_bits(const char *what, const void *a, const void *b, size_t bytes) {
    std::vector<unsigned char> x(bytes), y(bytes);
    CHECK(cudaMemcpy(x.data(), a, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(y.data(), b, bytes, cudaMemcpyDeviceToHost));
    size_t differ = 0;
    for (size_t i = 0; i < bytes; i++) differ += x[i] != y[i];
    printf("check %-50s %s (%zu bytes differ)\n", what, differ ? "DIFFERENT" : "same bits", differ);
    if (differ) failures++;
}

float bf16_value(uint16_t bits) {
    uint32_t word = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &word, 4);
    return f;
}

void close_values(const char *what, const void *a, const void *b, size_t count) {
    auto x = host_copy(a, count), y = host_copy(b, count);
    double worst = 0;
    for (size_t i = 0; i < count; i++) {
        const double u = bf16_value(x[i]), v = bf16_value(y[i]);
        worst = std::max(worst, std::fabs(u - v) / std::max(1e-3, std::fabs(v)));
    }
    printf("check %-50s worst relative difference %.3g\n", what, worst);
    if (!(worst < 2e-2)) failures++;
}

// ---- SwiGLU forward variants (same arithmetic as swiglu_forward_kernel<BF16, 8>) ------------------
__device__ __forceinline__ bf16 swiglu_of(bf16 g, bf16 u) {
    const float x = __bfloat162float(g);
    const float activation = __bfloat162float(__float2bfloat16_rn(x / (1.0f + exp(-x))));
    return __float2bfloat16_rn(activation * __bfloat162float(u));
}

template <int LOAD_HINT> __device__ __forceinline__ int4 load16(const int4 *p) {
    if (LOAD_HINT == 1) return __ldcs(p);
    if (LOAD_HINT == 2) {
        int4 v;
        asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
        return v;
    }
    return *p;
}

__device__ __forceinline__ int4 swiglu_vector(int4 g, int4 u) {
    int4 out;
    const bf16 *gs = reinterpret_cast<const bf16 *>(&g), *us = reinterpret_cast<const bf16 *>(&u);
    bf16 *os = reinterpret_cast<bf16 *>(&out);
#pragma unroll
    for (int j = 0; j < 8; j++) os[j] = swiglu_of(gs[j], us[j]);
    return out;
}

// A full grid: thread handles UNROLL vectors, THREADS apart.
template <int THREADS, int UNROLL, int LOAD_HINT, bool STORE_CS>
__global__ void __launch_bounds__(THREADS) swiglu_variant(const int4 *gate, const int4 *up, int4 *out, int64_t vectors) {
    const int64_t base = (int64_t)blockIdx.x * THREADS * UNROLL + threadIdx.x;
    int4 g[UNROLL], u[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
        const int64_t v = base + (int64_t)k * THREADS;
        if (v < vectors) {
            g[k] = load16<LOAD_HINT>(gate + v);
            u[k] = load16<LOAD_HINT>(up + v);
        }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
        const int64_t v = base + (int64_t)k * THREADS;
        if (v >= vectors) continue;
        const int4 y = swiglu_vector(g[k], u[k]);
        if (STORE_CS) __stcs(out + v, y);
        else out[v] = y;
    }
}

// The backward without a loop: one thread per 2 vectors, as the forward.
__global__ void __launch_bounds__(256) swiglu_backward_full(const bf16 *gate, const bf16 *up, const bf16 *doutput,
                                                            bf16 *dgate, bf16 *dup, int64_t vectors) {
    const int64_t base = (int64_t)blockIdx.x * 512 + threadIdx.x;
    raw_vector<PARITY_BF16, 8> g[2], u[2], dy[2];
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int64_t v = base + k * 256;
        g[k] = load_raw<PARITY_BF16, 8>(gate + v * 8, true);
        u[k] = load_raw<PARITY_BF16, 8>(up + v * 8, true);
        dy[k] = load_raw<PARITY_BF16, 8>(doutput + v * 8, true);
    }
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int64_t v = base + k * 256;
        float dg[8], du[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            swiglu_backward_element<PARITY_BF16>(__bfloat162float(g[k].v[j]), __bfloat162float(u[k].v[j]),
                                                 __bfloat162float(dy[k].v[j]), &dg[j], &du[j]);
        store_values<PARITY_BF16, 8>(dgate + v * 8, true, dg);
        store_values<PARITY_BF16, 8>(dup + v * 8, true, du);
    }
}

} // namespace

int main() {
    timer t;
    cudaDeviceProp properties;
    CHECK(cudaGetDeviceProperties(&properties, 0));
    printf("device %s, %d SMs, L2 %d MiB\n", properties.name, properties.multiProcessorCount, properties.l2CacheSize >> 20);

    // ---- copy ceilings ----
    {
        void *a, *b;
        const size_t big = (size_t)2 << 30;
        CHECK(cudaMalloc(&a, big));
        CHECK(cudaMalloc(&b, big));
        CHECK(cudaMemset(a, 0x5a, big));
        double ms = t.measure([&] { CHECK(cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice, 0)); });
        copy_rate = 2.0 * big / (ms * 1e-3) / 1e9;
        report("copy 2 GiB (the ceiling)", ms, 2.0 * big);
        for (size_t mib : {128, 384}) {
            const size_t n = mib << 20;
            std::string name = "copy " + std::to_string(mib) + " MiB";
            report(name.c_str(), t.measure([&] { CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0)); }), 2.0 * n);
            name += " (clean flush)";
            report(name.c_str(), t.measure([&] { CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0)); }, true),
                   2.0 * n);
        }
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
    }

    // ---- RMSNorm [16384, 4096] bf16 ----
    {
        const int64_t rows = 16384, hidden = 4096, count = rows * hidden;
        bf16 *x, *w, *y, *y2, *dy, *dx, *dx2, *dw, *dw2;
        float *inv, *inv2;
        CHECK(cudaMalloc(&x, count * 2));
        CHECK(cudaMalloc(&y, count * 2));
        CHECK(cudaMalloc(&y2, count * 2));
        CHECK(cudaMalloc(&dy, count * 2));
        CHECK(cudaMalloc(&dx, count * 2));
        CHECK(cudaMalloc(&dx2, count * 2));
        CHECK(cudaMalloc(&w, hidden * 2));
        CHECK(cudaMalloc(&dw, hidden * 2));
        CHECK(cudaMalloc(&dw2, hidden * 2));
        CHECK(cudaMalloc(&inv, rows * 4));
        CHECK(cudaMalloc(&inv2, rows * 4));
        fill_random<<<1024, 256>>>(x, count, 1, -3, 3);
        fill_random<<<1024, 256>>>(dy, count, 2, -1, 1);
        fill_random<<<64, 256>>>(w, hidden, 3, 0.5, 1.5);
        CHECK(cudaDeviceSynchronize());
        const double bytes_fwd = 2.0 * count * 2, bytes_bwd = 3.0 * count * 2;

        // tensors wrapping the buffers, for the real launchers (scratch, the dw second stage)
        parity_tensor tx = {}, tw = {}, ty = {}, ty2 = {}, tdy = {}, tdx = {}, tdw = {}, tdx2 = {}, tdw2 = {};
        parity_tensor *all[] = {&tx, &tw, &ty, &ty2, &tdy, &tdx, &tdw, &tdx2, &tdw2};
        void *data[] = {x, w, y, y2, dy, dx, dw, dx2, dw2};
        for (int i = 0; i < 9; i++) {
            all[i]->data = data[i];
            all[i]->dtype = PARITY_BF16;
            all[i]->device = parity_device{PARITY_DEVICE_CUDA, 0};
        }
        parity_rms_norm_args args = {&tx, &tw, 1e-6, PARITY_RMS_NORM_STANDARD, &ty};
        parity_rms_norm_args args2 = {&tx, &tw, 1e-6, PARITY_RMS_NORM_STANDARD, &ty2};
        parity_rms_norm_grads grads = {&tdy, &tdx, &tdw}, grads2 = {&tdy, &tdx2, &tdw2};
        row_layout layout;
        row_layout_for(hidden, 8, false, &layout);
        char name[128];

        row_layout forward_layout;
        row_layout_from(hidden, 8, forward_layouts, 6, &forward_layout);
        auto old_forward = [&] {
            rms_norm_forward_kernel<PARITY_BF16, 8, 2, false><<<(unsigned)rows, 256>>>(x, w, y, inv, rows, hidden, 256, 1e-6f, true);
        };
        auto ops_forward = [&] { TRY(launch_forward<PARITY_BF16>(nullptr, &args2, inv2, rows, hidden, forward_layout)); };
        old_forward();
        ops_forward();
        CHECK(cudaDeviceSynchronize());
        snprintf(name, sizeof name, "rms fwd ops layout %d threads x %d: y vs 256 x 2", forward_layout.threads,
                 forward_layout.items);
        close_values(name, y2, y, count);
        report("rms fwd 256-thread rows x 2 (the previous kernel)", t.measure(old_forward), bytes_fwd);
        report("rms fwd ops (128-thread rows x 4)", t.measure(ops_forward), bytes_fwd);
        report("rms fwd ops, again", t.measure(ops_forward), bytes_fwd);
        report("rms fwd ops, clean flush", t.measure(ops_forward, true), bytes_fwd);
        // other layouts of the register kernel (other bits): fewer threads per row, more accesses each
#define FWD_LAYOUT(THREADS, ITEMS, BLOCK)                                                                              \
    do {                                                                                                               \
        auto step = [&] {                                                                                              \
            rms_norm_forward_kernel<PARITY_BF16, 8, ITEMS, false>                                                      \
                <<<(unsigned)(rows / (BLOCK / THREADS)), BLOCK>>>(x, w, y2, inv2, rows, hidden, THREADS, 1e-6f, true); \
        };                                                                                                             \
        step();                                                                                                        \
        CHECK(cudaDeviceSynchronize());                                                                                \
        close_values("rms fwd " #THREADS "-thread rows vs 256: y", y2, y, count);                                     \
        report("rms fwd " #THREADS "-thread rows x " #ITEMS " accesses, blocks of " #BLOCK, t.measure(step), bytes_fwd); \
    } while (0)
        FWD_LAYOUT(128, 4, 256);
        FWD_LAYOUT(128, 4, 512);

        old_forward();
        for (auto policy : {PARITY_RMS_NORM_CUDA_PERSISTENT, PARITY_RMS_NORM_CUDA_FIXED_TILES}) {
            const char *p = policy == PARITY_RMS_NORM_CUDA_PERSISTENT ? "persistent" : "fixed tiles";
            auto old_backward = [&] { TRY(launch_backward<PARITY_BF16>(nullptr, &args, inv, &grads, rows, hidden, layout, policy, false)); };
            old_backward();
            snprintf(name, sizeof name, "rms bwd old (%s)", p);
            report(name, t.measure(old_backward), bytes_bwd);
#define BWD_PIPE(ST, MB)                                                                                               \
    do {                                                                                                               \
        auto step = [&] { TRY(launch_backward<PARITY_BF16, ST, MB>(nullptr, &args, inv, &grads2, rows, hidden, layout, policy, true)); }; \
        step();                                                                                                        \
        CHECK(cudaDeviceSynchronize());                                                                                \
        snprintf(name, sizeof name, "rms bwd pipelined stages %d (%s): dx", ST, p);                                   \
        same_bits(name, dx, dx2, count * 2);                                                                           \
        snprintf(name, sizeof name, "rms bwd pipelined stages %d (%s): dw", ST, p);                                   \
        if (policy == PARITY_RMS_NORM_CUDA_FIXED_TILES) same_bits(name, dw, dw2, hidden * 2); /* persistent: other blocks */ \
        snprintf(name, sizeof name, "rms bwd pipelined stages %d min blocks %d (%s)", ST, MB, p);                                       \
        report(name, t.measure(step), bytes_bwd);                                                                      \
    } while (0)
            BWD_PIPE(3, 2);
        }
        // fwd + bwd in one step, the bench's 5 x 128 MiB
        auto pair_old = [&] {
            old_forward();
            TRY(launch_backward<PARITY_BF16>(nullptr, &args, inv, &grads, rows, hidden, layout, PARITY_RMS_NORM_CUDA_PERSISTENT,
                                             false));
        };
        auto pair_ops = [&] {
            ops_forward();
            TRY(launch_backward<PARITY_BF16>(nullptr, &args2, inv2, &grads2, rows, hidden, layout,
                                             PARITY_RMS_NORM_CUDA_PERSISTENT));
        };
        report("rms fwd+bwd previous (persistent)", t.measure(pair_old), bytes_fwd + bytes_bwd);
        report("rms fwd+bwd ops (persistent)", t.measure(pair_ops), bytes_fwd + bytes_bwd);
        for (void *p : {(void *)x, (void *)y, (void *)y2, (void *)dy, (void *)dx, (void *)dx2, (void *)w, (void *)dw,
                        (void *)dw2, (void *)inv, (void *)inv2})
            CHECK(cudaFree(p));
    }

    // ---- SwiGLU [16384, 8192] bf16 ----
    {
        const int64_t count = (int64_t)16384 * 8192, vectors = count / 8;
        bf16 *g, *u, *out, *reference;
        CHECK(cudaMalloc(&g, count * 2));
        CHECK(cudaMalloc(&u, count * 2));
        CHECK(cudaMalloc(&out, count * 2));
        CHECK(cudaMalloc(&reference, count * 2));
        fill_random<<<1024, 256>>>(g, count, 4, -6, 6);
        fill_random<<<1024, 256>>>(u, count, 5, -2, 2);
        const double bytes = 3.0 * count * 2;
        const unsigned old_grid = (unsigned)((vectors + 511) / 512);
        auto old = [&] { swiglu_forward_kernel<PARITY_BF16, 8><<<old_grid, 256>>>(g, u, reference, vectors, 0); };
        old();
        CHECK(cudaDeviceSynchronize());
        report("swiglu ops kernel (256 threads x 2 vectors, no loop)", t.measure(old), bytes);
        report("swiglu ops kernel, again", t.measure(old), bytes);
        const int4 *gv = (const int4 *)g, *uv = (const int4 *)u;
        int4 *ov = (int4 *)out;
#define SWIGLU(THREADS, UNROLL, HINT, CS)                                                                              \
    do {                                                                                                               \
        const unsigned grid = (unsigned)((vectors + THREADS * UNROLL - 1) / (THREADS * UNROLL));                       \
        auto step = [&] { swiglu_variant<THREADS, UNROLL, HINT, CS><<<grid, THREADS>>>(gv, uv, ov, vectors); };        \
        CHECK(cudaMemset(out, 0xff, count * 2));                                                                       \
        step();                                                                                                        \
        CHECK(cudaDeviceSynchronize());                                                                                \
        same_bits("swiglu " #THREADS "x" #UNROLL " hint " #HINT " cs " #CS, out, reference, count * 2);               \
        report("swiglu threads " #THREADS " unroll " #UNROLL " load hint " #HINT " store.cs " #CS, t.measure(step),    \
               bytes);                                                                                                 \
    } while (0)
        SWIGLU(256, 2, 0, false);
        SWIGLU(256, 2, 1, true);
        SWIGLU(256, 1, 0, false);
        // backward: the ops kernel (resident grid, strided) against a full grid without a loop
        {
            bf16 *dy, *dg, *du, *dg2, *du2;
            for (bf16 **p : {&dy, &dg, &du, &dg2, &du2}) CHECK(cudaMalloc(p, count * 2));
            fill_random<<<1024, 256>>>(dy, count, 6, -1, 1);
            auto ops = [&] {
                swiglu_backward_kernel<PARITY_BF16, 8><<<stream_grid(vectors), 256>>>(g, u, dy, dg, du, vectors, 0);
            };
            auto full = [&] { swiglu_backward_full<<<(unsigned)(vectors / 512), 256>>>(g, u, dy, dg2, du2, vectors); };
            ops();
            full();
            CHECK(cudaDeviceSynchronize());
            same_bits("swiglu bwd ops vs tool kernel: dgate", dg, dg2, count * 2);
            same_bits("swiglu bwd ops vs tool kernel: dup", du, du2, count * 2);
            report("swiglu bwd ops kernel (full grid, no loop)", t.measure(ops), 5.0 * count * 2);
            report("swiglu bwd tool kernel (full grid, no loop, no bounds)", t.measure(full), 5.0 * count * 2);
            for (bf16 *p : {dy, dg, du, dg2, du2}) CHECK(cudaFree(p));
        }
        CHECK(cudaFree(g));
        CHECK(cudaFree(u));
        CHECK(cudaFree(out));
        CHECK(cudaFree(reference));
    }
    printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
