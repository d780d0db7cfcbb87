// test_tensor.c: tensors are the currency of every op, golden and report, so their contract is
// pinned here: shapes, strides and descriptions; rejection of invalid shapes with a message a person
// can act on; reshape and transpose views; strided copies; dtype conversion that rounds exactly once;
// per-device memory accounting (the "peak memory" column); NaN/Inf detection that names the tensor
// and the element; and bit-exact host <-> device round trips (GPU tests skip visibly without a GPU).
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/device.h"
#include "ops/core/memory.h"
#include "ops/core/tensor.h"
#include "suites/tests/gpu_skip.h"
#include "suites/tests/assert_ok.h"

#define ROWS(table) (sizeof(table) / sizeof((table)[0]))

// Asserts that `error` is set, of `kind`, and its formatted text contains every non-NULL needle.
static void expect_error(parity_error *error, parity_error_kind kind, const char *what, const char *needle1,
                         const char *needle2) {
    cr_assert_not_null(error, "%s: expected an error", what);
    char buffer[1024];
    parity_error_format(error, buffer, sizeof buffer);
    cr_expect_eq(parity_error_kind_of(error), kind, "%s: kind %s, message: %s", what,
                 parity_error_kind_name(parity_error_kind_of(error)), buffer);
    if (needle1) cr_expect(strstr(buffer, needle1) != NULL, "%s: \"%s\" lacks \"%s\"", what, buffer, needle1);
    if (needle2) cr_expect(strstr(buffer, needle2) != NULL, "%s: \"%s\" lacks \"%s\"", what, buffer, needle2);
    parity_error_free(error);
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_random_bytes(void *data, size_t bytes, uint64_t seed) {
    unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)splitmix64(&seed);
}

// ---- allocation, shape, strides, description --------------------------------------------------

typedef struct alloc_case {
    const char *what;
    parity_dtype dtype;
    int ndim;
    int64_t shape[PARITY_MAX_DIMS];
    int64_t numel;
    int64_t strides[PARITY_MAX_DIMS];
    const char *describe;
} alloc_case;

static const alloc_case alloc_cases[] = {
    {"3-d f32", PARITY_F32, 3, {2, 3, 4}, 24, {12, 4, 1}, "(2, 3, 4) fp32 cpu"},
    {"scalar f64", PARITY_F64, 0, {0}, 1, {0}, "() fp64 cpu"},
    {"empty bf16", PARITY_BF16, 2, {0, 5}, 0, {5, 1}, "(0, 5) bf16 cpu"},
    {"vector i64", PARITY_I64, 1, {7}, 7, {1}, "(7) int64 cpu"},
    {"f16 with unit dims", PARITY_F16, 4, {1, 3, 1, 2}, 6, {6, 2, 2, 1}, "(1, 3, 1, 2) fp16 cpu"},
    {"8-d u8", PARITY_U8, 8, {1, 2, 1, 2, 1, 2, 1, 2}, 16, {16, 8, 8, 4, 4, 2, 2, 1}, "(1, 2, 1, 2, 1, 2, 1, 2) uint8 cpu"},
    {"i32 matrix", PARITY_I32, 2, {3, 5}, 15, {5, 1}, "(3, 5) int32 cpu"},
};

Test(tensor, alloc_and_zeros_shape_strides_numel_describe) {
    for (size_t row = 0; row < ROWS(alloc_cases); row++) {
        const alloc_case *c = &alloc_cases[row];
        for (int zeroed = 0; zeroed < 2; zeroed++) {
            parity_tensor t;
            assert_ok(zeroed ? parity_tensor_zeros(&t, c->dtype, PARITY_CPU, c->ndim, c->shape)
                             : parity_tensor_alloc(&t, c->dtype, PARITY_CPU, c->ndim, c->shape),
                      c->what);
            cr_expect_eq(t.ndim, c->ndim, "%s: ndim", c->what);
            cr_expect_eq(t.numel, c->numel, "%s: numel %lld", c->what, (long long)t.numel);
            cr_expect_eq(t.dtype, c->dtype, "%s: dtype", c->what);
            cr_expect(parity_device_equal(t.device, PARITY_CPU), "%s: device", c->what);
            for (int d = 0; d < c->ndim; d++) {
                cr_expect_eq(t.shape[d], c->shape[d], "%s: shape[%d]", c->what, d);
                cr_expect_eq(t.strides[d], c->strides[d], "%s: strides[%d] = %lld", c->what, d, (long long)t.strides[d]);
            }
            cr_expect(parity_tensor_is_contiguous(&t), "%s: not contiguous", c->what);
            cr_expect(t.owns_data, "%s: an allocated tensor owns its data", c->what);
            cr_expect_not_null(t.data, "%s: data", c->what);
            cr_expect_eq(parity_tensor_nbytes(&t), (size_t)c->numel * parity_dtype_size(c->dtype), "%s: nbytes", c->what);
            cr_expect_eq(t.allocated_bytes, parity_tensor_nbytes(&t), "%s: allocated_bytes", c->what);
            cr_expect_eq((uintptr_t)t.data % 64, 0, "%s: CPU data is not 64-byte aligned", c->what);
            char buffer[160];
            cr_expect_str_eq(parity_tensor_describe(&t, buffer, sizeof buffer), c->describe, "%s", c->what);
            if (zeroed) {
                const unsigned char *bytes = t.data;
                size_t nonzero = 0;
                for (size_t i = 0; i < parity_tensor_nbytes(&t); i++) nonzero += bytes[i] != 0;
                cr_expect_eq(nonzero, 0, "%s: zeros left %zu nonzero bytes", c->what, nonzero);
            } else if (t.numel > 0) {
                fill_random_bytes(t.data, parity_tensor_nbytes(&t), row); // dirty the heap for the zeros pass
            }
            parity_tensor_release(&t);
            cr_expect_null(t.data, "%s: release leaves data", c->what);
            cr_expect_eq(t.owns_data, false, "%s: release leaves owns_data", c->what);
            parity_tensor_release(&t); // a second release is harmless
        }
    }
}

