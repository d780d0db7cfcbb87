// test_sketch.c: the gradient sketch (ops/core/sketch.h, parity_tensor_sketch): K = 4 fixed random
// +-1 projections of a tensor, signs from the Philox stream of its name. Pinned here: a case to
// check by hand (the stream's words, their sign bits, the four sums); what makes it a direction
// metric (it is linear, a flipped sign flips it, E[s_j^2] = |x|^2); that the signs follow the name
// and the logical index, never the dtype or the layout; the rejections; and, on a GPU, that the
// CUDA reduction gives the CPU's sketch (the same signs, another order of summation: within f64
// rounding of the norm). Also the cosine of two sketches and how a step result carries them
// (models/step_result.h).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/step_result.h"
#include "ops/core/rng.h"
#include "ops/core/sketch.h"
#include "ops/core/tensor.h"
#include "suites/tests/assert_ok.h"
#include "suites/tests/exec_fixture.h"
#include "suites/tests/gpu_skip.h"

#define ROWS(table) (sizeof(table) / sizeof((table)[0]))

static void sketch_of(const parity_tensor *tensor, const char *name, double out[PARITY_SKETCH_K]) {
    assert_ok(parity_tensor_sketch(parity_test_exec(tensor->device), tensor, name, out), "sketch");
}

// x = [1, 2, 3, 4] named "sketch.test". Words 0..3 of the stream (PARITY_SKETCH_SEED, FNV-1a of the
// name) and their low 4 bits (bit j set: r_j(i) = -1):
//   i = 0  0x2ee89f2f  1111  r = (-, -, -, -)
//   i = 1  0xe4464933  0011  r = (-, -, +, +)
//   i = 2  0x43c119fd  1101  r = (-, +, -, -)
//   i = 3  0xccad539a  1010  r = (+, -, +, -)
// so s_0 = -1 - 2 - 3 + 4 = -2, s_1 = -1 - 2 + 3 - 4 = -4, s_2 = -1 + 2 - 3 + 4 = 2, s_3 = -1 + 2 - 3 - 4 = -6.
Test(sketch, a_case_checked_by_hand) {
    static const uint32_t words[] = {0x2ee89f2fu, 0xe4464933u, 0x43c119fdu, 0xccad539au};
    const uint64_t hash = parity_philox_hash_name("sketch.test");
    cr_expect_eq(hash, 0x9e9f8ecbde713a05ull, "FNV-1a of \"sketch.test\": 0x%016llx", (unsigned long long)hash);
    for (uint64_t i = 0; i < ROWS(words); i++) {
        cr_expect_eq(parity_philox_word(PARITY_SKETCH_SEED, hash, i), words[i], "word %llu", (unsigned long long)i);
        cr_expect_eq(parity_sketch_signs(hash, i), words[i] & 0xfu, "sign bits of element %llu", (unsigned long long)i);
    }
    parity_philox_block block = parity_sketch_sign_block(hash, 0); // the CPU loop's four-at-a-time words
    for (int k = 0; k < 4; k++) cr_expect_eq(block.word[k], words[k], "block word %d", k);
    for (uint64_t i = 0; i < 4099; i++)
        cr_expect_eq(parity_sketch_sign_block(hash, i >> 2).word[i & 3] & PARITY_SKETCH_SIGN_MASK, parity_sketch_signs(hash, i),
                     "element %llu", (unsigned long long)i);
    static const double expected[PARITY_SKETCH_K] = {-2, -4, 2, -6};
    static const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16};
    for (size_t row = 0; row < ROWS(dtypes); row++) { // 1..4 are exact in every float dtype: the same sketch
        parity_tensor x;
        assert_ok(parity_tensor_alloc(&x, dtypes[row], PARITY_CPU, PARITY_SHAPE(2, 2)), "alloc");
        for (int64_t i = 0; i < 4; i++) parity_tensor_set(&x, i, (double)(i + 1));
        double sketch[PARITY_SKETCH_K];
        sketch_of(&x, "sketch.test", sketch);
        for (int j = 0; j < PARITY_SKETCH_K; j++)
            cr_expect_eq(sketch[j], expected[j], "%s: s_%d = %g, expected %g", parity_dtype_name(dtypes[row]), j, sketch[j],
                         expected[j]);
        parity_tensor_release(&x);
    }
}

// A random f64 vector of n elements drawn from (seed, "sketch.values"), uniform in [-1, 1).
static void random_vector(parity_tensor *x, int64_t n, uint64_t seed) {
    assert_ok(parity_tensor_alloc(x, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n)), "alloc");
    assert_ok(parity_rng_fill(NULL, x, parity_rng_stream_named(seed, "sketch.values"), PARITY_RNG_UNIFORM, -1.0, 1.0), "fill");
}

