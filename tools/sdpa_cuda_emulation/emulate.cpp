// emulate.cpp: ops/attention/sdpa.cu's kernels run on the host, to check their indexing, masks,
// document handling, GQA grouping and online softmax without a GPU. Not part of the build: run.sh
// extracts the kernels' text from sdpa.cu (kernels.inc) and builds this program around it.
// Each block runs as one thread (blockDim.x = 1: every strided loop covers all its indices and
// __syncthreads is a no-op), so races are NOT checked here (the GPU tests do); shared memory is
// poisoned with NaN bytes before every block, so a read of an unwritten element shows up as a NaN.
// Compared with a naive f64 attention (full score matrix) in f64 and f32 on awkward shapes: T = 1,
// 17, 239, 1023, packed documents of 1 .. 300, GQA, MQA, MLA D != Dv, D = 256, causal, windows.
// Exit status 0 when f64 is within 1e-12 and f32 within 1e-4 relative L2 on out, dq, dk and dv.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <random>
using std::fmax;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __syncthreads()
enum parity_dtype { PARITY_F64, PARITY_F32, PARITY_BF16 };
struct dim { int64_t x, y; };
static dim threadIdx = {0, 0}, blockIdx = {0, 0}, blockDim = {1, 1}, gridDim = {1, 1};
static unsigned char *g_shared;
template <parity_dtype D> struct scalar;
template <> struct scalar<PARITY_F64> { using storage = double; using compute = double;
  static compute load(storage v) { return v; } static storage store(compute v) { return v; } };
template <> struct scalar<PARITY_F32> { using storage = float; using compute = float;
  static compute load(storage v) { return v; } static storage store(compute v) { return v; } };
inline double precise_exp(double x) { return exp(x); }
inline float precise_exp(float x) { return (float)exp((double)x); }
inline double precise_log(double x) { return log(x); }
inline float precise_log(float x) { return (float)log((double)x); }
#define PARITY_CUDA_FOR_EACH(index, count) for (int64_t index = 0; index < (count); index++)
inline int64_t document_of(const int64_t *offsets, int64_t count, int64_t token) {
    int64_t low = 0, high = count - 1;
    while (low < high) { int64_t middle = (low + high + 1) / 2; if (offsets[middle] <= token) low = middle; else high = middle - 1; }
    return low;
}
#include "kernels.inc"

struct problem { int64_t hq, hk, d, dv; std::vector<int64_t> lengths; bool causal; int64_t window; double scale; };

static bool vis(const problem &p, int64_t i, int64_t j) { if (p.causal && j > i) return false; return p.window == 0 || i - j < p.window; }