Test(tensor, shape_macro_and_wrap) {
    parity_tensor t;
    assert_ok(parity_tensor_alloc(&t, PARITY_BF16, PARITY_CPU, PARITY_SHAPE(2, 40, 64)), "alloc");
    char buffer[160];
    cr_expect_str_eq(parity_tensor_describe(&t, buffer, sizeof buffer), "(2, 40, 64) bf16 cpu");
    cr_expect_str_eq(parity_tensor_shape_string(&t, buffer, sizeof buffer), "(2, 40, 64)");

    parity_tensor view = parity_tensor_wrap(t.data, PARITY_BF16, PARITY_CPU, PARITY_SHAPE(80, 64));
    cr_expect_eq(view.data, t.data);
    cr_expect_eq(view.numel, t.numel);
    cr_expect_not(view.owns_data, "a wrapped view must not own its data");
    parity_tensor_release(&view); // must not free t's storage: ASan catches a double free below
    parity_tensor_release(&t);

    // An invalid shape gives an empty tensor, never a half-filled one.
    int64_t negative[] = {4, -1};
    parity_tensor bad = parity_tensor_wrap(buffer, PARITY_F32, PARITY_CPU, 2, negative);
    cr_expect_null(bad.data);
    cr_expect_eq(bad.ndim, 0);
}

typedef struct invalid_shape_case {
    const char *what;
    parity_dtype dtype;
    int ndim;
    int64_t shape[PARITY_MAX_DIMS + 1];
    parity_error_kind kind;
    const char *message;
} invalid_shape_case;

static const invalid_shape_case invalid_shapes[] = {
    {"negative size", PARITY_F32, 3, {2, -3, 4}, PARITY_ERROR_SHAPE, "negative size -3 in dimension 1"},
    {"negative leading size", PARITY_F64, 1, {-1}, PARITY_ERROR_SHAPE, "negative size -1 in dimension 0"},
    {"rank 9", PARITY_F32, 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}, PARITY_ERROR_SHAPE, "tensor rank 9 outside 0..8"},
    {"rank -1", PARITY_F32, -1, {1}, PARITY_ERROR_SHAPE, "tensor rank -1 outside 0..8"},
    {"element count overflows int64", PARITY_U8, 2, {INT64_C(1) << 40, INT64_C(1) << 40}, PARITY_ERROR_SHAPE,
     "overflows int64"},
    {"byte count overflows size_t", PARITY_F64, 1, {INT64_C(1) << 61}, PARITY_ERROR_SHAPE, "is too large"},
    {"unknown dtype", (parity_dtype)42, 1, {4}, PARITY_ERROR_USAGE, "unknown dtype 42"},
};

Test(tensor, invalid_shapes_are_rejected_with_a_message) {
    parity_memory_stats before = parity_memory_get_stats(PARITY_CPU);
    for (size_t row = 0; row < ROWS(invalid_shapes); row++) {
        const invalid_shape_case *c = &invalid_shapes[row];
        for (int zeroed = 0; zeroed < 2; zeroed++) {
            parity_tensor t;
            memset(&t, 0xab, sizeof t);
            parity_error *error = zeroed ? parity_tensor_zeros(&t, c->dtype, PARITY_CPU, c->ndim, c->shape)
                                         : parity_tensor_alloc(&t, c->dtype, PARITY_CPU, c->ndim, c->shape);
            expect_error(error, c->kind, c->what, c->message, NULL);
            cr_expect_null(t.data, "%s: a failed alloc leaves data set", c->what);
            cr_expect_not(t.owns_data, "%s: a failed alloc leaves owns_data set", c->what);
            parity_tensor_release(&t); // safe after failure
        }
    }
    parity_memory_stats after = parity_memory_get_stats(PARITY_CPU);
    cr_expect_eq(after.current_bytes, before.current_bytes, "failed allocations changed the byte count");
    cr_expect_eq(after.allocation_count, before.allocation_count, "failed allocations changed the count");
}