Test(sketch, is_linear_flips_with_the_sign_and_has_the_norm_as_its_scale) {
    enum { N = 1000 };
    parity_tensor a, b, sum, negated;
    random_vector(&a, N, 1);
    random_vector(&b, N, 2);
    assert_ok(parity_tensor_alloc(&sum, PARITY_F64, PARITY_CPU, PARITY_SHAPE(N)), "alloc");
    assert_ok(parity_tensor_alloc(&negated, PARITY_F64, PARITY_CPU, PARITY_SHAPE(N)), "alloc");
    double norm_squared = 0;
    for (int64_t i = 0; i < N; i++) {
        double x = parity_tensor_get(&a, i);
        parity_tensor_set(&sum, i, x + parity_tensor_get(&b, i));
        parity_tensor_set(&negated, i, -x);
        norm_squared += x * x;
    }
    double sa[PARITY_SKETCH_K], sb[PARITY_SKETCH_K], ssum[PARITY_SKETCH_K], sneg[PARITY_SKETCH_K];
    sketch_of(&a, "w", sa);
    sketch_of(&b, "w", sb);
    sketch_of(&sum, "w", ssum);
    sketch_of(&negated, "w", sneg);
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        cr_expect_eq(sneg[j], -sa[j], "s_%d of -x is exactly -s_%d of x", j, j);
        cr_expect_leq(fabs(ssum[j] - (sa[j] + sb[j])), 1e-12 * sqrt(norm_squared), "s_%d is linear", j);
    }
    // E[s_j^2] = |x|^2: over 2000 names (8000 projections) the mean of s_j^2 / |x|^2 is 1 within
    // 5 standard errors (Var(s_j^2) = 2 (|x|^4 - sum x_i^4) <= 2 |x|^4: a standard error <= 0.016).
    double mean = 0;
    enum { NAMES = 2000 };
    for (int k = 0; k < NAMES; k++) {
        char name[32];
        snprintf(name, sizeof name, "model.layers.%d.weight", k);
        double s[PARITY_SKETCH_K];
        sketch_of(&a, name, s);
        for (int j = 0; j < PARITY_SKETCH_K; j++) mean += s[j] * s[j] / norm_squared / (NAMES * PARITY_SKETCH_K);
    }
    cr_log_info("mean s_j^2 / |x|^2 over %d projections: %.4f", NAMES * PARITY_SKETCH_K, mean);
    cr_expect_lt(fabs(mean - 1.0), 5 * 0.016, "E[s_j^2] = |x|^2: mean ratio %.4f", mean);
    // another name, other signs
    double other[PARITY_SKETCH_K];
    sketch_of(&a, "v", other);
    cr_expect(memcmp(other, sa, sizeof other) != 0, "the signs follow the name");
    parity_tensor_release(&a);
    parity_tensor_release(&b);
    parity_tensor_release(&sum);
    parity_tensor_release(&negated);
}

// The signs are those of the logical flat index: a transposed view sketches as its contiguous copy.
Test(sketch, follows_the_logical_index_of_a_strided_view) {
    parity_tensor x, view, copy;
    random_vector(&x, 12, 3);
    parity_tensor matrix;
    assert_ok(parity_tensor_reshape(&matrix, &x, PARITY_SHAPE(3, 4)), "reshape");
    assert_ok(parity_tensor_transpose(&view, &matrix, 0, 1), "transpose");
    assert_ok(parity_tensor_to(&copy, &view, PARITY_CPU, PARITY_F64), "contiguous copy");
    double from_view[PARITY_SKETCH_K], from_copy[PARITY_SKETCH_K], from_matrix[PARITY_SKETCH_K];
    sketch_of(&view, "w", from_view);
    sketch_of(&copy, "w", from_copy);
    sketch_of(&matrix, "w", from_matrix);
    for (int j = 0; j < PARITY_SKETCH_K; j++) cr_expect_eq(from_view[j], from_copy[j], "s_%d", j);
    cr_expect(memcmp(from_view, from_matrix, sizeof from_view) != 0, "the transpose is another vector");
    parity_tensor_release(&copy);
    parity_tensor_release(&x);
}

