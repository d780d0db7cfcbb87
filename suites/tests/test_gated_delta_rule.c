// test_gated_delta_rule.c: packing is invisible. A packed row of three documents (cu_seqlens) must give
// bit-identical outputs and gradients to the three documents run one by one, in f64, f32 and bf16, for
// the gated delta rule (recurrent "eager" and chunked "fla", chunk 2 so documents {3, 1, 5} end in
// partial chunks) and the causal conv1d in front of it: no state, conv tap or gradient crosses a
// document boundary. The chunked backward is also checked against finite differences on every row. (The conv's dweight is a sum over all tokens, so only it is compared with a
// tolerance: the packed sum and the sum of per-document sums round differently.)
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "assert_ok.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/core/cpu_math.h"
#include "ops/core/rng.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/registry.h"
#include "ops/testing/op_cases.h"
#include "suites/tests/exec_fixture.h"

static const int64_t document_lengths[] = {3, 1, 5};
enum { document_count = 3, packed_tokens = 9 };

// A random tensor of `dtype` (values drawn in f64 from the stream `name`, rounded once).
static parity_tensor random_tensor(const char *name, parity_dtype dtype, double low, double high, int ndim,
                                   const int64_t *shape) {
    parity_tensor exact, result;
    assert_ok(parity_tensor_alloc(&exact, PARITY_F64, PARITY_CPU, ndim, shape), name);
    assert_ok(parity_rng_fill(NULL, &exact, parity_rng_stream_named(77, name), PARITY_RNG_UNIFORM, low, high), name);
    assert_ok(parity_tensor_to(&result, &exact, PARITY_CPU, dtype), name);
    parity_tensor_release(&exact);
    return result;
}

static parity_tensor empty_like(const parity_tensor *tensor, int64_t tokens) {
    parity_tensor result;
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, tensor->shape, sizeof shape);
    shape[0] = tokens;
    assert_ok(parity_tensor_zeros(&result, tensor->dtype, PARITY_CPU, tensor->ndim, shape), "allocating");
    return result;
}

// The rows [start, start + tokens) of a contiguous token-major tensor, as a view.
static parity_tensor rows_of(const parity_tensor *tensor, int64_t start, int64_t tokens) {
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, tensor->shape, sizeof shape);
    shape[0] = tokens;
    size_t row_bytes = parity_tensor_nbytes(tensor) / (size_t)tensor->shape[0];
    return parity_tensor_wrap((char *)tensor->data + (size_t)start * row_bytes, tensor->dtype, PARITY_CPU, tensor->ndim,
                              shape);
}

static bool same_bytes(const parity_tensor *alone, const parity_tensor *packed, int64_t start) {
    parity_tensor slice = rows_of(packed, start, alone->shape[0]);
    return memcmp(alone->data, slice.data, parity_tensor_nbytes(alone)) == 0;
}

static parity_tensor offsets_tensor(const int64_t *lengths, int count) {
    parity_tensor offsets;
    assert_ok(parity_tensor_alloc(&offsets, PARITY_I64, PARITY_CPU, 1, (int64_t[]){count + 1}), "cu_seqlens");
    int64_t *data = offsets.data;
    data[0] = 0;
    for (int i = 0; i < count; i++) data[i + 1] = data[i] + lengths[i];
    return offsets;
}

// ---- gated delta rule ----
typedef struct gdr_tensors {
    parity_tensor query, key, value, g, beta, output;                     // inputs and output
    parity_tensor doutput, dquery, dkey, dvalue, dg, dbeta;               // cotangent and gradients
} gdr_tensors;

static void gdr_run(const parity_gated_delta_rule_kernels *kernels, gdr_tensors *t, const parity_tensor *cu_seqlens,
                    bool l2norm) {
    const int64_t chunk_size = 2; // read by the chunked backend only
    parity_gated_delta_rule_args args = {&t->query, &t->key, &t->value, &t->g, &t->beta, cu_seqlens, 0, l2norm, &t->output,
                                         chunk_size};
    parity_gated_delta_rule_grads grads = {&t->doutput, &t->dquery, &t->dkey, &t->dvalue, &t->dg, &t->dbeta};
    parity_saved saved = {0};
    assert_ok(kernels->forward(parity_test_exec(args.output->device), &args, &saved), "gated_delta_rule forward");
    assert_ok(kernels->backward(parity_test_exec(args.output->device), &args, &saved, &grads), "gated_delta_rule backward");
    parity_saved_release(&saved);
}

static void gdr_release(gdr_tensors *t, bool views) {
    parity_tensor *owned[] = {&t->output, &t->dquery, &t->dkey, &t->dvalue, &t->dg, &t->dbeta};
    parity_tensor *inputs[] = {&t->query, &t->key, &t->value, &t->g, &t->beta, &t->doutput};
    for (int i = 0; i < 6; i++) parity_tensor_release(owned[i]);
    if (!views)
        for (int i = 0; i < 6; i++) parity_tensor_release(inputs[i]);
}