// Allocation on a CUDA device index that does not exist here (cuda:0 without a GPU, cuda:N with N GPUs)
// fails with an error and accounts nothing.
Test(tensor, alloc_on_an_absent_cuda_device_fails) {
    int count = parity_cuda_device_count(NULL, 0);
    parity_device absent = PARITY_CUDA(count);
    parity_memory_stats before = parity_memory_get_stats(absent);
    parity_tensor t;
    parity_error *error = parity_tensor_alloc(&t, PARITY_F32, absent, PARITY_SHAPE(16));
    cr_assert_not_null(error, "allocation on cuda:%d succeeded with %d device(s)", count, count);
    cr_expect_gt(strlen(parity_error_message(error)), 0, "the error says nothing");
    parity_error_free(error);
    cr_expect_null(t.data);
    cr_expect_eq(parity_memory_get_stats(absent).current_bytes, before.current_bytes);
    cr_expect_eq(parity_memory_get_stats(absent).allocation_count, before.allocation_count);
}

// ---- reshape ------------------------------------------------------------------------------------

typedef struct reshape_case {
    const char *what;
    int ndim;
    int64_t shape[PARITY_MAX_DIMS + 1];
    bool transposed_source;   // reshape a non-contiguous view instead
    int64_t strides[PARITY_MAX_DIMS]; // when it succeeds
    const char *message1;     // when it fails: substrings of the message
    const char *message2;
} reshape_case;

// The source of every row is a contiguous (2, 3, 4) f32 tensor.
static const reshape_case reshape_cases[] = {
    {"(2,3,4) -> (6,4)", 2, {6, 4}, false, {4, 1}, NULL, NULL},
    {"(2,3,4) -> (24)", 1, {24}, false, {1}, NULL, NULL},
    {"(2,3,4) -> (2,12)", 2, {2, 12}, false, {12, 1}, NULL, NULL},
    {"(2,3,4) -> (1,2,1,12)", 4, {1, 2, 1, 12}, false, {24, 12, 12, 1}, NULL, NULL},
    {"(2,3,4) -> (5,5) mismatch", 2, {5, 5}, false, {0}, "(2, 3, 4) (24 elements)", "(5, 5) (25 elements)"},
    {"(2,3,4) -> (25) mismatch", 1, {25}, false, {0}, "cannot reshape (2, 3, 4)", "to (25)"},
    {"(2,3,4) -> (2,-3,-4)", 3, {2, -3, -4}, false, {0}, "negative size", NULL},
    {"(2,3,4) -> rank 9", 9, {1, 1, 1, 1, 1, 1, 2, 3, 4}, false, {0}, "rank 9", NULL},
    {"transposed (4,3,2) -> (24)", 1, {24}, true, {0}, "reshape needs a contiguous tensor", NULL},
};

Test(tensor, reshape_views_and_mismatch_messages) {
    parity_tensor source;
    assert_ok(parity_tensor_alloc(&source, PARITY_F32, PARITY_CPU, PARITY_SHAPE(2, 3, 4)), "alloc");
    for (int64_t i = 0; i < source.numel; i++) parity_tensor_set(&source, i, (double)i);
    parity_tensor transposed;
    assert_ok(parity_tensor_transpose(&transposed, &source, 0, 2), "transpose");
    for (size_t row = 0; row < ROWS(reshape_cases); row++) {
        const reshape_case *c = &reshape_cases[row];
        parity_tensor view;
        parity_error *error = parity_tensor_reshape(&view, c->transposed_source ? &transposed : &source, c->ndim, c->shape);
        if (c->message1) {
            expect_error(error, PARITY_ERROR_SHAPE, c->what, c->message1, c->message2);
            continue;
        }
        assert_ok(error, c->what);
        cr_expect_eq(view.data, source.data, "%s: a reshape is a view", c->what);
        cr_expect_not(view.owns_data, "%s: a view must not own data", c->what);
        cr_expect_eq(view.numel, source.numel, "%s", c->what);
        for (int d = 0; d < c->ndim; d++)
            cr_expect_eq(view.strides[d], c->strides[d], "%s: strides[%d] = %lld", c->what, d, (long long)view.strides[d]);
        for (int64_t i = 0; i < view.numel; i++)
            cr_expect_eq(parity_tensor_get(&view, i), (double)i, "%s: element %lld", c->what, (long long)i);
    }
    parity_tensor_release(&source);
}

// ---- transpose, strided copy, conversion of strided views ---------------------------------------

typedef struct transpose_case {
    const char *what;
    int ndim;
    int64_t shape[PARITY_MAX_DIMS];
    int dim_a, dim_b;
    bool contiguous_after; // swapping around unit dimensions keeps the layout contiguous
} transpose_case;

static const transpose_case transpose_cases[] = {
    {"(2,3) 0<->1", 2, {2, 3}, 0, 1, false},
    {"(2,3,4) 0<->2", 3, {2, 3, 4}, 0, 2, false},
    {"(2,3,4) 1<->2", 3, {2, 3, 4}, 1, 2, false},
    {"(2,3,4) 2<->1 (argument order)", 3, {2, 3, 4}, 2, 1, false},
    {"(4,1,3) 0<->1", 3, {4, 1, 3}, 0, 1, true},
    {"(5) 0<->0", 1, {5}, 0, 0, true},
    {"(2,2,3,2) 1<->3", 4, {2, 2, 3, 2}, 1, 3, false},
};