// A data-parallel shard's sketch (parity_tensor_sketch_at): the parts of a tensor, each sketched at
// its place in the whole (odd places too, off the four-element Philox blocks), add up to the whole's
// sketch; a part sketched at 0 does not.
Test(sketch, the_parts_of_a_tensor_sketched_at_their_places_add_up_to_the_whole) {
    parity_tensor x;
    random_vector(&x, 30, 7);
    double whole[PARITY_SKETCH_K];
    sketch_of(&x, "loss_input", whole);
    static const int64_t cuts[][3] = {{0, 15, 30}, {0, 7, 30}, {0, 1, 30}};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        double sum[PARITY_SKETCH_K] = {0}, at_zero[PARITY_SKETCH_K];
        for (int part = 0; part < 2; part++) {
            parity_tensor piece; // elements [cut, next cut) of x
            const int64_t length = cuts[c][part + 1] - cuts[c][part];
            assert_ok(parity_tensor_alloc(&piece, PARITY_F64, PARITY_CPU, PARITY_SHAPE(length)), "piece");
            memcpy(piece.data, (const double *)x.data + cuts[c][part], (size_t)length * sizeof(double));
            double s[PARITY_SKETCH_K];
            assert_ok(parity_tensor_sketch_at(parity_test_exec(PARITY_CPU), &piece, "loss_input", cuts[c][part], s), "sketch");
            for (int j = 0; j < PARITY_SKETCH_K; j++) sum[j] += s[j];
            if (part == 1)
                assert_ok(parity_tensor_sketch_at(parity_test_exec(PARITY_CPU), &piece, "loss_input", 0, at_zero), "at 0");
            parity_tensor_release(&piece);
        }
        for (int j = 0; j < PARITY_SKETCH_K; j++)
            cr_expect(fabs(sum[j] - whole[j]) <= 1e-12 * (1 + fabs(whole[j])), "cut %zu s_%d: parts %.17g, whole %.17g", c, j,
                      sum[j], whole[j]);
        double placed[PARITY_SKETCH_K];
        for (int j = 0; j < PARITY_SKETCH_K; j++) placed[j] = sum[j];
        cr_expect(memcmp(at_zero, placed, sizeof placed) != 0, "a part sketched at 0 is not the part at its place");
    }
    double out[PARITY_SKETCH_K];
    parity_error *error = parity_tensor_sketch_at(parity_test_exec(PARITY_CPU), &x, "loss_input", -1, out);
    cr_expect(error && strstr(parity_error_message(error), "sketch of loss_input from element -1"));
    parity_error_free(error);
    parity_tensor_release(&x);
}

Test(sketch, rejects_integer_tensors_naming_the_tensor) {
    parity_tensor ids;
    assert_ok(parity_tensor_zeros(&ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(3)), "alloc");
    double s[PARITY_SKETCH_K] = {1, 1, 1, 1};
    parity_error *error = parity_tensor_sketch(parity_test_exec(PARITY_CPU), &ids, "input_ids", s);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
    cr_expect(strstr(parity_error_message(error), "input_ids") && strstr(parity_error_message(error), "float tensors only"), "%s",
              parity_error_message(error));
    for (int j = 0; j < PARITY_SKETCH_K; j++) cr_expect_eq(s[j], 0.0, "a refused sketch is zeroed");
    parity_error_free(error);
    parity_tensor_release(&ids);
}

Test(sketch, cosine_of_two_sketches) {
    static const struct {
        const char *what;
        double a[PARITY_SKETCH_K], b[PARITY_SKETCH_K];
        double cosine; // NAN: must be NaN
    } rows[] = {
        {"the same", {1, -2, 3, 0.5}, {1, -2, 3, 0.5}, 1.0},
        {"scaled", {1, -2, 3, 0.5}, {3, -6, 9, 1.5}, 1.0},
        {"a flipped sign", {1, -2, 3, 0.5}, {-1, 2, -3, -0.5}, -1.0},
        {"orthogonal", {1, 1, 0, 0}, {1, -1, 0, 0}, 0.0},
        {"by hand: (1,0,0,0) and (1,1,0,0)", {1, 0, 0, 0}, {1, 1, 0, 0}, 0.70710678118654746},
        {"both zero: the same zero gradient", {0, 0, 0, 0}, {0, 0, 0, 0}, 1.0},
        {"one zero", {0, 0, 0, 0}, {0, 1e-300, 0, 0}, 0.0},
        {"tiny components do not underflow", {1e-200, 2e-200, 0, 0}, {2e-200, 4e-200, 0, 0}, 1.0},
        {"huge components do not overflow", {1e200, 0, -1e200, 0}, {1e200, 0, -1e200, 0}, 1.0},
        {"NaN", {1, NAN, 0, 0}, {1, 1, 0, 0}, NAN},
        {"NaN beside a zero sketch", {0, 0, 0, 0}, {NAN, 0, 0, 0}, NAN},
        {"Inf", {1, 1, 0, 0}, {INFINITY, 1, 0, 0}, NAN},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        double cosine = parity_sketch_cosine(rows[row].a, rows[row].b);
        if (isnan(rows[row].cosine)) cr_expect(isnan(cosine), "%s: %.17g, expected NaN", rows[row].what, cosine);
        else cr_expect_leq(fabs(cosine - rows[row].cosine), 1e-15, "%s: %.17g, expected %.17g", rows[row].what, cosine, rows[row].cosine);
    }
}

