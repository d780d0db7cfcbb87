// test_bench_gated_delta_net.c: `parity bench` for issue 15's GatedDeltaNet ops without a GPU: the
// gated_delta_rule work model (ops/gated_delta_rule/descriptor.c: the chunked form's products, bytes of
// q, k, v, g, beta, o and their gradients), its default shapes, and tools/bench_torch_peers.py timing
// gated_delta_rule, causal_conv1d and rms_norm_gated on parity's shapes, gated_delta_rule with parity's
// flop count (checked without torch).
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench_ops.h"
#include "ops/core/file.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

Test(bench_gated_delta_net, gated_delta_rule_counts_the_chunked_products) {
    const parity_bench_op *op = parity_bench_find_op("gated_delta_rule");
    cr_assert_not_null(op);
    const parity_op_work_model *work = op->descriptor->work;
    cr_assert_not_null(work);
    cr_expect(work->flop_bound);
    cr_expect(op->forward_pass, "fwd is timed alone too");
    cr_expect_str_eq(work->size_format, "BATCHxTOKENSxHEADSxKEY_DIMxVALUE_DIM");
    static const char *const expected[] = {"1x8192x16x128x128", "4x4096x32x128x128"};
    int count = 0;
    for (const char *const *text = op->default_shapes; *text; text++, count++)
        if (count < (int)ROWS(expected)) cr_expect_str_eq(*text, expected[count]);
    cr_expect_eq(count, (int)ROWS(expected));

    parity_bench_shape shape;
    cr_assert_null(parity_bench_parse_shape(op, "1x8192x16x128x128", &shape));
    // per token and head, C = 64: 2 C (3 K + 2 V) + 6 K V = 81920 + 98304
    double rows = 8192.0 * 16, per_token = 2 * 64.0 * (3 * 128 + 2 * 128) + 6 * 128.0 * 128;
    cr_expect_float_eq(per_token, 180224, 0);
    cr_expect_float_eq(work->flops(shape.dims, false), rows * per_token, 1);
    cr_expect_float_eq(work->flops(shape.dims, true), 3 * rows * per_token, 1);
    // bf16: q, k, v, beta (2 bytes), g (f32), cu_seqlens (2 int64) read, o written; the backward reads them
    // again with do and writes dq, dk, dv, dbeta (2 bytes) and dg (4)
    double inputs = rows * (3 * 128 + 1) * 2 + rows * 4 + 2 * 8;
    cr_expect_float_eq(work->bytes(shape.dims, PARITY_BF16, false), inputs + rows * 128 * 2, 1e-3);
    cr_expect_float_eq(work->bytes(shape.dims, PARITY_BF16, true),
                       2 * (inputs + rows * 128 * 2) + rows * (3 * 128 + 1) * 2 + rows * 4, 1e-3);
    cr_expect_float_eq(work->gradient_bytes(shape.dims, PARITY_BF16), rows * (3 * 128 + 1) * 2 + rows * 4, 1e-3);
    // f64: g in f64 too
    cr_expect_float_eq(work->bytes(shape.dims, PARITY_F64, false), rows * (3 * 128 + 1) * 8 + rows * 8 + 16 + rows * 128 * 8,
                       1e-3);
    cr_expect_not_null(parity_bench_find_op("rms_norm_gated"));
}

// tools/bench_torch_peers.py (PyTorch, on the GPU host only) times fla's chunk_gated_delta_rule on every
// default shape of gated_delta_rule with parity's flop count, causal_conv1d on its shapes, and the gated
// RMSNorm on 262144x128.
Test(bench_gated_delta_net, torch_peers_time_the_parity_shapes) {
    char *script = NULL;
    size_t size = 0;
    parity_error *error = parity_read_file("tools/bench_torch_peers.py", &script, &size);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    const parity_bench_op *op = parity_bench_find_op("gated_delta_rule");
    cr_assert_not_null(op);
    for (const char *const *text = op->default_shapes; *text; text++) {
        parity_bench_shape shape;
        cr_assert_null(parity_bench_parse_shape(op, *text, &shape));
        char tuple[96];
        snprintf(tuple, sizeof tuple, "(%lld, %lld, %lld, %lld, %lld)", (long long)shape.dims[0], (long long)shape.dims[1],
                 (long long)shape.dims[2], (long long)shape.dims[3], (long long)shape.dims[4]);
        cr_expect(strstr(script, tuple) != NULL, "bench_torch_peers.py's GATED_DELTA_RULE_SHAPES lacks %s (%s)", tuple,
                  *text);
    }
    cr_expect(strstr(script, "forward = batch * tokens * heads * (2 * chunk * (3 * key_dim + 2 * value_dim) + 6 * key_dim * "
                             "value_dim)") != NULL,
              "the script counts parity's flops");
    cr_expect(strstr(script, "GATED_DELTA_RULE_CHUNK = 64") != NULL);
    op = parity_bench_find_op("causal_conv1d");
    cr_assert_not_null(op);
    for (const char *const *text = op->default_shapes; *text; text++) {
        parity_bench_shape shape;
        cr_assert_null(parity_bench_parse_shape(op, *text, &shape));
        char tuple[64];
        snprintf(tuple, sizeof tuple, "(%lld, %lld, %lld)", (long long)shape.dims[0], (long long)shape.dims[1],
                 (long long)shape.dims[2]);
        cr_expect(strstr(script, tuple) != NULL, "bench_torch_peers.py's CAUSAL_CONV1D_SHAPES lacks %s (%s)", tuple, *text);
    }
    op = parity_bench_find_op("rms_norm_gated");
    cr_assert_not_null(op);
    cr_expect_str_eq(op->default_shapes[0], "262144x128");
    cr_expect(strstr(script, "RMS_NORM_GATED_SHAPES = ((262144, 128),)") != NULL);
    cr_expect(strstr(script, "GATED_DELTA_NET_OPS = \"rms_norm_gated,causal_conv1d,gated_delta_rule\"") != NULL,
              "issue 15's ops are default ops");
    free(script);
}