// The flat index in the (contiguous) source of element `flat` of the transposed view.
static int64_t source_index_of(const transpose_case *c, int64_t flat) {
    int64_t view_shape[PARITY_MAX_DIMS], coordinate[PARITY_MAX_DIMS];
    for (int d = 0; d < c->ndim; d++) view_shape[d] = c->shape[d];
    view_shape[c->dim_a] = c->shape[c->dim_b];
    view_shape[c->dim_b] = c->shape[c->dim_a];
    for (int d = c->ndim - 1; d >= 0; d--) {
        coordinate[d] = flat % view_shape[d];
        flat /= view_shape[d];
    }
    int64_t swap = coordinate[c->dim_a];
    coordinate[c->dim_a] = coordinate[c->dim_b];
    coordinate[c->dim_b] = swap;
    int64_t index = 0;
    for (int d = 0; d < c->ndim; d++) index = index * c->shape[d] + coordinate[d];
    return index;
}

Test(tensor, transpose_view_and_copies_honor_strides) {
    for (size_t row = 0; row < ROWS(transpose_cases); row++) {
        const transpose_case *c = &transpose_cases[row];
        parity_tensor source, view, copy, converted;
        assert_ok(parity_tensor_alloc(&source, PARITY_F64, PARITY_CPU, c->ndim, c->shape), c->what);
        for (int64_t i = 0; i < source.numel; i++) ((double *)source.data)[i] = (double)i;
        assert_ok(parity_tensor_transpose(&view, &source, c->dim_a, c->dim_b), c->what);
        cr_expect_eq(view.data, source.data, "%s: transpose is a view", c->what);
        cr_expect_not(view.owns_data, "%s", c->what);
        cr_expect_eq(view.shape[c->dim_a], c->shape[c->dim_b], "%s: shape", c->what);
        cr_expect_eq(view.strides[c->dim_a], source.strides[c->dim_b], "%s: strides", c->what);
        cr_expect_eq(parity_tensor_is_contiguous(&view), c->contiguous_after, "%s: contiguity", c->what);

        assert_ok(parity_tensor_alloc(&copy, PARITY_F64, PARITY_CPU, view.ndim, view.shape), c->what);
        assert_ok(parity_tensor_copy(&copy, &view), c->what);
        assert_ok(parity_tensor_to(&converted, &view, PARITY_CPU, PARITY_F32), c->what);
        cr_expect(parity_tensor_is_contiguous(&converted), "%s: parity_tensor_to gives a contiguous result", c->what);
        long wrong_get = 0, wrong_copy = 0, wrong_converted = 0;
        for (int64_t i = 0; i < view.numel; i++) {
            double expected = (double)source_index_of(c, i);
            wrong_get += parity_tensor_get(&view, i) != expected;
            wrong_copy += ((double *)copy.data)[i] != expected;
            wrong_converted += ((float *)converted.data)[i] != (float)expected;
        }
        cr_expect_eq(wrong_get, 0, "%s: %ld elements read wrongly through the view", c->what, wrong_get);
        cr_expect_eq(wrong_copy, 0, "%s: %ld elements copied wrongly", c->what, wrong_copy);
        cr_expect_eq(wrong_converted, 0, "%s: %ld elements converted wrongly", c->what, wrong_converted);

        // Copying back through the view (strided destination) restores the source layout.
        parity_tensor scratch, scratch_view;
        assert_ok(parity_tensor_zeros(&scratch, PARITY_F64, PARITY_CPU, c->ndim, c->shape), c->what);
        assert_ok(parity_tensor_transpose(&scratch_view, &scratch, c->dim_a, c->dim_b), c->what);
        assert_ok(parity_tensor_copy(&scratch_view, &copy), c->what);
        cr_expect_eq(memcmp(scratch.data, source.data, parity_tensor_nbytes(&source)), 0,
                     "%s: strided destination copy", c->what);
        parity_tensor_release(&scratch);
        parity_tensor_release(&converted);
        parity_tensor_release(&copy);
        parity_tensor_release(&source);
    }
}

Test(tensor, transpose_and_copy_errors) {
    parity_tensor a, b, view;
    assert_ok(parity_tensor_alloc(&a, PARITY_F32, PARITY_CPU, PARITY_SHAPE(2, 3)), "alloc");
    expect_error(parity_tensor_transpose(&view, &a, 0, 2), PARITY_ERROR_SHAPE, "transpose out of range",
                 "transpose(0, 2) of a rank-2 tensor", NULL);
    expect_error(parity_tensor_transpose(&view, &a, -1, 0), PARITY_ERROR_SHAPE, "negative dim", "rank-2", NULL);

    static const struct {
        const char *what;
        parity_dtype dtype;
        int ndim;
        int64_t shape[2];
        const char *needle;
    } rows[] = {
        {"dtype differs", PARITY_F64, 2, {2, 3}, "(2, 3) fp32 cpu"},
        {"shape differs", PARITY_F32, 2, {3, 2}, "(3, 2) fp32 cpu"},
        {"rank differs", PARITY_F32, 1, {6}, "(6) fp32 cpu"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        assert_ok(parity_tensor_alloc(&b, rows[row].dtype, PARITY_CPU, rows[row].ndim, rows[row].shape), rows[row].what);
        expect_error(parity_tensor_copy(&b, &a), PARITY_ERROR_SHAPE, rows[row].what, rows[row].needle,
                     "dtype and shape must match");
        parity_tensor_release(&b);
    }
    parity_tensor_release(&a);
}

// ---- dtype conversion rounds exactly once -------------------------------------------------------

static const parity_dtype float_dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16};