Test(sketch, a_step_result_copies_and_finds_its_sketches) {
    char names[2][PARITY_STEP_NAME_SIZE] = {"model.norm.weight", "lm_head.weight"};
    double norms[2] = {1, 2}, sketches[2 * PARITY_SKETCH_K] = {1, 2, 3, 4, 5, 6, 7, 8};
    parity_step_result source = {.parameter_count = 2, .parameter_names = names, .parameter_grad_norms = norms,
                                 .parameter_grad_sketches = sketches, .has_loss_input = true, .loss_input_grad_norm = 0.5,
                                 .loss_input_grad_sketch = {0.1, 0.2, 0.3, 0.4}};
    parity_step_result copy;
    assert_ok(parity_step_result_copy(&source, &copy), "copy");
    cr_assert_neq(copy.parameter_grad_sketches, sketches, "a deep copy");
    cr_expect_eq(memcmp(copy.parameter_grad_sketches, sketches, sizeof sketches), 0);
    cr_expect(copy.has_loss_input && copy.loss_input_grad_norm == 0.5 && copy.loss_input_grad_sketch[3] == 0.4);
    const double *found = parity_step_result_sketch(&copy, "lm_head.weight", 0); // a wrong hint: searched
    cr_assert_not_null(found);
    cr_expect_eq(found[0], 5.0);
    cr_expect_eq(parity_step_result_sketch(&copy, "lm_head.weight", 1), copy.parameter_grad_sketches + PARITY_SKETCH_K);
    cr_expect_null(parity_step_result_sketch(&copy, "absent.weight", 0));
    parity_step_result_release(&copy);
    cr_expect_null(copy.parameter_grad_sketches, "release zeroes");
    // a result without sketches (an upstream reference) copies as one without, and finds none
    source.parameter_grad_sketches = NULL;
    assert_ok(parity_step_result_copy(&source, &copy), "copy");
    cr_expect_null(copy.parameter_grad_sketches);
    cr_expect_null(parity_step_result_sketch(&copy, "lm_head.weight", 1));
    parity_step_result_release(&copy);
}

// CUDA against the CPU: the same signs (same name, same index), summed in the device's block order,
// for every float dtype and sizes below one block, across blocks and beyond the 1024-block grid
// (the grid-stride loop). The difference is f64 rounding of a sum of n terms: <= 1e-12 |x|.
Test(sketch_cuda, equals_the_cpu_sketch) {
    parity_test_require_gpu();
    static const int64_t sizes[] = {1, 255, 4097, 1000003};
    static const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_F16};
    for (size_t s = 0; s < ROWS(sizes); s++)
        for (size_t d = 0; d < ROWS(dtypes); d++) {
            parity_tensor values, host, device;
            random_vector(&values, sizes[s], 10 + s);
            assert_ok(parity_tensor_to(&host, &values, PARITY_CPU, dtypes[d]), "round to the dtype");
            assert_ok(parity_tensor_to(&device, &host, PARITY_CUDA(0), dtypes[d]), "to cuda");
            double cpu[PARITY_SKETCH_K], gpu[PARITY_SKETCH_K], norm_squared = 0;
            assert_ok(parity_tensor_sum_of_squares(NULL, &host, &norm_squared), "norm");
            sketch_of(&host, "model.layers.0.mlp.down_proj.weight", cpu);
            sketch_of(&device, "model.layers.0.mlp.down_proj.weight", gpu);
            for (int j = 0; j < PARITY_SKETCH_K; j++)
                cr_expect_leq(fabs(gpu[j] - cpu[j]), 1e-12 * sqrt(norm_squared), "%lld x %s: s_%d cuda %.17g, cpu %.17g",
                              (long long)sizes[s], parity_dtype_name(dtypes[d]), j, gpu[j], cpu[j]);
            parity_tensor_release(&device);
            parity_tensor_release(&host);
            parity_tensor_release(&values);
        }
}
