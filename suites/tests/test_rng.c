// test_rng.c: every weight, input and cotangent in parity is drawn from a named Philox stream, and
// goldens are only reproducible if those draws are the same on every machine, device and dtype.
// Checked here: Philox 4x32-10 against Random123's published known-answer vectors; the stream layout
// (seed = key, FNV-1a of the name = upper counter half); that names and seeds separate streams;
// the statistics of uniform, normal and integer fills; that a bf16/f16/f32 fill is the f64 fill rounded
// once; and, with a GPU, that CPU and GPU produce the same words and the same fills (bitwise for
// uniform, within a few f64 ulp for normal, whose log/sin/cos come from different math libraries).
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/philox.h"
#include "ops/core/rng.h"
#include "ops/core/tensor.h"
#include "suites/tests/exec_fixture.h"
#include "suites/tests/gpu_skip.h"
#include "suites/tests/assert_ok.h"

#define ROWS(table) (sizeof(table) / sizeof((table)[0]))

// ---- the generator ---------------------------------------------------------------------------

Test(rng, philox4x32_10_known_answers) {
    // Random123 kat_vectors, philox4x32_10 rows: counter, key -> output.
    static const struct {
        uint32_t counter[4];
        uint32_t key[2];
        uint32_t expected[4];
    } rows[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_philox_block counter = {{rows[row].counter[0], rows[row].counter[1], rows[row].counter[2],
                                        rows[row].counter[3]}};
        parity_philox_block out = parity_philox4x32_10(counter, rows[row].key[0], rows[row].key[1]);
        for (int w = 0; w < 4; w++)
            cr_expect_eq(out.word[w], rows[row].expected[w], "KAT %zu word %d: got 0x%08x, expected 0x%08x", row, w,
                         out.word[w], rows[row].expected[w]);
    }
}

Test(rng, name_hash_is_fnv1a_64) {
    static const struct {
        const char *name;
        uint64_t hash;
    } rows[] = {
        {"", 0xcbf29ce484222325ull},     // FNV-1a offset basis
        {"a", 0xaf63dc4c8601ec8cull},    // published FNV-1a 64 test vectors
        {"foobar", 0x85944171f73967e8ull},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        cr_expect_eq(parity_philox_hash_name(rows[row].name), rows[row].hash, "\"%s\": 0x%016llx", rows[row].name,
                     (unsigned long long)parity_philox_hash_name(rows[row].name));
        parity_rng_stream stream = parity_rng_stream_named(7, rows[row].name);
        cr_expect_eq(stream.name_hash, rows[row].hash);
        cr_expect_eq(stream.seed, 7u);
    }
}

// Word i of stream (seed, name) is word i%4 of Philox(counter = {block lo, block hi, hash lo, hash hi},
// key = {seed lo, seed hi}) with block = i/4: checked independently here, at offsets that carry into the
// high half of the block index.
Test(rng, stream_layout_and_offsets) {
    static const struct {
        uint64_t seed;
        const char *name;
        uint64_t offset;
    } rows[] = {
        {0, "", 0},
        {42, "model.layers.0.self_attn.q_proj.weight", 3},
        {0x0123456789abcdefull, "lm_head.weight", (UINT64_C(1) << 34) - 9}, // block index crosses 2^32
        {UINT64_MAX, "x", UINT64_MAX - 40},
    };
    enum { COUNT = 37 };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_rng_stream stream = parity_rng_stream_named(rows[row].seed, rows[row].name);
        uint32_t words[COUNT];
        parity_rng_words(stream, rows[row].offset, words, COUNT);
        for (int i = 0; i < COUNT; i++) {
            uint64_t index = rows[row].offset + (uint64_t)i, block = index >> 2;
            parity_philox_block counter = {{(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)stream.name_hash,
                                            (uint32_t)(stream.name_hash >> 32)}};
            parity_philox_block out =
                parity_philox4x32_10(counter, (uint32_t)rows[row].seed, (uint32_t)(rows[row].seed >> 32));
            cr_expect_eq(words[i], out.word[index & 3], "row %zu word %d", row, i);
        }
        // A later window of the same stream overlaps an earlier one exactly.
        uint32_t shifted[COUNT - 5];
        parity_rng_words(stream, rows[row].offset + 5, shifted, COUNT - 5);
        cr_expect_eq(memcmp(shifted, words + 5, sizeof shifted), 0, "row %zu: offset window", row);
    }
}