// Inputs chosen to sit on or near rounding boundaries of the narrower formats.
static const double conversion_inputs[] = {
    0.0, -0.0, 1.0, -2.5, 3.141592653589793,
    0x1.01p0,          // bf16 tie
    0x1.01000004p0,    // bf16 double-rounding trap through f32
    0x1.002p0,         // f16 tie
    0x1.0020000001p0,  // f16 double-rounding trap through f32
    65504.0, 65519.0, 65520.0, 3.4e38, 1e300, -1e300,
    1e-40,             // f32 subnormal
    0x1p-134, 0x1p-133, 0x1p-24, 0x1p-25, 0x1.fep-127,
    INFINITY, -INFINITY,
};

// The bits of `value` rounded once to `dtype`, as the scalar conversions (checked in test_dtype.c) give.
static void expected_bits(parity_dtype dtype, double value, void *out) {
    switch (dtype) {
    case PARITY_F64: memcpy(out, &value, 8); break;
    case PARITY_F32: { float f = (float)value; memcpy(out, &f, 4); break; }
    case PARITY_BF16: { uint16_t h = parity_f64_to_bf16(value); memcpy(out, &h, 2); break; }
    case PARITY_F16: { uint16_t h = parity_f64_to_f16(value); memcpy(out, &h, 2); break; }
    default: cr_assert_fail("not a float dtype");
    }
}

Test(tensor, to_converts_between_float_dtypes_with_one_rounding) {
    enum { N = sizeof conversion_inputs / sizeof conversion_inputs[0] };
    for (size_t from = 0; from < ROWS(float_dtypes); from++) {
        for (size_t to = 0; to < ROWS(float_dtypes); to++) {
            parity_dtype source_dtype = float_dtypes[from], target_dtype = float_dtypes[to];
            parity_tensor source, out;
            assert_ok(parity_tensor_alloc(&source, source_dtype, PARITY_CPU, PARITY_SHAPE(N)), "alloc");
            for (int64_t i = 0; i < N; i++) parity_tensor_set(&source, i, conversion_inputs[i]);
            assert_ok(parity_tensor_to(&out, &source, PARITY_CPU, target_dtype), "to");
            cr_expect_eq(out.dtype, target_dtype);
            size_t size = parity_dtype_size(target_dtype);
            for (int64_t i = 0; i < N; i++) {
                unsigned char expected[8];
                expected_bits(target_dtype, parity_tensor_get(&source, i), expected);
                cr_expect_eq(memcmp((char *)out.data + i * (int64_t)size, expected, size), 0,
                             "%s -> %s of %a (stored as %a): got %a", parity_dtype_name(source_dtype),
                             parity_dtype_name(target_dtype), conversion_inputs[i], parity_tensor_get(&source, i),
                             parity_tensor_get(&out, i));
            }
            parity_tensor_release(&out);
            parity_tensor_release(&source);
        }
    }
}

// Known answers through parity_tensor_to: f64 -> bf16/f16 must not round twice through f32.
Test(tensor, to_known_answers) {
    static const struct {
        const char *what;
        parity_dtype from, to;
        double input;
        uint64_t expected_bits;
    } rows[] = {
        {"f64 -> bf16, 1 + 2^-8 + 2^-30", PARITY_F64, PARITY_BF16, 0x1.01000004p0, 0x3f81},
        {"f64 -> bf16, tie 1 + 2^-8", PARITY_F64, PARITY_BF16, 0x1.01p0, 0x3f80},
        {"f64 -> f16, 1 + 2^-11 + 2^-40", PARITY_F64, PARITY_F16, 0x1.0020000001p0, 0x3c01},
        {"f64 -> f16, 65520", PARITY_F64, PARITY_F16, 65520.0, 0x7c00},
        {"f32 -> f16, 65519", PARITY_F32, PARITY_F16, 65519.0, 0x7bff},
        {"f32 -> bf16, FLT_MAX", PARITY_F32, PARITY_BF16, 0x1.fffffep127, 0x7f80},
        {"f64 -> f32, 1 + 2^-24 (tie)", PARITY_F64, PARITY_F32, 0x1.000001p0, 0x3f800000},
        {"bf16 -> f16, 2^-24 * 1.5 (tie)", PARITY_BF16, PARITY_F16, 0x1.8p-24, 0x0002},
        {"f16 -> bf16, tie 1 + 2^-8 -> 1", PARITY_F16, PARITY_BF16, 0x1.01p0, 0x3f80},
        {"f16 -> bf16, tie 1 + 3*2^-8 -> 1 + 2^-6", PARITY_F16, PARITY_BF16, 0x1.03p0, 0x3f82},
        {"int64 -> f64, 2^53 + 1 (tie)", PARITY_I64, PARITY_F64, 9007199254740993.0, 0x4340000000000000ull},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_tensor source, out;
        assert_ok(parity_tensor_alloc(&source, rows[row].from, PARITY_CPU, PARITY_SHAPE(1)), rows[row].what);
        if (rows[row].from == PARITY_I64) ((int64_t *)source.data)[0] = INT64_C(9007199254740993);
        else parity_tensor_set(&source, 0, rows[row].input);
        assert_ok(parity_tensor_to(&out, &source, PARITY_CPU, rows[row].to), rows[row].what);
        uint64_t got = 0;
        memcpy(&got, out.data, parity_dtype_size(rows[row].to));
        cr_expect_eq(got, rows[row].expected_bits, "%s: got 0x%llx, expected 0x%llx", rows[row].what,
                     (unsigned long long)got, (unsigned long long)rows[row].expected_bits);
        parity_tensor_release(&out);
        parity_tensor_release(&source);
    }
}

