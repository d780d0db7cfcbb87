// emulate.cpp: ops/attention/sdpa.cu's kernels run on the host, to check their indexing, masks,
// document handling, GQA grouping, online softmax and block-mask walks without a GPU. Not part of the
// build: run.sh extracts the kernels' text from sdpa.cu (kernels.inc) and builds this program around it.
// Each block runs as one thread (blockDim.x = 1: every strided loop covers all its indices and
// __syncthreads is a no-op), so races are NOT checked here (the GPU tests do); shared memory is
// poisoned with NaN bytes before every block, so a read of an unwritten element shows up as a NaN.
// Compared with a naive f64 attention (full score matrix) in f64 and f32 on awkward shapes: T = 1,
// 17, 239, 1023, packed documents of 1 .. 300, GQA, MQA, MLA D != Dv, D = 256, causal, windows.
// Each line ends with a fingerprint (FNV-1a of the bytes of out, dq, dk, dv): the no-mask results of
// two versions of the kernels are bitwise equal when their fingerprints are.
// Block masks (flex_attention's f32/f64 path; block_mask.h's lists, built here from the same
// visibility as block_mask.c builds them, full / partial / empty over the real tokens) on the packed
// and windowed problems, at block sizes of 1 to 4 tiles and 128 x 128, head-broadcast and (for the
// dk/dv walk per query head) head-specific:
//   from visibility   the same tolerances against the f64 reference (the same attention as without a
//                     mask: only the tiles visited and their order differ);
//   blind block 0     query block 0 taken out of every list by hand (as test_flex_attention_gpu.c
//                     does; a head-specific mask: of the odd query heads only): its rows' out and dq
//                     exactly 0, every value finite, the other rows' out bitwise that of the unedited
//                     mask, and all four against a reference where those rows see nothing.
// Exit status 0 when f64 is within 1e-12 and f32 within 1e-4 relative L2 on out, dq, dk and dv, and
// every blind-block check holds.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <random>
#include <utility>
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

// A block mask as block_mask.h lays it out, on the host (the kernels read it in place).
struct host_mask {
    int64_t heads, q_block, kv_block, q_blocks, kv_blocks;
    std::vector<int32_t> kv_num, kv_index, full_kv_num, full_kv_index, q_num, q_index, full_q_num, full_q_index, doc;
    sdpa_mask view() const {
        return {kv_num.data(), kv_index.data(), full_kv_num.data(), full_kv_index.data(), q_num.data(), q_index.data(),
                full_q_num.data(), full_q_index.data(), doc.data(), heads, q_block, kv_block, q_blocks, kv_blocks};
    }
};

static bool vis(const problem &p, int64_t i, int64_t j) { if (p.causal && j > i) return false; return p.window == 0 || i - j < p.window; }

// The mask of the problem's visibility over the packed row (offsets), `heads` copies of one row.
static host_mask build_mask(const problem &p, const std::vector<int64_t> &off, int64_t qb, int64_t kb, int64_t heads) {
    int64_t n = off.back();
    host_mask m;
    m.heads = heads; m.q_block = qb; m.kv_block = kb; m.q_blocks = (n + qb - 1) / qb; m.kv_blocks = (n + kb - 1) / kb;
    m.doc.resize(n);
    for (size_t s = 0; s + 1 < off.size(); s++) for (int64_t t = off[s]; t < off[s + 1]; t++) m.doc[t] = (int32_t)s;
    std::vector<int> state(m.q_blocks * m.kv_blocks); // 0 empty, 1 partial, 2 full
    for (int64_t a = 0; a < m.q_blocks; a++) for (int64_t b = 0; b < m.kv_blocks; b++) {
        int64_t seen = 0, pairs = 0;
        for (int64_t i = a * qb; i < std::min(n, (a + 1) * qb); i++) for (int64_t j = b * kb; j < std::min(n, (b + 1) * kb); j++) {
            pairs++;
            seen += m.doc[i] == m.doc[j] && vis(p, i, j);
        }
        state[a * m.kv_blocks + b] = seen == 0 ? 0 : seen == pairs ? 2 : 1;
    }
    auto lists = [&](int64_t rows, int64_t cols, bool transposed, std::vector<int32_t> &num, std::vector<int32_t> &index,
                     std::vector<int32_t> &full_num, std::vector<int32_t> &full_index) {
        num.assign(heads * rows, 0); full_num.assign(heads * rows, 0); index.assign(heads * rows * cols, 0); full_index.assign(heads * rows * cols, 0);
        for (int64_t h = 0; h < heads; h++) for (int64_t r = 0; r < rows; r++) for (int64_t c = 0; c < cols; c++) {
            int st = transposed ? state[c * m.kv_blocks + r] : state[r * m.kv_blocks + c];
            int64_t row = h * rows + r;
            if (st == 1) index[row * cols + num[row]++] = (int32_t)c;
            if (st == 2) full_index[row * cols + full_num[row]++] = (int32_t)c;
        }
    };
    lists(m.q_blocks, m.kv_blocks, false, m.kv_num, m.kv_index, m.full_kv_num, m.full_kv_index);
    lists(m.kv_blocks, m.q_blocks, true, m.q_num, m.q_index, m.full_q_num, m.full_q_index);
    return m;
}