Test(rng, streams_are_separated_by_name_and_seed) {
    static const struct {
        uint64_t seed_a;
        const char *name_a;
        uint64_t seed_b;
        const char *name_b;
        bool identical;
    } rows[] = {
        {1, "model.layers.0.mlp.up_proj.weight", 1, "model.layers.0.mlp.up_proj.weight", true},
        {1, "model.layers.0.mlp.up_proj.weight", 1, "model.layers.0.mlp.gate_proj.weight", false},
        {1, "model.layers.0.mlp.up_proj.weight", 1, "model.layers.1.mlp.up_proj.weight", false},
        {1, "a", 1, "b", false},
        {1, "", 1, "a", false},
        {1, "x", 1, "x ", false},
        {1, "w", 2, "w", false},
        {0, "w", UINT64_C(1) << 32, "w", false}, // seeds differing only in the high key word
    };
    enum { COUNT = 256 };
    for (size_t row = 0; row < ROWS(rows); row++) {
        uint32_t a[COUNT], b[COUNT];
        parity_rng_words(parity_rng_stream_named(rows[row].seed_a, rows[row].name_a), 0, a, COUNT);
        parity_rng_words(parity_rng_stream_named(rows[row].seed_b, rows[row].name_b), 0, b, COUNT);
        int equal = 0;
        for (int i = 0; i < COUNT; i++) equal += a[i] == b[i];
        if (rows[row].identical)
            cr_expect_eq(equal, COUNT, "(%llu, \"%s\") twice: only %d of %d words equal", (unsigned long long)rows[row].seed_a,
                         rows[row].name_a, equal, COUNT);
        else // independent 32-bit words collide with probability 2^-32 each
            cr_expect_leq(equal, 1, "(%llu, \"%s\") vs (%llu, \"%s\"): %d of %d words equal",
                          (unsigned long long)rows[row].seed_a, rows[row].name_a, (unsigned long long)rows[row].seed_b,
                          rows[row].name_b, equal, COUNT);
    }
}

// ---- fill statistics ---------------------------------------------------------------------------

enum { STAT_N = 1 << 20 };

typedef struct moments {
    double mean, variance, min, max;
} moments;

static moments moments_of(const parity_tensor *t) {
    moments m = {0, 0, INFINITY, -INFINITY};
    double sum = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = parity_tensor_get(t, i);
        sum += v;
        if (v < m.min) m.min = v;
        if (v > m.max) m.max = v;
    }
    m.mean = sum / (double)t->numel;
    double squares = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double d = parity_tensor_get(t, i) - m.mean;
        squares += d * d;
    }
    m.variance = squares / (double)(t->numel - 1);
    return m;
}

Test(rng, uniform_fill_range_and_statistics) {
    static const struct {
        double low, high;
    } rows[] = {{0, 1}, {-2, 3}, {-0.02, 0.02}, {100, 101}, {-1e-3, 0}};
    for (size_t row = 0; row < ROWS(rows); row++) {
        double low = rows[row].low, high = rows[row].high, width = high - low;
        parity_tensor t;
        assert_ok(parity_tensor_alloc(&t, PARITY_F64, PARITY_CPU, PARITY_SHAPE(STAT_N)), "alloc");
        assert_ok(parity_rng_fill(NULL, &t, parity_rng_stream_named(2024, "uniform"), PARITY_RNG_UNIFORM, low, high),
                  "fill");
        enum { BINS = 64 };
        long bins[BINS] = {0}, outside = 0;
        for (int64_t i = 0; i < t.numel; i++) {
            double v = ((double *)t.data)[i];
            if (!(v >= low && v < high)) outside++;
            int bin = (int)((v - low) / width * BINS);
            if (bin >= 0 && bin < BINS) bins[bin]++;
        }
        moments m = moments_of(&t);
        double n = STAT_N, sigma_mean = width / sqrt(12 * n);
        double variance = width * width / 12, sigma_variance = width * width * sqrt((1.0 / 80 - 1.0 / 144) / n);
        double chi2 = 0, expected = n / BINS;
        for (int b = 0; b < BINS; b++) chi2 += (bins[b] - expected) * (bins[b] - expected) / expected;
        const char *what = "uniform";
        cr_expect_eq(outside, 0, "%s [%g, %g): %ld values outside", what, low, high, outside);
        cr_expect_lt(fabs(m.mean - (low + high) / 2), 6 * sigma_mean, "%s [%g, %g): mean %.9g", what, low, high, m.mean);
        cr_expect_lt(fabs(m.variance - variance), 6 * sigma_variance, "%s [%g, %g): variance %.9g, expected %.9g", what,
                     low, high, m.variance, variance);
        cr_expect_lt(chi2, 63 + 6 * sqrt(2 * 63.0), "%s [%g, %g): chi^2 over %d bins = %.1f", what, low, high, BINS, chi2);
        cr_expect_lt(m.min - low, width * 1e-4, "%s [%g, %g): min %.9g far from low", what, low, high, m.min);
        cr_expect_lt(high - m.max, width * 1e-4, "%s [%g, %g): max %.9g far from high", what, low, high, m.max);
        parity_tensor_release(&t);
    }
}