Test(tensor, to_between_integer_and_float_dtypes) {
    static const struct {
        const char *what;
        parity_dtype from, to;
        bool ok;
    } rows[] = {
        {"int64 -> fp32", PARITY_I64, PARITY_F32, true},   {"int32 -> int64", PARITY_I32, PARITY_I64, true},
        {"int64 -> int32", PARITY_I64, PARITY_I32, true},  {"uint8 -> bf16", PARITY_U8, PARITY_BF16, true},
        {"fp32 -> int64", PARITY_F32, PARITY_I64, false},  {"bf16 -> int32", PARITY_BF16, PARITY_I32, false},
        {"fp64 -> uint8", PARITY_F64, PARITY_U8, false},
    };
    static const double values[] = {0, 1, 7, 100, 255};
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_tensor source, out;
        assert_ok(parity_tensor_alloc(&source, rows[row].from, PARITY_CPU, PARITY_SHAPE(5)), rows[row].what);
        for (int64_t i = 0; i < 5; i++) parity_tensor_set(&source, i, values[i]);
        parity_error *error = parity_tensor_to(&out, &source, PARITY_CPU, rows[row].to);
        if (rows[row].ok) {
            assert_ok(error, rows[row].what);
            for (int64_t i = 0; i < 5; i++)
                cr_expect_eq(parity_tensor_get(&out, i), values[i], "%s element %lld", rows[row].what, (long long)i);
            parity_tensor_release(&out);
        } else {
            expect_error(error, PARITY_ERROR_USAGE, rows[row].what, "would truncate", parity_dtype_name(rows[row].from));
            cr_expect_null(out.data, "%s: failed conversion leaves data", rows[row].what);
        }
        parity_tensor_release(&source);
    }
}

// ---- memory accounting --------------------------------------------------------------------------

typedef enum { STEP_ALLOC, STEP_RELEASE, STEP_RESET_PEAK } step_kind;

typedef struct memory_step {
    step_kind kind;
    int slot;
    parity_dtype dtype;
    int64_t elements;
    size_t current, peak, count; // expected, relative to the start
} memory_step;

static const memory_step memory_steps[] = {
    {STEP_ALLOC, 0, PARITY_F32, 250, 1000, 1000, 1},
    {STEP_ALLOC, 1, PARITY_F64, 500, 5000, 5000, 2},
    {STEP_RELEASE, 1, 0, 0, 1000, 5000, 1},
    {STEP_ALLOC, 2, PARITY_BF16, 100, 1200, 5000, 2},
    {STEP_RESET_PEAK, 0, 0, 0, 1200, 1200, 2},
    {STEP_ALLOC, 3, PARITY_U8, 7, 1207, 1207, 3},
    {STEP_RELEASE, 0, 0, 0, 207, 1207, 2},
    {STEP_RELEASE, 0, 0, 0, 207, 1207, 2}, // releasing twice changes nothing
    {STEP_ALLOC, 4, PARITY_F16, 0, 207, 1207, 3}, // an empty tensor is a live allocation of 0 bytes
    {STEP_RELEASE, 2, 0, 0, 7, 1207, 2},
    {STEP_RELEASE, 3, 0, 0, 0, 1207, 1},
    {STEP_RELEASE, 4, 0, 0, 0, 1207, 0},
    {STEP_RESET_PEAK, 0, 0, 0, 0, 0, 0},
};