template <parity_dtype D> double run(const problem &p, unsigned seed) {
    using T = typename scalar<D>::storage;
    std::vector<int64_t> off = {0};
    for (auto l : p.lengths) off.push_back(off.back() + l);
    int64_t n = off.back(), hq = p.hq, hk = p.hk, d = p.d, dv = p.dv, g = hq / hk;
    std::mt19937 rng(seed); std::normal_distribution<double> nd;
    std::vector<double> q(n * hq * d), k(n * hk * d), v(n * hk * dv), dy(n * hq * dv);
    for (auto *x : {&q, &k, &v, &dy}) for (auto &e : *x) e = (double)(T)nd(rng);
    // reference
    std::vector<double> y(n * hq * dv, 0), dq(n * hq * d, 0), dk(n * hk * d, 0), dvr(n * hk * dv, 0);
    for (size_t s = 0; s + 1 < off.size(); s++) {
        int64_t b = off[s], L = off[s + 1] - b;
        for (int64_t h = 0; h < hq; h++) {
            int64_t kh = h / g;
            std::vector<double> P(L * L, 0), dP(L * L, 0);
            for (int64_t i = 0; i < L; i++) {
                double m = -INFINITY;
                for (int64_t j = 0; j < L; j++) if (vis(p, i, j)) { double t = 0; for (int64_t e = 0; e < d; e++) t += q[((b + i) * hq + h) * d + e] * k[((b + j) * hk + kh) * d + e]; P[i * L + j] = t * p.scale; m = std::max(m, t * p.scale); }
                double sum = 0;
                for (int64_t j = 0; j < L; j++) { P[i * L + j] = vis(p, i, j) ? exp(P[i * L + j] - m) : 0; sum += P[i * L + j]; }
                for (int64_t j = 0; j < L; j++) P[i * L + j] /= sum;
                for (int64_t e = 0; e < dv; e++) { double t = 0; for (int64_t j = 0; j < L; j++) t += P[i * L + j] * v[((b + j) * hk + kh) * dv + e]; y[((b + i) * hq + h) * dv + e] = t; }
            }
            for (int64_t i = 0; i < L; i++) {
                double dot = 0;
                for (int64_t j = 0; j < L; j++) { double t = 0; for (int64_t e = 0; e < dv; e++) t += dy[((b + i) * hq + h) * dv + e] * v[((b + j) * hk + kh) * dv + e]; dP[i * L + j] = t; dot += t * P[i * L + j]; }
                for (int64_t j = 0; j < L; j++) dP[i * L + j] = P[i * L + j] * (dP[i * L + j] - dot) * p.scale;
            }
            for (int64_t i = 0; i < L; i++) for (int64_t j = 0; j < L; j++) {
                for (int64_t e = 0; e < d; e++) { dq[((b + i) * hq + h) * d + e] += dP[i * L + j] * k[((b + j) * hk + kh) * d + e]; dk[((b + j) * hk + kh) * d + e] += dP[i * L + j] * q[((b + i) * hq + h) * d + e]; }
                for (int64_t e = 0; e < dv; e++) dvr[((b + j) * hk + kh) * dv + e] += P[i * L + j] * dy[((b + i) * hq + h) * dv + e];
            }
        }
    }
    // kernels
    using C = typename scalar<D>::compute;
    std::vector<T> tq(q.begin(), q.end()), tk(k.begin(), k.end()), tv(v.begin(), v.end()), tdy(dy.begin(), dy.end());
    std::vector<T> ty(n * hq * dv), tdq(n * hq * d), tdk(n * hk * d), tdv(n * hk * dv);
    std::vector<C> lse(n * hq), delta(n * hq);
    sdpa_call call = {off.data(), (int64_t)p.lengths.size(), n, hq, hk, g, d, dv, p.causal, p.window};
    std::vector<unsigned char> shared(300000);
    g_shared = shared.data();
    auto launch = [&](int64_t gx, int64_t gy, auto fn) { for (int64_t by = 0; by < gy; by++) for (int64_t bx = 0; bx < gx; bx++) { blockIdx = {bx, by}; memset(shared.data(), 0xff, shared.size()); fn(); } };
    constexpr int BQ = tile_sizes<C>::queries, BK = tile_sizes<C>::keys;
    C sc = (C)p.scale;
    launch((n + BQ - 1) / BQ, hq, [&] { sdpa_forward<D>(call, sc, tq.data(), tk.data(), tv.data(), ty.data(), lse.data()); });
    sdpa_delta<D>(n * hq, dv, tdy.data(), ty.data(), delta.data());
    launch((n + BQ - 1) / BQ, hq, [&] { sdpa_backward_query<D>(call, sc, tq.data(), tk.data(), tv.data(), tdy.data(), lse.data(), delta.data(), tdq.data()); });
    launch((n + BK - 1) / BK, hk, [&] { sdpa_backward_key_value<D>(call, sc, tq.data(), tk.data(), tv.data(), tdy.data(), lse.data(), delta.data(), tdk.data(), tdv.data()); });
    auto rel = [](const std::vector<double> &a, const std::vector<T> &b) { double num = 0, den = 0; bool bad = false; for (size_t i = 0; i < a.size(); i++) { double x = (double)b[i] - a[i]; if (!std::isfinite((double)b[i])) bad = true; num += x * x; den += a[i] * a[i]; } return bad ? INFINITY : sqrt(num / (den > 0 ? den : 1)); };
    double e[4] = {rel(y, ty), rel(dq, tdq), rel(dk, tdk), rel(dvr, tdv)};
    double worst = 0; for (double x : e) worst = std::max(worst, x);
    printf("%s hq=%lld hk=%lld d=%lld dv=%lld docs=%zu causal=%d window=%lld: out %.1e dq %.1e dk %.1e dv %.1e\n", D == PARITY_F64 ? "f64" : "f32", (long long)hq, (long long)hk, (long long)d, (long long)dv, p.lengths.size(), p.causal, (long long)p.window, e[0], e[1], e[2], e[3]);
    return worst;
}
int main() {
    std::vector<problem> ps = {
        {4, 2, 64, 64, {1}, true, 0, 0.125}, {2, 1, 192, 128, {1}, false, 0, 0.07},
        {32, 8, 16, 16, {17}, true, 0, 0.25}, {8, 2, 24, 16, {17}, true, 5, 0.2}, {8, 1, 8, 8, {17}, false, 0, 0.3},
        {4, 1, 16, 16, {239}, true, 0, 0.25}, {2, 1, 24, 40, {239}, true, 100, 0.2}, {2, 1, 8, 8, {1023}, true, 0, 0.3},
        {1, 1, 8, 8, {300}, true, 37, 0.3}, {4, 2, 8, 8, {1, 15, 100, 300}, true, 0, 0.3}, {4, 2, 8, 12, {300, 1, 100, 15}, false, 0, 0.3},
        {4, 1, 8, 8, {1, 15, 100, 300}, true, 37, 0.3}, {3, 1, 8, 8, {15, 1, 1, 33, 17}, true, 0, 0.3}, {2, 2, 8, 8, {1, 1, 1, 1, 1}, false, 0, 0.3},
        {2, 1, 256, 256, {40}, true, 0, 0.06}, {2, 1, 8, 8, {33, 31}, true, 3, 0.3},
    };
    double worst64 = 0, worst32 = 0;
    for (auto &p : ps) { worst64 = std::max(worst64, run<PARITY_F64>(p, 1)); worst32 = std::max(worst32, run<PARITY_F32>(p, 2)); }
    printf("worst f64 %.2e, worst f32 %.2e\n", worst64, worst32);
    return !(worst64 < 1e-12 && worst32 < 1e-4);
}