Test(rng, normal_fill_statistics) {
    static const struct {
        double mean, std;
    } rows[] = {{0, 1}, {0, 0.02}, {3, 2}, {-1, 0.5}};
    for (size_t row = 0; row < ROWS(rows); row++) {
        double mean = rows[row].mean, std = rows[row].std, n = STAT_N;
        parity_tensor t;
        assert_ok(parity_tensor_alloc(&t, PARITY_F64, PARITY_CPU, PARITY_SHAPE(STAT_N)), "alloc");
        assert_ok(parity_rng_fill(NULL, &t, parity_rng_stream_named(99, "normal"), PARITY_RNG_NORMAL, mean, std),
                  "fill");
        moments m = moments_of(&t);
        long within_one = 0, non_finite = 0;
        double pair_product = 0; // correlation of the cosine/sine halves of each Box-Muller pair
        for (int64_t i = 0; i < t.numel; i++) {
            double z = (((double *)t.data)[i] - mean) / std;
            non_finite += !isfinite(z);
            within_one += fabs(z) < 1;
            if (i % 2 == 1) pair_product += z * ((((double *)t.data)[i - 1] - mean) / std);
        }
        double fraction = within_one / n, p = 0.6826894921370859;
        double correlation = pair_product / (n / 2);
        cr_expect_eq(non_finite, 0);
        cr_expect_lt(fabs(m.mean - mean), 6 * std / sqrt(n), "N(%g, %g): mean %.9g", mean, std, m.mean);
        cr_expect_lt(fabs(m.variance - std * std), 6 * std * std * sqrt(2 / n), "N(%g, %g): variance %.9g", mean, std,
                     m.variance);
        cr_expect_lt(fabs(fraction - p), 6 * sqrt(p * (1 - p) / n), "N(%g, %g): %.6f within one sigma", mean, std,
                     fraction);
        cr_expect_lt(fabs(correlation), 6 / sqrt(n / 2), "N(%g, %g): pair correlation %.6f", mean, std, correlation);
        // Box-Muller from 32-bit words: |z| <= sqrt(2 * 32 ln 2) = 6.66; a million draws reach beyond 4.
        cr_expect(m.max > mean + 4 * std && m.max < mean + 6.7 * std, "N(%g, %g): max %.6g", mean, std, m.max);
        cr_expect(m.min < mean - 4 * std && m.min > mean - 6.7 * std, "N(%g, %g): min %.6g", mean, std, m.min);
        parity_tensor_release(&t);
    }
}