Test(tensor, memory_accounting_rises_and_falls) {
    parity_memory_reset_peak(PARITY_CPU);
    parity_memory_stats base = parity_memory_get_stats(PARITY_CPU);
    cr_assert_eq(base.peak_bytes, base.current_bytes, "reset_peak must set peak to current");
    parity_tensor slots[5];
    memset(slots, 0, sizeof slots);
    for (size_t row = 0; row < ROWS(memory_steps); row++) {
        const memory_step *s = &memory_steps[row];
        switch (s->kind) {
        case STEP_ALLOC:
            assert_ok(parity_tensor_alloc(&slots[s->slot], s->dtype, PARITY_CPU, PARITY_SHAPE(s->elements)), "alloc");
            break;
        case STEP_RELEASE: parity_tensor_release(&slots[s->slot]); break;
        case STEP_RESET_PEAK: parity_memory_reset_peak(PARITY_CPU); break;
        }
        parity_memory_stats now = parity_memory_get_stats(PARITY_CPU);
        cr_expect_eq(now.current_bytes - base.current_bytes, s->current, "step %zu: current +%zu, expected +%zu", row,
                     now.current_bytes - base.current_bytes, s->current);
        cr_expect_eq(now.peak_bytes - base.current_bytes, s->peak, "step %zu: peak +%zu, expected +%zu", row,
                     now.peak_bytes - base.current_bytes, s->peak);
        cr_expect_eq(now.allocation_count - base.allocation_count, s->count, "step %zu: live allocations", row);
    }
    // Views are free: they never touch the counters.
    parity_tensor owner, view;
    assert_ok(parity_tensor_alloc(&owner, PARITY_F32, PARITY_CPU, PARITY_SHAPE(4, 4)), "alloc");
    parity_memory_stats with_owner = parity_memory_get_stats(PARITY_CPU);
    assert_ok(parity_tensor_transpose(&view, &owner, 0, 1), "transpose");
    parity_tensor_release(&view);
    cr_expect_eq(parity_memory_get_stats(PARITY_CPU).current_bytes, with_owner.current_bytes, "releasing a view freed");
    parity_tensor_release(&owner);
    cr_expect_eq(parity_memory_get_stats(PARITY_CPU).current_bytes, base.current_bytes);
}

// ---- NaN / Inf detection ------------------------------------------------------------------------

typedef struct finite_case {
    const char *what;
    parity_dtype dtype;
    int ndim;
    int64_t shape[3];
    int poison_count;
    int64_t poison_index[2]; // storage (= logical for contiguous) indices, in the order written
    double poison_value[2];
    bool check_transposed;   // check a transpose(0, 1) view of the tensor instead
    const char *found;       // NULL: all finite; else "NaN" or "Inf"
    const char *index_text;  // "flat index N" of the first bad element in the checked tensor's order
} finite_case;

static const finite_case finite_cases[] = {
    {"f32 NaN", PARITY_F32, 2, {2, 4}, 1, {5}, {NAN}, false, "NaN", "flat index 5"},
    {"f64 +Inf first element", PARITY_F64, 1, {7}, 1, {0}, {INFINITY}, false, "+Inf", "flat index 0"},
    {"bf16 -Inf last element", PARITY_BF16, 2, {3, 3}, 1, {8}, {-INFINITY}, false, "-Inf", "flat index 8"},
    {"f16 NaN", PARITY_F16, 1, {4}, 1, {3}, {NAN}, false, "NaN", "flat index 3"},
    {"f16 overflow 1e5 stored as Inf", PARITY_F16, 1, {4}, 1, {1}, {1e5}, false, "+Inf", "flat index 1"},
    {"first of two: Inf at 2 before NaN at 6", PARITY_F32, 2, {2, 4}, 2, {6, 2}, {NAN, INFINITY}, false, "+Inf",
     "flat index 2"},
    {"all finite, extremes", PARITY_F64, 1, {5}, 2, {0, 4}, {1.7e308, -4.9e-324}, false, NULL, NULL},
    {"transposed view reports the logical index", PARITY_F64, 2, {2, 3}, 1, {1}, {NAN}, true, "NaN", "flat index 2"},
    {"integer tensors are always finite", PARITY_I64, 1, {3}, 0, {0}, {0}, false, NULL, NULL},
};

Test(tensor, check_finite_names_tensor_and_first_bad_index) {
    const char *name = "model.layers.3.self_attn.q_proj.weight.grad";
    for (size_t row = 0; row < ROWS(finite_cases); row++) {
        const finite_case *c = &finite_cases[row];
        parity_tensor t, view;
        assert_ok(parity_tensor_alloc(&t, c->dtype, PARITY_CPU, c->ndim, c->shape), c->what);
        for (int64_t i = 0; i < t.numel; i++) parity_tensor_set(&t, i, 0.5 * (double)(i + 1));
        for (int p = 0; p < c->poison_count; p++) parity_tensor_set(&t, c->poison_index[p], c->poison_value[p]);
        const parity_tensor *checked = &t;
        if (c->check_transposed) {
            assert_ok(parity_tensor_transpose(&view, &t, 0, 1), c->what);
            checked = &view;
        }
        parity_error *error = parity_tensor_check_finite(checked, name);
        if (!c->found) {
            cr_expect_null(error, "%s: reported %s", c->what, error ? parity_error_message(error) : "");
            parity_error_free(error);
        } else {
            char shape[64], found[160];
            parity_tensor_shape_string(checked, shape, sizeof shape);
            snprintf(found, sizeof found, "%s has %s at %s", shape, c->found, c->index_text);
            cr_expect_not_null(error, "%s: not detected", c->what);
            if (error) {
                cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_NUMERIC, "%s", c->what);
                const char *message = parity_error_message(error);
                cr_expect(strstr(message, name) != NULL, "%s: \"%s\" does not name the tensor", c->what, message);
                cr_expect(strstr(message, found) != NULL, "%s: \"%s\" lacks \"%s\"", c->what, message, found);
                parity_error_free(error);
            }
        }
        parity_tensor_release(&t);
    }
}