static void gdr_packed_equals_alone(const char *backend_name, parity_dtype dtype, bool l2norm) {
    assert_ok(parity_registry_register_builtins(), "registering");
    const parity_backend *backend;
    assert_ok(parity_registry_resolve(PARITY_OP_GATED_DELTA_RULE, backend_name, PARITY_CPU, &backend), "resolving");
    const parity_gated_delta_rule_kernels *kernels = backend->kernels;
    const int64_t N = packed_tokens, Hk = 1, Hv = 2, Dk = 5, Dv = 3;
    gdr_tensors packed = {
        .query = random_tensor("gdr/query", dtype, -1, 1, PARITY_SHAPE(N, Hk, Dk)),
        .key = random_tensor("gdr/key", dtype, -1, 1, PARITY_SHAPE(N, Hk, Dk)),
        .value = random_tensor("gdr/value", dtype, -1, 1, PARITY_SHAPE(N, Hv, Dv)),
        .g = random_tensor("gdr/g", parity_compute_dtype(dtype), -2, 0, PARITY_SHAPE(N, Hv)), // as gdn_gating makes it
        .beta = random_tensor("gdr/beta", dtype, 0.1, 0.9, PARITY_SHAPE(N, Hv)),
        .doutput = random_tensor("gdr/doutput", dtype, -1, 1, PARITY_SHAPE(N, Hv, Dv)),
    };
    packed.output = empty_like(&packed.value, N);
    packed.dquery = empty_like(&packed.query, N);
    packed.dkey = empty_like(&packed.key, N);
    packed.dvalue = empty_like(&packed.value, N);
    packed.dg = empty_like(&packed.g, N);
    packed.dbeta = empty_like(&packed.beta, N);
    parity_tensor cu_seqlens = offsets_tensor(document_lengths, document_count);
    gdr_run(kernels, &packed, &cu_seqlens, l2norm);

    int64_t start = 0;
    for (int s = 0; s < document_count; s++) {
        int64_t length = document_lengths[s];
        gdr_tensors alone = {
            .query = rows_of(&packed.query, start, length), .key = rows_of(&packed.key, start, length),
            .value = rows_of(&packed.value, start, length), .g = rows_of(&packed.g, start, length),
            .beta = rows_of(&packed.beta, start, length),   .doutput = rows_of(&packed.doutput, start, length),
        };
        alone.output = empty_like(&packed.output, length);
        alone.dquery = empty_like(&packed.dquery, length);
        alone.dkey = empty_like(&packed.dkey, length);
        alone.dvalue = empty_like(&packed.dvalue, length);
        alone.dg = empty_like(&packed.dg, length);
        alone.dbeta = empty_like(&packed.dbeta, length);
        // the first document runs with its own cu_seqlens, the others with none (one document)
        parity_tensor own = offsets_tensor(&document_lengths[s], 1);
        gdr_run(kernels, &alone, s == 0 ? &own : NULL, l2norm);
        const char *names[] = {"output", "dquery", "dkey", "dvalue", "dg", "dbeta"};
        const parity_tensor *mine[] = {&alone.output, &alone.dquery, &alone.dkey, &alone.dvalue, &alone.dg, &alone.dbeta};
        const parity_tensor *theirs[] = {&packed.output, &packed.dquery, &packed.dkey, &packed.dvalue, &packed.dg,
                                         &packed.dbeta};
        for (int i = 0; i < 6; i++)
            cr_expect(same_bytes(mine[i], theirs[i], start), "gated_delta_rule %s %s l2norm=%d: document %d %s differs from "
                      "its packed rows", backend_name, parity_dtype_name(dtype), (int)l2norm, s, names[i]);
        parity_tensor_release(&own);
        gdr_release(&alone, true);
        start += length;
    }
    parity_tensor_release(&cu_seqlens);
    gdr_release(&packed, false);
}

Test(gated_delta_rule, packed_documents_equal_documents_run_alone) {
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    const char *const backends[] = {"eager", "fla"};
    for (int b = 0; b < 2; b++)
        for (int d = 0; d < 3; d++) {
            gdr_packed_equals_alone(backends[b], dtypes[d], true);
            gdr_packed_equals_alone(backends[b], dtypes[d], false);
        }
}