Test(rng, integer_fill_in_range_and_uniform) {
    static const struct {
        parity_dtype dtype;
        int64_t bound;
        int64_t count;
    } rows[] = {
        {PARITY_I64, 1, 1000},
        {PARITY_I64, 10, 200000},
        {PARITY_I32, 7, 70000},
        {PARITY_I32, 151936, STAT_N},             // a vocabulary size
        {PARITY_I32, INT64_C(1) << 31, 1 << 16},  // the largest bound an int32 tensor can hold
        {PARITY_I64, INT64_C(1) << 32, 1 << 16},  // the largest bound
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        int64_t bound = rows[row].bound;
        parity_tensor t;
        assert_ok(parity_tensor_alloc(&t, rows[row].dtype, PARITY_CPU, PARITY_SHAPE(rows[row].count)), "alloc");
        assert_ok(parity_rng_fill_integers(&t, parity_rng_stream_named(5, "tokens"), bound), "fill");
        long outside = 0;
        int64_t min = INT64_MAX, max = INT64_MIN;
        long counts[16] = {0};
        for (int64_t i = 0; i < t.numel; i++) {
            int64_t v = rows[row].dtype == PARITY_I64 ? ((int64_t *)t.data)[i] : ((int32_t *)t.data)[i];
            if (v < 0 || v >= bound) outside++;
            if (v < min) min = v;
            if (v > max) max = v;
            if (bound <= 16 && v >= 0 && v < bound) counts[v]++;
        }
        cr_expect_eq(outside, 0, "%s bound %lld: %ld values outside [0, bound)", parity_dtype_name(rows[row].dtype),
                     (long long)bound, outside);
        if (bound <= 16) {
            double expected = (double)t.numel / (double)bound, sigma = sqrt(expected);
            for (int64_t v = 0; v < bound; v++)
                cr_expect_lt(fabs(counts[v] - expected), 6 * sigma + 1e-9, "bound %lld: value %lld drawn %ld times",
                             (long long)bound, (long long)v, counts[v]);
        } else {
            cr_expect_lt((double)min, (double)bound * 1e-3, "bound %lld: min %lld", (long long)bound, (long long)min);
            cr_expect_gt((double)max, (double)bound * 0.999, "bound %lld: max %lld", (long long)bound, (long long)max);
        }
        parity_tensor_release(&t);
    }
}

Test(rng, invalid_fills_are_rejected) {
    parity_tensor f32, i64, base, transposed;
    assert_ok(parity_tensor_alloc(&f32, PARITY_F32, PARITY_CPU, PARITY_SHAPE(8)), "alloc");
    assert_ok(parity_tensor_alloc(&i64, PARITY_I64, PARITY_CPU, PARITY_SHAPE(8)), "alloc");
    assert_ok(parity_tensor_alloc(&base, PARITY_F32, PARITY_CPU, PARITY_SHAPE(2, 3)), "alloc");
    assert_ok(parity_tensor_transpose(&transposed, &base, 0, 1), "transpose");
    parity_rng_stream stream = parity_rng_stream_named(1, "bad");
    static const struct {
        const char *what;
        int tensor; // 0 f32, 1 i64, 2 transposed f32
        bool integers;
        int64_t bound;
        parity_error_kind kind;
        const char *needle;
    } rows[] = {
        {"float fill of int64", 1, false, 0, PARITY_ERROR_USAGE, "use parity_rng_fill_integers"},
        {"float fill of a strided view", 2, false, 0, PARITY_ERROR_SHAPE, "contiguous"},
        {"integer fill of fp32", 0, true, 10, PARITY_ERROR_USAGE, "integer fill of a fp32 tensor"},
        {"bound 0", 1, true, 0, PARITY_ERROR_USAGE, "integer bound 0 outside"},
        {"negative bound", 1, true, -3, PARITY_ERROR_USAGE, "integer bound -3 outside"},
        {"bound 2^32 + 1", 1, true, (INT64_C(1) << 32) + 1, PARITY_ERROR_USAGE, "outside 1..4294967296 for int64"},
    };
    parity_tensor *tensors[] = {&f32, &i64, &transposed};
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_tensor *t = tensors[rows[row].tensor];
        parity_error *error = rows[row].integers ? parity_rng_fill_integers(t, stream, rows[row].bound)
                                                 : parity_rng_fill(NULL, t, stream, PARITY_RNG_UNIFORM, 0, 1);
        cr_expect_not_null(error, "%s: accepted", rows[row].what);
        if (!error) continue;
        cr_expect_eq(parity_error_kind_of(error), rows[row].kind, "%s", rows[row].what);
        cr_expect(strstr(parity_error_message(error), rows[row].needle) != NULL, "%s: \"%s\" lacks \"%s\"",
                  rows[row].what, parity_error_message(error), rows[row].needle);
        parity_error_free(error);
    }
    parity_tensor_release(&base);
    parity_tensor_release(&i64);
    parity_tensor_release(&f32);
}

// ---- a low-precision fill is the f64 fill rounded once ---------------------------------------