// ---- CUDA ---------------------------------------------------------------------------------------

static const parity_dtype all_dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16,
                                          PARITY_I64, PARITY_I32, PARITY_U8};

Test(tensor_cuda, host_device_host_round_trip_is_bitwise_for_every_dtype) {
    parity_test_require_gpu();
    for (size_t row = 0; row < ROWS(all_dtypes); row++) {
        parity_dtype dtype = all_dtypes[row];
        parity_tensor host, device, back;
        assert_ok(parity_tensor_alloc(&host, dtype, PARITY_CPU, PARITY_SHAPE(3, 1001)), "host alloc");
        fill_random_bytes(host.data, parity_tensor_nbytes(&host), 1000 + row); // every bit pattern class, NaNs too
        parity_memory_stats before = parity_memory_get_stats(PARITY_CUDA(0));
        assert_ok(parity_tensor_to(&device, &host, PARITY_CUDA(0), dtype), "to cuda");
        cr_expect(parity_device_equal(device.device, PARITY_CUDA(0)));
        cr_expect_eq(parity_memory_get_stats(PARITY_CUDA(0)).current_bytes - before.current_bytes,
                     parity_tensor_nbytes(&host), "%s: cuda:0 accounting", parity_dtype_name(dtype));
        assert_ok(parity_tensor_to(&back, &device, PARITY_CPU, dtype), "to cpu");
        cr_expect_eq(memcmp(back.data, host.data, parity_tensor_nbytes(&host)), 0, "%s: round trip changed bits",
                     parity_dtype_name(dtype));
        parity_tensor_release(&device);
        cr_expect_eq(parity_memory_get_stats(PARITY_CUDA(0)).current_bytes, before.current_bytes,
                     "%s: cuda:0 bytes not returned", parity_dtype_name(dtype));
        parity_tensor_release(&back);
        parity_tensor_release(&host);
    }
}

Test(tensor_cuda, conversion_zeros_and_check_finite_on_device) {
    parity_test_require_gpu();
    enum { N = sizeof conversion_inputs / sizeof conversion_inputs[0] };
    for (size_t to = 0; to < ROWS(float_dtypes); to++) {
        parity_tensor host, device, back, expected;
        assert_ok(parity_tensor_alloc(&host, PARITY_F64, PARITY_CPU, PARITY_SHAPE(N)), "alloc");
        for (int64_t i = 0; i < N; i++) parity_tensor_set(&host, i, conversion_inputs[i]);
        assert_ok(parity_tensor_to(&device, &host, PARITY_CUDA(0), float_dtypes[to]), "f64 host -> cuda");
        assert_ok(parity_tensor_to(&back, &device, PARITY_CPU, float_dtypes[to]), "cuda -> host");
        assert_ok(parity_tensor_to(&expected, &host, PARITY_CPU, float_dtypes[to]), "host conversion");
        cr_expect_eq(memcmp(back.data, expected.data, parity_tensor_nbytes(&expected)), 0,
                     "f64 -> %s through the device differs from the host conversion", parity_dtype_name(float_dtypes[to]));
        // conversion_inputs contains +-Inf: the device tensor is checked through a host copy.
        parity_error *error = parity_tensor_check_finite(&device, "device_tensor");
        cr_expect_not_null(error, "%s: Inf on the device not detected", parity_dtype_name(float_dtypes[to]));
        if (error) cr_expect(strstr(parity_error_message(error), "device_tensor") != NULL);
        parity_error_free(error);
        parity_tensor_release(&expected);
        parity_tensor_release(&back);
        parity_tensor_release(&device);
        parity_tensor_release(&host);
    }
    parity_tensor zeros, back;
    assert_ok(parity_tensor_zeros(&zeros, PARITY_BF16, PARITY_CUDA(0), PARITY_SHAPE(4097)), "cuda zeros");
    assert_ok(parity_tensor_check_finite(&zeros, "zeros"), "check_finite of zeros");
    assert_ok(parity_tensor_to(&back, &zeros, PARITY_CPU, PARITY_F32), "zeros back");
    long nonzero = 0;
    for (int64_t i = 0; i < back.numel; i++) nonzero += ((float *)back.data)[i] != 0.0f;
    cr_expect_eq(nonzero, 0, "cuda zeros left %ld nonzero elements", nonzero);
    parity_tensor_release(&back);
    parity_tensor_release(&zeros);
}