// Query block 0 out of every list (test_flex_attention_gpu.c's edit): no key blocks for it, and
// dropped from every key block's query lists; of the odd heads' rows only when `odd_heads`.
static void blind_query_block_0(host_mask &m, bool odd_heads) {
    for (int64_t h = 0; h < m.heads; h++) {
        if (odd_heads && h % 2 == 0) continue;
        m.kv_num[h * m.q_blocks] = 0;
        m.full_kv_num[h * m.q_blocks] = 0;
        for (int64_t b = 0; b < m.kv_blocks; b++) {
            int64_t row = h * m.kv_blocks + b;
            for (auto l : {std::make_pair(&m.q_num, &m.q_index), std::make_pair(&m.full_q_num, &m.full_q_index)}) {
                int32_t *entries = l.second->data() + row * m.q_blocks;
                int32_t &count = (*l.first)[row];
                if (count > 0 && entries[0] == 0) { std::memmove(entries, entries + 1, (count - 1) * sizeof *entries); count--; }
            }
        }
    }
}

// One problem's inputs (rounded to T), its f64 reference (rows < blind see nothing: of every query
// head, or of the odd ones when odd_heads) and the kernels' results.
template <parity_dtype D> struct attempt {
    using T = typename scalar<D>::storage;
    using C = typename scalar<D>::compute;
    const problem &p;
    std::vector<int64_t> off;
    int64_t n, hq, hk, d, dv, g;
    std::vector<double> q, k, v, dy;
    attempt(const problem &pr, unsigned seed) : p(pr), off{0} {
        for (auto l : p.lengths) off.push_back(off.back() + l);
        n = off.back(); hq = p.hq; hk = p.hk; d = p.d; dv = p.dv; g = hq / hk;
        std::mt19937 rng(seed); std::normal_distribution<double> nd;
        q.resize(n * hq * d); k.resize(n * hk * d); v.resize(n * hk * dv); dy.resize(n * hq * dv);
        for (auto *x : {&q, &k, &v, &dy}) for (auto &e : *x) e = (double)(T)nd(rng);
    }
    struct result { std::vector<double> y, dq, dk, dv; };
    struct kernel_result { std::vector<T> y, dq, dk, dv; };
    static bool blinded(int64_t head, bool odd_heads) { return !odd_heads || head % 2 == 1; }
    result reference(int64_t blind, bool odd_heads) const {
        result r{std::vector<double>(n * hq * dv, 0), std::vector<double>(n * hq * d, 0), std::vector<double>(n * hk * d, 0), std::vector<double>(n * hk * dv, 0)};
        auto &y = r.y; auto &dq = r.dq; auto &dk = r.dk; auto &dvr = r.dv;
        for (size_t s = 0; s + 1 < off.size(); s++) {
            int64_t b = off[s], L = off[s + 1] - b;
            for (int64_t h = 0; h < hq; h++) {
                int64_t kh = h / g;
                std::vector<double> P(L * L, 0), dP(L * L, 0);
                auto seen = [&](int64_t i, int64_t j) { return (b + i >= blind || !blinded(h, odd_heads)) && vis(p, i, j); };
                for (int64_t i = 0; i < L; i++) {
                    double m = -INFINITY;
                    for (int64_t j = 0; j < L; j++) if (seen(i, j)) { double t = 0; for (int64_t e = 0; e < d; e++) t += q[((b + i) * hq + h) * d + e] * k[((b + j) * hk + kh) * d + e]; P[i * L + j] = t * p.scale; m = std::max(m, t * p.scale); }
                    double sum = 0;
                    for (int64_t j = 0; j < L; j++) { P[i * L + j] = seen(i, j) ? exp(P[i * L + j] - m) : 0; sum += P[i * L + j]; }
                    for (int64_t j = 0; j < L; j++) P[i * L + j] = sum > 0 ? P[i * L + j] / sum : 0;
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
        return r;
    }
    kernel_result kernels(const host_mask *mask) const {
        std::vector<T> tq(q.begin(), q.end()), tk(k.begin(), k.end()), tv(v.begin(), v.end()), tdy(dy.begin(), dy.end());
        kernel_result r{std::vector<T>(n * hq * dv), std::vector<T>(n * hq * d), std::vector<T>(n * hk * d), std::vector<T>(n * hk * dv)};
        std::vector<C> lse(n * hq), delta(n * hq);
        sdpa_call call = {off.data(), (int64_t)p.lengths.size(), n, hq, hk, g, d, dv, p.causal, p.window};
        if (mask) call.mask = mask->view();
        std::vector<unsigned char> shared(300000);
        g_shared = shared.data();
        auto launch = [&](int64_t gx, int64_t gy, auto fn) { for (int64_t by = 0; by < gy; by++) for (int64_t bx = 0; bx < gx; bx++) { blockIdx = {bx, by}; memset(shared.data(), 0xff, shared.size()); fn(); } };
        constexpr int BQ = tile_sizes<C>::queries, BK = tile_sizes<C>::keys;
        C sc = (C)p.scale;
        launch((n + BQ - 1) / BQ, hq, [&] { sdpa_forward<D>(call, sc, tq.data(), tk.data(), tv.data(), r.y.data(), lse.data()); });
        sdpa_delta<D>(n * hq, dv, tdy.data(), r.y.data(), delta.data());
        launch((n + BQ - 1) / BQ, hq, [&] { sdpa_backward_query<D>(call, sc, tq.data(), tk.data(), tv.data(), tdy.data(), lse.data(), delta.data(), r.dq.data()); });
        launch((n + BK - 1) / BK, hk, [&] { sdpa_backward_key_value<D>(call, sc, tq.data(), tk.data(), tv.data(), tdy.data(), lse.data(), delta.data(), r.dk.data(), r.dv.data()); });
        return r;
    }
};

template <typename T> static uint64_t fingerprint(std::initializer_list<const std::vector<T> *> all) {
    uint64_t h = 1469598103934665603ull;
    for (auto *x : all) { const unsigned char *b = (const unsigned char *)x->data(); for (size_t i = 0; i < x->size() * sizeof(T); i++) h = (h ^ b[i]) * 1099511628211ull; }
    return h;
}
template <typename T> static double rel(const std::vector<double> &a, const std::vector<T> &b) { double num = 0, den = 0; bool bad = false; for (size_t i = 0; i < a.size(); i++) { double x = (double)b[i] - a[i]; if (!std::isfinite((double)b[i])) bad = true; num += x * x; den += a[i] * a[i]; } return bad ? INFINITY : sqrt(num / (den > 0 ? den : 1)); }

template <typename A> static void describe(const A &a, const char *what) {
    const problem &p = a.p;
    printf("%s hq=%lld hk=%lld d=%lld dv=%lld docs=%zu causal=%d window=%lld%s", sizeof(typename A::T) == 8 ? "f64" : "f32", (long long)p.hq, (long long)p.hk, (long long)p.d, (long long)p.dv, p.lengths.size(), p.causal, (long long)p.window, what);
}

// The worst relative error of out, dq, dk, dv against the reference, printed.
template <typename A> static double report(const A &a, const typename A::result &ref, const typename A::kernel_result &got, const char *what) {
    double e[4] = {rel(ref.y, got.y), rel(ref.dq, got.dq), rel(ref.dk, got.dk), rel(ref.dv, got.dv)};
    describe(a, what);
    printf(": out %.1e dq %.1e dk %.1e dv %.1e [%016llx]\n", e[0], e[1], e[2], e[3], (unsigned long long)fingerprint<typename A::T>({&got.y, &got.dq, &got.dk, &got.dv}));
    double worst = 0; for (double x : e) worst = std::max(worst, x);
    return worst;
}

template <parity_dtype D> double run(const problem &p, unsigned seed) {
    attempt<D> a(p, seed);
    return report(a, a.reference(0, false), a.kernels(nullptr), "");
}

// The problem on block masks built from its visibility; then query block 0 blinded (a head-specific
// mask: of the odd query heads only, so each head must walk its own lists). Returns the worst
// relative error; *failures counts the blind-block checks that failed.
template <parity_dtype D> double run_masked(const problem &p, unsigned seed, int *failures) {
    using C = typename scalar<D>::compute;
    constexpr int64_t tile = std::max(tile_sizes<C>::queries, tile_sizes<C>::keys);
    attempt<D> a(p, seed);
    auto ref = a.reference(0, false);
    double worst = 0;
    const int64_t blocks[][2] = {{tile, 2 * tile}, {3 * tile, tile}, {4 * tile, 4 * tile}, {128, 128}};
    for (auto &b : blocks) for (int64_t heads : {(int64_t)1, p.hq}) {
        char what[96];
        host_mask mask = build_mask(p, a.off, b[0], b[1], heads);
        snprintf(what, sizeof what, " mask %lldx%lld heads=%lld", (long long)b[0], (long long)b[1], (long long)heads);
        auto whole = a.kernels(&mask);
        worst = std::max(worst, report(a, ref, whole, what));
        if (b[0] >= a.n) continue; // block 0 holds every query: nothing left to compare
        bool odd_heads = heads > 1;
        blind_query_block_0(mask, odd_heads);
        auto blind = a.kernels(&mask);
        snprintf(what, sizeof what, " mask %lldx%lld heads=%lld blind block 0%s", (long long)b[0], (long long)b[1], (long long)heads, odd_heads ? " (odd heads)" : "");
        worst = std::max(worst, report(a, a.reference(b[0], odd_heads), blind, what));
        int64_t nonzero = 0, non_finite = 0, changed = 0;
        for (int64_t t = 0; t < a.n; t++) for (int64_t h = 0; h < a.hq; h++) {
            bool dark = t < b[0] && a.blinded(h, odd_heads);
            for (int64_t e = 0; e < a.dv; e++) {
                auto y = blind.y[(t * a.hq + h) * a.dv + e];
                if (dark) nonzero += y != 0;
                else changed += y != whole.y[(t * a.hq + h) * a.dv + e];
            }
            for (int64_t e = 0; e < a.d && dark; e++) nonzero += blind.dq[(t * a.hq + h) * a.d + e] != 0;
        }
        for (auto *x : {&blind.y, &blind.dq, &blind.dk, &blind.dv}) for (auto e : *x) non_finite += !std::isfinite((double)e);
        bool ok = nonzero == 0 && non_finite == 0 && changed == 0;
        if (!ok) {
            (*failures)++;
            describe(a, what);
            printf(": FAILED: %lld out/dq values of block 0 not 0, %lld non-finite, %lld other out values changed\n", (long long)nonzero, (long long)non_finite, (long long)changed);
        }
    }
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
    // block masks: one document causal / windowed / non-causal, packed documents, GQA and MQA
    std::vector<problem> masked = {
        {4, 1, 16, 16, {239}, true, 0, 0.25}, {2, 1, 24, 40, {239}, true, 100, 0.2}, {2, 2, 8, 8, {300}, false, 0, 0.3},
        {4, 2, 8, 8, {1, 15, 100, 300}, true, 0, 0.3}, {4, 2, 8, 12, {300, 1, 100, 15}, false, 0, 0.3},
        {4, 1, 8, 8, {1, 15, 100, 300}, true, 37, 0.3}, {3, 1, 8, 8, {15, 1, 1, 33, 17}, true, 0, 0.3},
    };
    double worst64 = 0, worst32 = 0;
    int failures = 0;
    for (auto &p : ps) { worst64 = std::max(worst64, run<PARITY_F64>(p, 1)); worst32 = std::max(worst32, run<PARITY_F32>(p, 2)); }
    for (auto &p : masked) { worst64 = std::max(worst64, run_masked<PARITY_F64>(p, 3, &failures)); worst32 = std::max(worst32, run_masked<PARITY_F32>(p, 4, &failures)); }
    printf("worst f64 %.2e, worst f32 %.2e, blind-block failures %d\n", worst64, worst32, failures);
    return !(worst64 < 1e-12 && worst32 < 1e-4 && failures == 0);
}