typedef struct dtype_fill_case {
    parity_dtype dtype;
    parity_rng_distribution distribution;
    double a, b;
} dtype_fill_case;

static const dtype_fill_case dtype_fill_cases[] = {
    {PARITY_F32, PARITY_RNG_UNIFORM, -1, 1},     {PARITY_F32, PARITY_RNG_NORMAL, 0, 0.02},
    {PARITY_BF16, PARITY_RNG_UNIFORM, -1, 1},    {PARITY_BF16, PARITY_RNG_UNIFORM, 100, 101},
    {PARITY_BF16, PARITY_RNG_NORMAL, 0, 1},      {PARITY_BF16, PARITY_RNG_NORMAL, 0, 0.02},
    {PARITY_F16, PARITY_RNG_UNIFORM, -3, 3},     {PARITY_F16, PARITY_RNG_NORMAL, 0, 1e-6}, // f16 subnormals
    {PARITY_F64, PARITY_RNG_NORMAL, 0, 1},
};

static uint64_t rounded_bits(parity_dtype dtype, double value) {
    switch (dtype) {
    case PARITY_F64: { uint64_t bits; memcpy(&bits, &value, 8); return bits; }
    case PARITY_F32: { float f = (float)value; uint32_t bits; memcpy(&bits, &f, 4); return bits; }
    case PARITY_BF16: return parity_f64_to_bf16(value);
    case PARITY_F16: return parity_f64_to_f16(value);
    default: return 0;
    }
}

static uint64_t stored_bits(const parity_tensor *t, int64_t i) {
    uint64_t bits = 0;
    size_t size = parity_dtype_size(t->dtype);
    memcpy(&bits, (const char *)t->data + (size_t)i * size, size);
    return bits;
}

Test(rng, low_precision_fill_is_the_f64_fill_rounded_once) {
    enum { N = 1 << 16 };
    for (size_t row = 0; row < ROWS(dtype_fill_cases); row++) {
        const dtype_fill_case *c = &dtype_fill_cases[row];
        parity_rng_stream stream = parity_rng_stream_named(31337, "model.embed_tokens.weight");
        parity_tensor wide, narrow;
        assert_ok(parity_tensor_alloc(&wide, PARITY_F64, PARITY_CPU, PARITY_SHAPE(N)), "alloc");
        assert_ok(parity_tensor_alloc(&narrow, c->dtype, PARITY_CPU, PARITY_SHAPE(N)), "alloc");
        assert_ok(parity_rng_fill(NULL, &wide, stream, c->distribution, c->a, c->b), "f64 fill");
        assert_ok(parity_rng_fill(NULL, &narrow, stream, c->distribution, c->a, c->b), "narrow fill");
        long differ = 0, first = -1, out_of_range = 0;
        for (int64_t i = 0; i < N; i++) {
            double value = ((double *)wide.data)[i];
            if (stored_bits(&narrow, i) != rounded_bits(c->dtype, value)) {
                differ++;
                if (first < 0) first = (long)i;
            }
            // Uniform values lie in [low, high) in f64; rounding may reach `high` itself, never beyond.
            double stored = parity_tensor_get(&narrow, i);
            if (c->distribution == PARITY_RNG_UNIFORM && !(stored >= c->a && stored <= c->b)) out_of_range++;
        }
        cr_expect_eq(differ, 0, "%s %s(%g, %g): %ld of %d elements are not the f64 value rounded once (first %ld)",
                     parity_dtype_name(c->dtype), c->distribution == PARITY_RNG_UNIFORM ? "uniform" : "normal", c->a,
                     c->b, differ, N, first);
        cr_expect_eq(out_of_range, 0, "%s uniform(%g, %g): %ld values outside [low, high]", parity_dtype_name(c->dtype),
                     c->a, c->b, out_of_range);
        parity_tensor_release(&narrow);
        parity_tensor_release(&wide);
    }
}

// ---- CPU vs GPU ---------------------------------------------------------------------------------

enum { GPU_N = 1 << 20 };