// The chunked backward against central finite differences on every gated_delta_rule row (chunk sizes
// 3, 4 and 64; documents longer and shorter than a chunk).
Test(gated_delta_rule, chunked_backward_matches_finite_differences) {
    assert_ok(parity_registry_register_builtins(), "registering");
    int rows = 0;
    for (size_t row = 0; row < gated_delta_rule_case_list.count; row++) {
        const op_check_case *test_case = &gated_delta_rule_case_list.cases[row];
        op_check_error_report report;
        assert_ok(op_check_finite_differences(test_case, "fla", &report), test_case->name);
        cr_expect(report.tensors_compared == 5, "fla [%s]: %d gradients compared", test_case->name, report.tensors_compared);
        char why[160];
        cr_expect(op_check_within(&report, 1e-6, why, sizeof why), "fla [%s]: %s", test_case->name, why);
        rows++;
    }
    cr_expect(rows >= 12);
}

// ---- causal conv1d ----
static void conv_run(const parity_causal_conv1d_kernels *kernels, const parity_tensor *x, const parity_tensor *weight,
                     const parity_tensor *cu_seqlens, parity_tensor *y, const parity_tensor *dy, parity_tensor *dx,
                     parity_tensor *dweight) {
    parity_causal_conv1d_args args = {x, weight, cu_seqlens, PARITY_CAUSAL_CONV1D_SILU, y};
    parity_causal_conv1d_grads grads = {dy, dx, dweight};
    parity_saved saved = {0};
    assert_ok(kernels->forward(parity_test_exec(args.output->device), &args, &saved), "causal_conv1d forward");
    assert_ok(kernels->backward(parity_test_exec(args.output->device), &args, &saved, &grads), "causal_conv1d backward");
    parity_saved_release(&saved);
}

static void conv_packed_equals_alone(parity_dtype dtype) {
    assert_ok(parity_registry_register_builtins(), "registering");
    const parity_backend *backend;
    assert_ok(parity_registry_resolve(PARITY_OP_CAUSAL_CONV1D, "eager", PARITY_CPU, &backend), "resolving");
    const parity_causal_conv1d_kernels *kernels = backend->kernels;
    const int64_t N = packed_tokens, C = 7, K = 4;
    parity_tensor x = random_tensor("conv/x", dtype, -1, 1, PARITY_SHAPE(N, C));
    parity_tensor weight = random_tensor("conv/weight", dtype, -1, 1, PARITY_SHAPE(C, K));
    parity_tensor dy = random_tensor("conv/dy", dtype, -1, 1, PARITY_SHAPE(N, C));
    parity_tensor y = empty_like(&x, N), dx = empty_like(&x, N), dweight = empty_like(&weight, C);
    parity_tensor cu_seqlens = offsets_tensor(document_lengths, document_count);
    conv_run(kernels, &x, &weight, &cu_seqlens, &y, &dy, &dx, &dweight);

    parity_tensor dweight_sum;
    assert_ok(parity_tensor_zeros(&dweight_sum, PARITY_F64, PARITY_CPU, PARITY_SHAPE(C, K)), "allocating");
    int64_t start = 0;
    for (int s = 0; s < document_count; s++) {
        int64_t length = document_lengths[s];
        parity_tensor x_alone = rows_of(&x, start, length), dy_alone = rows_of(&dy, start, length);
        parity_tensor y_alone = empty_like(&y, length), dx_alone = empty_like(&dx, length), dweight_alone = empty_like(&weight, C);
        conv_run(kernels, &x_alone, &weight, NULL, &y_alone, &dy_alone, &dx_alone, &dweight_alone);
        cr_expect(same_bytes(&y_alone, &y, start), "causal_conv1d %s: document %d output differs", parity_dtype_name(dtype), s);
        cr_expect(same_bytes(&dx_alone, &dx, start), "causal_conv1d %s: document %d dinput differs", parity_dtype_name(dtype), s);
        for (int64_t i = 0; i < C * K; i++)
            parity_tensor_set(&dweight_sum, i, parity_tensor_get(&dweight_sum, i) + parity_tensor_get(&dweight_alone, i));
        parity_tensor_release(&y_alone);
        parity_tensor_release(&dx_alone);
        parity_tensor_release(&dweight_alone);
        start += length;
    }
    if (dtype == PARITY_F64) {
        double difference = 0, norm = 0;
        for (int64_t i = 0; i < C * K; i++) {
            double a = parity_tensor_get(&dweight, i), b = parity_tensor_get(&dweight_sum, i);
            difference += (a - b) * (a - b);
            norm += a * a;
        }
        cr_expect(sqrt(difference / norm) < 1e-14, "causal_conv1d f64: packed dweight is not the sum over documents (%.2e)",
                  sqrt(difference / norm));
    }
    parity_tensor *all[] = {&x, &weight, &dy, &y, &dx, &dweight, &cu_seqlens, &dweight_sum};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_tensor_release(all[i]);
}

Test(causal_conv1d, packed_documents_equal_documents_run_alone) {
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    for (int d = 0; d < 3; d++) conv_packed_equals_alone(dtypes[d]);
}