Test(rng_cuda, words_equal_on_cpu_and_gpu) {
    parity_test_require_gpu();
    static const struct {
        uint64_t seed;
        const char *name;
        uint64_t offset;
    } rows[] = {
        {0, "", 0},
        {1234, "model.embed_tokens.weight", 0},
        {0xdeadbeefcafef00dull, "lm_head.weight", (UINT64_C(1) << 34) - 1000}, // block index crosses 2^32
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_rng_stream stream = parity_rng_stream_named(rows[row].seed, rows[row].name);
        parity_tensor device, host;
        uint32_t *cpu = malloc(sizeof(uint32_t) * GPU_N);
        cr_assert_not_null(cpu);
        parity_rng_words(stream, rows[row].offset, cpu, GPU_N);
        assert_ok(parity_tensor_alloc(&device, PARITY_I32, PARITY_CUDA(0), PARITY_SHAPE(GPU_N)), "cuda alloc");
        assert_ok(parity_rng_words_cuda(parity_test_exec(PARITY_CUDA(0)), stream, rows[row].offset,
                                        (uint32_t *)device.data, GPU_N),
                  "gpu words");
        assert_ok(parity_tensor_to(&host, &device, PARITY_CPU, PARITY_I32), "copy back");
        long differ = 0;
        for (int64_t i = 0; i < GPU_N; i++) differ += ((uint32_t *)host.data)[i] != cpu[i];
        cr_expect_eq(differ, 0, "stream (%llu, \"%s\") at offset %llu: %ld of %d words differ",
                     (unsigned long long)rows[row].seed, rows[row].name, (unsigned long long)rows[row].offset, differ,
                     GPU_N);
        parity_tensor_release(&host);
        parity_tensor_release(&device);
        free(cpu);
    }
}

// Fills `dtype` tensors of GPU_N elements on the CPU and on cuda:0 from the same stream; returns the
// device result copied to the host in *gpu and the CPU result in *cpu.
static void fill_both(parity_dtype dtype, parity_rng_distribution distribution, double a, double b, parity_tensor *cpu,
                      parity_tensor *gpu) {
    parity_rng_stream stream = parity_rng_stream_named(777, "model.layers.7.mlp.down_proj.weight");
    parity_tensor device;
    assert_ok(parity_tensor_alloc(cpu, dtype, PARITY_CPU, PARITY_SHAPE(GPU_N)), "cpu alloc");
    assert_ok(parity_tensor_alloc(&device, dtype, PARITY_CUDA(0), PARITY_SHAPE(GPU_N)), "cuda alloc");
    assert_ok(parity_rng_fill(NULL, cpu, stream, distribution, a, b), "cpu fill");
    assert_ok(parity_rng_fill(parity_test_exec(PARITY_CUDA(0)), &device, stream, distribution, a, b), "gpu fill");
    assert_ok(parity_tensor_to(gpu, &device, PARITY_CPU, dtype), "copy back");
    parity_tensor_release(&device);
}

Test(rng_cuda, uniform_fills_are_bitwise_equal_on_cpu_and_gpu) {
    parity_test_require_gpu();
    static const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16};
    static const struct {
        double low, high;
    } ranges[] = {{0, 1}, {-0.02, 0.02}, {-3, 5}};
    for (size_t d = 0; d < ROWS(dtypes); d++) {
        for (size_t r = 0; r < ROWS(ranges); r++) {
            parity_tensor cpu, gpu;
            fill_both(dtypes[d], PARITY_RNG_UNIFORM, ranges[r].low, ranges[r].high, &cpu, &gpu);
            long differ = 0, first = -1;
            for (int64_t i = 0; i < GPU_N; i++)
                if (stored_bits(&cpu, i) != stored_bits(&gpu, i)) {
                    if (first < 0) first = (long)i;
                    differ++;
                }
            cr_expect_eq(differ, 0, "%s uniform(%g, %g): %ld of %d elements differ (first %ld: cpu %a, gpu %a)",
                         parity_dtype_name(dtypes[d]), ranges[r].low, ranges[r].high, differ, GPU_N, first,
                         first >= 0 ? parity_tensor_get(&cpu, first) : 0.0,
                         first >= 0 ? parity_tensor_get(&gpu, first) : 0.0);
            parity_tensor_release(&gpu);
            parity_tensor_release(&cpu);
        }
    }
}

// Distance in units in the last place between two finite doubles of the same sign.
static uint64_t ulp_distance(double a, double b) {
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    if (ia < 0) ia = INT64_MIN - ia; // map to a monotonic integer line
    if (ib < 0) ib = INT64_MIN - ib;
    return ia > ib ? (uint64_t)ia - (uint64_t)ib : (uint64_t)ib - (uint64_t)ia;
}

Test(rng_cuda, normal_fill_f64_within_4_ulp_of_cpu) {
    parity_test_require_gpu();
    static const struct {
        double mean, std;
    } rows[] = {{0, 1}, {0, 0.02}};
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_tensor cpu, gpu;
        fill_both(PARITY_F64, PARITY_RNG_NORMAL, rows[row].mean, rows[row].std, &cpu, &gpu);
        long histogram[6] = {0}; // 0, 1, 2, 3, 4, more ulp
        uint64_t worst_ulp = 0;
        double worst_relative = 0;
        for (int64_t i = 0; i < GPU_N; i++) {
            double c = ((double *)cpu.data)[i], g = ((double *)gpu.data)[i];
            uint64_t ulp = ulp_distance(c, g);
            histogram[ulp < 5 ? ulp : 5]++;
            if (ulp > worst_ulp) worst_ulp = ulp;
            double relative = c != 0 ? fabs(g - c) / fabs(c) : fabs(g);
            if (relative > worst_relative) worst_relative = relative;
        }
        fprintf(stderr,
                "[----] rng_cuda: normal(%g, %g) f64, %d elements, GPU - CPU in ulp: 0: %ld, 1: %ld, 2: %ld, 3: %ld, "
                "4: %ld, >4: %ld; max relative %.3g\n",
                rows[row].mean, rows[row].std, GPU_N, histogram[0], histogram[1], histogram[2], histogram[3],
                histogram[4], histogram[5], worst_relative);
        cr_expect_leq(worst_ulp, 4, "normal(%g, %g): worst difference %llu ulp", rows[row].mean, rows[row].std,
                      (unsigned long long)worst_ulp);
        cr_expect_leq(worst_relative, 1e-15, "normal(%g, %g): worst relative difference %.3g", rows[row].mean,
                      rows[row].std, worst_relative);
        parity_tensor_release(&gpu);
        parity_tensor_release(&cpu);
    }
}

Test(rng_cuda, normal_fill_bf16_bitwise_equal_for_almost_all_elements) {
    parity_test_require_gpu();
    static const struct {
        double mean, std;
    } rows[] = {{0, 1}, {0, 0.02}};
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_tensor cpu, gpu;
        fill_both(PARITY_BF16, PARITY_RNG_NORMAL, rows[row].mean, rows[row].std, &cpu, &gpu);
        long equal = 0, beyond_one_step = 0;
        for (int64_t i = 0; i < GPU_N; i++) {
            uint16_t c = ((uint16_t *)cpu.data)[i], g = ((uint16_t *)gpu.data)[i];
            equal += c == g;
            // A difference can only come from an f64 value within a few ulp of a bf16 tie: one bf16 step.
            if (c != g && (((c ^ g) & 0x8000u) || abs((int)(c & 0x7fffu) - (int)(g & 0x7fffu)) > 1)) beyond_one_step++;
        }
        fprintf(stderr, "[----] rng_cuda: normal(%g, %g) bf16: %ld of %d elements bitwise equal CPU vs GPU\n",
                rows[row].mean, rows[row].std, equal, GPU_N);
        cr_expect_geq((double)equal, 0.9999 * GPU_N, "normal(%g, %g) bf16: only %ld of %d bitwise equal", rows[row].mean,
                      rows[row].std, equal, GPU_N);
        cr_expect_eq(beyond_one_step, 0, "normal(%g, %g) bf16: %ld elements differ by more than one bf16 step",
                     rows[row].mean, rows[row].std, beyond_one_step);
        parity_tensor_release(&gpu);
        parity_tensor_release(&cpu);
    }
}

// ---- ulp nudge (rounding-level noise for the tolerance's jitter spread) ----------------------------

// Magnitude bits of element i (sign cleared) and its sign bit.
static uint64_t magnitude_bits(const parity_tensor *t, int64_t i) {
    size_t size = parity_dtype_size(t->dtype);
    return stored_bits(t, i) & ((UINT64_C(1) << (8 * size - 1)) - 1);
}
static uint64_t sign_bit(const parity_tensor *t, int64_t i) {
    size_t size = parity_dtype_size(t->dtype);
    return stored_bits(t, i) >> (8 * size - 1);
}

// Fills a tensor of N elements with normal values, zeros at every 97th element, and nudges a copy.
static void nudged_pair(parity_dtype dtype, parity_device device, int64_t count, parity_tensor *before, parity_tensor *after) {
    parity_tensor on_device;
    assert_ok(parity_tensor_alloc(before, dtype, PARITY_CPU, PARITY_SHAPE(count)), "alloc");
    assert_ok(parity_rng_fill(NULL, before, parity_rng_stream_named(5, "nudge input"), PARITY_RNG_NORMAL, 0, 0.02),
              "fill");
    for (int64_t i = 0; i < count; i += 97) parity_tensor_set(before, i, 0.0);
    assert_ok(parity_tensor_to(&on_device, before, device, dtype), "to device");
    assert_ok(parity_rng_nudge_ulps(parity_test_exec(device), &on_device,
                                    parity_rng_stream_named(1, "parity.jitter.embedding")),
              "nudge");
    assert_ok(parity_tensor_to(after, &on_device, PARITY_CPU, dtype), "back to the host");
    parity_tensor_release(&on_device);
}

Test(rng, ulp_nudge_moves_a_quarter_up_a_quarter_down_by_one_unit) {
    enum { N = 1 << 16 };
    static const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16};
    for (size_t d = 0; d < ROWS(dtypes); d++) {
        parity_tensor before, after;
        nudged_pair(dtypes[d], PARITY_CPU, N, &before, &after);
        long up = 0, down = 0, other = 0, sign_changed = 0;
        for (int64_t i = 0; i < N; i++) {
            uint64_t old = magnitude_bits(&before, i), new_ = magnitude_bits(&after, i);
            if (new_ == old + 1) up++;
            else if (new_ + 1 == old) down++;
            else if (new_ != old) other++;
            sign_changed += sign_bit(&before, i) != sign_bit(&after, i);
        }
        cr_expect_eq(other, 0, "%s: %ld elements moved by more than one unit", parity_dtype_name(dtypes[d]), other);
        cr_expect_eq(sign_changed, 0, "%s: %ld elements changed sign", parity_dtype_name(dtypes[d]), sign_changed);
        cr_expect(up > N / 4 - N / 50 && up < N / 4 + N / 50, "%s: %ld of %d moved away from zero, expected ~1/4",
                  parity_dtype_name(dtypes[d]), up, N);
        cr_expect(down > N / 4 - N / 50 && down < N / 4 + N / 50, "%s: %ld of %d moved toward zero, expected ~1/4",
                  parity_dtype_name(dtypes[d]), down, N);
        parity_tensor_release(&after);
        parity_tensor_release(&before);
    }
    parity_tensor integers;
    assert_ok(parity_tensor_alloc(&integers, PARITY_I64, PARITY_CPU, PARITY_SHAPE(4)), "alloc");
    parity_error *error = parity_rng_nudge_ulps(NULL, &integers, parity_rng_stream_named(1, "x"));
    cr_expect(error && parity_error_kind_of(error) == PARITY_ERROR_USAGE, "an integer tensor is refused");
    parity_error_free(error);
    parity_tensor_release(&integers);
}

Test(rng_cuda, ulp_nudge_is_bitwise_equal_on_cpu_and_gpu) {
    parity_test_require_gpu();
    static const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16};
    for (size_t d = 0; d < ROWS(dtypes); d++) {
        parity_tensor cpu_before, cpu_after, gpu_before, gpu_after;
        nudged_pair(dtypes[d], PARITY_CPU, GPU_N, &cpu_before, &cpu_after);
        nudged_pair(dtypes[d], PARITY_CUDA(0), GPU_N, &gpu_before, &gpu_after);
        long differ = 0;
        for (int64_t i = 0; i < GPU_N; i++) differ += stored_bits(&cpu_after, i) != stored_bits(&gpu_after, i);
        cr_expect_eq(differ, 0, "%s: %ld of %d nudged elements differ between CPU and GPU", parity_dtype_name(dtypes[d]),
                     differ, GPU_N);
        parity_tensor_release(&cpu_before);
        parity_tensor_release(&cpu_after);
        parity_tensor_release(&gpu_before);
        parity_tensor_release(&gpu_after);
    }
}
