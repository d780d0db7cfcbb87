// test_bench.c: `parity bench` without a GPU: its command line (exit codes and messages), shape
// parsing, run statistics, the peers file it reads (malformed input named by file and field), and
// re-rendering the committed H200 baseline (reports/baselines/h200/bench.json) with its targets, and
// the targets file (harness/bench/targets.tsv: malformed lines named by file and line; where it is found).
// Timing itself needs a CUDA device; the baseline's numbers come from one (see its README).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness/bench/bench_ops.h"
#include "harness/bench/bench_report.h"
#include "harness/bench/bench_stats.h"
#include "harness/bench/bench_targets.h"
#include "ops/attention/attention.h"
#include "ops/core/file.h"
#include "ops/registry.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define BASELINE "reports/baselines/h200/bench.json"

static void write_temporary(const char *text, char *path) {
    strcpy(path, "/tmp/parity-test-bench-XXXXXX");
    int descriptor = mkstemp(path);
    cr_assert(descriptor >= 0);
    size_t length = strlen(text);
    cr_assert_eq(write(descriptor, text, length), (ssize_t)length);
    close(descriptor);
}

// The text of a small file (a rendered Markdown report), NUL-terminated.
static void read_text(const char *path, char *text, size_t size) {
    FILE *file = fopen(path, "r");
    cr_assert_not_null(file, "%s", path);
    size_t got = fread(text, 1, size - 1, file);
    text[got] = '\0';
    fclose(file);
}

// A measured parity row of the bench report, for the peer-linking tests.
static parity_bench_result measured_row(const char *op, const char *pass, const char *shape, const char *dtype,
                                        const char *backend, double median_ms) {
    parity_bench_result row;
    memset(&row, 0, sizeof row);
    snprintf(row.op, sizeof row.op, "%s", op);
    snprintf(row.pass, sizeof row.pass, "%s", pass);
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    snprintf(row.dtype, sizeof row.dtype, "%s", dtype);
    snprintf(row.backend, sizeof row.backend, "%s", backend);
    row.ok = true;
    row.timing.median_ms = median_ms;
    return row;
}

Test(bench, command_line_errors_have_documented_exit_codes) {
    static const struct {
        const char *arguments;
        int exit_code;
        const char *expected;
    } rows[] = {
        {"bench --help", 0, "parity bench render REPORT.json"},
        {"bench", 2, "expected 'parity bench op OP|all ...'"},
        {"bench model qwen3", 2, "expected 'parity bench op OP|all ...'"},
        {"bench op frobnicate --device cuda", 2, "unknown op 'frobnicate'"},
        {"bench op rms_norm", 2, "--device is required"},
        {"bench op rms_norm --device tpu", 2, "--device 'tpu' is not a device"},
        {"bench op rms_norm --device cuda --shape 16x", 2, "shape '16x' ends with 'x'"},
        {"bench op rms_norm --device cuda --shape 4x5x6", 2, "has 3 sizes, expected 2 (ROWSxHIDDEN)"},
        {"bench op rms_norm --device cuda --shape 0x8", 2, "is not ROWSxHIDDEN"},
        {"bench op load_balancing_loss --device cuda --shape 64x8x9", 2, "top-k 9 exceeds the 8 experts"},
        {"bench op moe_experts --device cuda --shape 64x32x4x16x5", 2, "top-k 5 exceeds the 4 experts"},
        {"bench op moe_experts --device cuda --shape 64x32x4x16", 2,
         "has 4 sizes, expected 5 (TOKENSxHIDDENxEXPERTSxINTERMEDIATExTOP_K)"},
        {"bench op rms_norm --device cuda --shape 9223372036854775807x4096", 2, "has more than 2^53 elements"},
        {"bench op all --device cuda --shape 8x8", 2, "--shape needs a single op"},
        {"bench op rms_norm --device cuda --backends nope", 2, "rms_norm has no backend 'nope' on cuda"},
        {"bench op rms_norm --device cuda --dtype fp16", 2, "--dtype 'fp16' is not bf16, fp32 or fp64"},
        {"bench op rms_norm --device cuda --runs 0", 2, "--runs '0' is not an integer >= 1"},
        {"bench op rms_norm --device cuda --frobnicate", 2, "unknown argument '--frobnicate'"},
        {"bench op rms_norm --device npu", 2, "--device npu: bench times cpu and CUDA backends"},
        {"bench render /nonexistent/parity/bench.json", 3, "cannot open /nonexistent/parity/bench.json"},
        {"bench render " BASELINE " --device cuda", 2, "takes only --json, --markdown and --readme"},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        command_result result = run_parity(rows[i].arguments);
        cr_expect_eq(result.exit_code, rows[i].exit_code, "parity %s: exit %d, expected %d\n%s", rows[i].arguments,
                     result.exit_code, rows[i].exit_code, result.output);
        cr_expect(strstr(result.output, rows[i].expected) != NULL, "parity %s: output lacks '%s':\n%s", rows[i].arguments,
                  rows[i].expected, result.output);
        free(result.output);
    }
}

Test(bench, shapes_parse_into_the_ops_formats) {
    static const struct {
        const char *op, *text;
        int count;
        int64_t dims[6];
    } rows[] = {
        {"rms_norm", "16384x4096", 2, {16384, 4096}},
        {"rotary", "16384x32x8x128", 4, {16384, 32, 8, 128}},
        {"cross_entropy", "8192x4096x151936", 3, {8192, 4096, 151936}},
        {"load_balancing_loss", "65536x128x8", 3, {65536, 128, 8}},
        // attention: BATCHxQUERY_HEADSxKV_HEADSxTOKENSxHEAD_DIMxDOCUMENTS (issue 13's shapes)
        {"attention", "4x16x16x4096x128x1", 6, {4, 16, 16, 4096, 128, 1}},
        {"attention", "8x16x16x2048x64x1", 6, {8, 16, 16, 2048, 64, 1}},
        {"attention", "1x16x16x16384x128x1", 6, {1, 16, 16, 16384, 128, 1}},
        {"attention", "1x16x16x16384x128x8", 6, {1, 16, 16, 16384, 128, 8}},
        {"attention", "2x32x8x4096x128x1", 6, {2, 32, 8, 4096, 128, 1}},
        // moe_experts: TOKENSxHIDDENxEXPERTSxINTERMEDIATExTOP_K (issue 14's shapes)
        {"moe_experts", "16384x2048x64x768x8", 5, {16384, 2048, 64, 768, 8}},
        {"moe_experts", "2048x2048x16x768x2", 5, {2048, 2048, 16, 768, 2}},
        {"moe_experts", "2048x2048x8x1024x2", 5, {2048, 2048, 8, 1024, 2}},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        const parity_bench_op *op = parity_bench_find_op(rows[i].op);
        cr_assert_not_null(op, "%s", rows[i].op);
        parity_bench_shape shape;
        parity_error *error = parity_bench_parse_shape(op, rows[i].text, &shape);
        cr_expect_null(error, "%s %s", rows[i].op, rows[i].text);
        parity_error_free(error);
        cr_expect_eq(shape.count, rows[i].count);
        for (int d = 0; d < rows[i].count; d++) cr_expect_eq(shape.dims[d], rows[i].dims[d], "%s dim %d", rows[i].text, d);
        char back[64];
        cr_expect_str_eq(parity_bench_shape_string(&shape, back, sizeof back), rows[i].text);
    }
    // every op's default shapes parse, and every op has a registry name
    for (size_t i = 0; i < parity_bench_op_count(); i++) {
        const parity_bench_op *op = parity_bench_op_at(i);
        const char *name = op->descriptor->name;
        cr_expect_not_null(op->default_shapes[0], "%s has no default shape", name);
        for (const char *const *text = op->default_shapes; *text; text++) {
            parity_bench_shape shape;
            parity_error *error = parity_bench_parse_shape(op, *text, &shape);
            cr_expect_null(error, "%s default %s", name, *text);
            parity_error_free(error);
            const parity_op_work_model *work = op->descriptor->work;
            cr_expect_gt(work->bytes(shape.dims, PARITY_BF16, true), work->bytes(shape.dims, PARITY_BF16, false), "%s", name);
        }
    }
}

// Attention's work model: the causal count, 2 B H T^2 D forward and 3.5x that forward + backward,
// with sum(L^2) over the packed documents; and the shapes it refuses.
Test(bench, attention_counts_causal_flops_over_documents) {
    const parity_bench_op *op = parity_bench_find_op("attention");
    cr_assert_not_null(op);
    const parity_op_work_model *work = op->descriptor->work;
    cr_expect(work->flop_bound);
    parity_bench_shape shape;
    cr_assert_null(parity_bench_parse_shape(op, "4x16x16x4096x128x1", &shape));
    cr_expect_float_eq(work->flops(shape.dims, false), 2.0 * 4 * 16 * 4096.0 * 4096 * 128, 1);
    cr_expect_float_eq(work->flops(shape.dims, true), 3.5 * 2.0 * 4 * 16 * 4096.0 * 4096 * 128, 1);
    cr_assert_null(parity_bench_parse_shape(op, "2x32x8x4096x128x1", &shape)); // GQA: query heads count
    cr_expect_float_eq(work->flops(shape.dims, false), 2.0 * 2 * 32 * 4096.0 * 4096 * 128, 1);
    // 8 documents in 16384 tokens: lengths 16384 (i + 1) / 36, the last the rest
    static const int64_t lengths[8] = {455, 910, 1365, 1820, 2275, 2730, 3185, 3644};
    double squares = 0;
    int64_t total = 0;
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(parity_attention_work_document_length(16384, 8, i), lengths[i], "document %d", i);
        squares += (double)lengths[i] * (double)lengths[i];
        total += lengths[i];
    }
    cr_expect_eq(total, 16384);
    cr_assert_null(parity_bench_parse_shape(op, "1x16x16x16384x128x8", &shape));
    cr_expect_float_eq(work->flops(shape.dims, false), 2.0 * 16 * 128 * squares, 1);
    cr_expect_float_eq(work->flops(shape.dims, true), 3.5 * 2.0 * 16 * 128 * squares, 1);
    // bytes: q, k, v read and o written, bf16, plus cu_seqlens
    cr_assert_null(parity_bench_parse_shape(op, "2x32x8x4096x128x1", &shape));
    cr_expect_float_eq(work->bytes(shape.dims, PARITY_BF16, false), 8192.0 * 128 * (64 + 16) * 2 + 3 * 8, 1e-3);
    static const struct {
        const char *text, *expected;
    } refused[] = {
        {"2x32x6x4096x128x1", "32 query heads are not a multiple of 6 kv heads"},
        {"1x16x16x20x128x8", "8 documents need at least 36 tokens a row"},
        {"4x16x4096x128", "has 4 sizes, expected 6 (BATCHxQUERY_HEADSxKV_HEADSxTOKENSxHEAD_DIMxDOCUMENTS)"},
    };
    for (size_t i = 0; i < ROWS(refused); i++) {
        parity_error *error = parity_bench_parse_shape(op, refused[i].text, &shape);
        cr_expect_not_null(error, "%s accepted", refused[i].text);
        if (error)
            cr_expect(strstr(parity_error_message(error), refused[i].expected) != NULL, "'%s' lacks '%s'",
                      parity_error_message(error), refused[i].expected);
        parity_error_free(error);
    }
}

// moe_experts' work model (ops/moe_experts/descriptor.c): the experts' GEMMs over R = N K routed rows,
// 2 R (H 2I + I H) = 6 R H I forward, 3x that forward + backward; its default shapes are issue 14's, the
// toys' from their configs (qwen3_moe_toy E16 top-2 I 768, deepseek_v3_toy E8 top-2 I 1024) on the
// gpu-nightly batch of 2048 tokens.
Test(bench, moe_experts_counts_the_experts_gemms) {
    const parity_bench_op *op = parity_bench_find_op("moe_experts");
    cr_assert_not_null(op);
    const parity_op_work_model *work = op->descriptor->work;
    cr_expect(work->flop_bound);
    cr_expect(op->forward_pass, "fwd is timed alone too");
    parity_bench_shape shape;
    cr_assert_null(parity_bench_parse_shape(op, "16384x2048x64x768x8", &shape));
    double rows = 16384.0 * 8;
    cr_expect_float_eq(work->flops(shape.dims, false), 2 * rows * (2048.0 * 2 * 768 + 768.0 * 2048), 1);
    cr_expect_float_eq(work->flops(shape.dims, false), 6 * rows * 2048 * 768, 1);
    cr_expect_float_eq(work->flops(shape.dims, true), 3 * 6 * rows * 2048 * 768, 1);
    // bytes, bf16: hidden, both weights, indices (int64) and weights read, output written
    double inputs = (16384.0 * 2048 + 64.0 * 3 * 768 * 2048 + 16384.0 * 8) * 2 + 16384.0 * 8 * 8;
    cr_expect_float_eq(work->bytes(shape.dims, PARITY_BF16, false), inputs + 16384.0 * 2048 * 2, 1e-3);
    cr_expect_float_eq(work->gradient_bytes(shape.dims, PARITY_BF16), (16384.0 * 2048 + 64.0 * 3 * 768 * 2048 + 16384.0 * 8) * 2,
                       1e-3);
    static const char *const expected[] = {"16384x2048x64x768x8", "2048x2048x16x768x2", "2048x2048x8x1024x2"};
    int count = 0;
    for (const char *const *text = op->default_shapes; *text; text++, count++)
        if (count < (int)ROWS(expected)) cr_expect_str_eq(*text, expected[count]);
    cr_expect_eq(count, (int)ROWS(expected));
}

// tools/bench_torch_peers.py (PyTorch, run on the GPU host only) times attention on parity's default
// shapes, so its rows match parity's by shape: each default shape is a tuple of its ATTENTION_SHAPES,
// and it packs documents by the same rule (checked here without torch).
Test(bench, torch_peers_time_attention_on_parity_shapes) {
    char *script = NULL;
    size_t size = 0;
    parity_error *error = parity_read_file("tools/bench_torch_peers.py", &script, &size);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    const parity_bench_op *op = parity_bench_find_op("attention");
    cr_assert_not_null(op);
    int shapes = 0;
    for (const char *const *text = op->default_shapes; *text; text++, shapes++) {
        parity_bench_shape shape;
        cr_assert_null(parity_bench_parse_shape(op, *text, &shape));
        char tuple[96];
        snprintf(tuple, sizeof tuple, "(%lld, %lld, %lld, %lld, %lld, %lld)", (long long)shape.dims[0],
                 (long long)shape.dims[1], (long long)shape.dims[2], (long long)shape.dims[3], (long long)shape.dims[4],
                 (long long)shape.dims[5]);
        cr_expect(strstr(script, tuple) != NULL, "bench_torch_peers.py's ATTENTION_SHAPES lacks %s (%s)", tuple, *text);
    }
    cr_expect_eq(shapes, 5, "issue 13's five shapes");
    cr_expect(strstr(script, "lengths = [tokens * (i + 1) // weights for i in range(documents - 1)]") != NULL,
              "the script packs documents as parity_attention_work_document_length");
    cr_expect(strstr(script, "\"rms_norm,swiglu,rotary,cross_entropy,attention,moe_experts\"") != NULL,
              "attention and moe_experts are default ops");
    // and moe_experts on parity's default shapes, each a tuple of its MOE_EXPERTS_SHAPES
    op = parity_bench_find_op("moe_experts");
    cr_assert_not_null(op);
    for (const char *const *text = op->default_shapes; *text; text++) {
        parity_bench_shape shape;
        cr_assert_null(parity_bench_parse_shape(op, *text, &shape));
        char tuple[96];
        snprintf(tuple, sizeof tuple, "(%lld, %lld, %lld, %lld, %lld)", (long long)shape.dims[0], (long long)shape.dims[1],
                 (long long)shape.dims[2], (long long)shape.dims[3], (long long)shape.dims[4]);
        cr_expect(strstr(script, tuple) != NULL, "bench_torch_peers.py's MOE_EXPERTS_SHAPES lacks %s (%s)", tuple, *text);
    }
    cr_expect(strstr(script, "forward_flops = 2 * rows * (hidden * 2 * inter + inter * hidden)") != NULL,
              "the script counts parity's flops");
    free(script);
}

Test(bench, statistics_give_median_and_relative_noise) {
    static const struct {
        double times[7];
        int count;
        double median, noise, min, max;
    } rows[] = {
        {{3, 1, 2}, 3, 2, 0.5, 1, 3},               // deviations 1, 1, 0 -> MAD 1
        {{4, 4, 4, 4}, 4, 4, 0, 4, 4},
        {{10, 12, 11, 100, 9, 10, 11}, 7, 11, 1.0 / 11, 9, 100}, // an outlier moves neither
        {{5, 7}, 2, 6, 1.0 / 6, 5, 7},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        double times[7];
        memcpy(times, rows[i].times, sizeof times);
        parity_bench_timing timing = parity_bench_summarize(times, rows[i].count);
        cr_expect_float_eq(timing.median_ms, rows[i].median, 1e-12, "row %zu median", i);
        cr_expect_float_eq(timing.noise, rows[i].noise, 1e-12, "row %zu noise", i);
        cr_expect_float_eq(timing.min_ms, rows[i].min, 1e-12, "row %zu min", i);
        cr_expect_float_eq(timing.max_ms, rows[i].max, 1e-12, "row %zu max", i);
        cr_expect_eq(timing.runs, rows[i].count);
    }
}

Test(bench, peers_files_are_read_and_malformed_ones_named) {
    static const struct {
        const char *text;
        const char *expected; // NULL: reads
    } rows[] = {
        {"{\"torch\": \"2.11\", \"peers\": [{\"op\": \"rms_norm\", \"pass\": \"fwd\", \"shape\": \"16384x4096\", \"dtype\": "
         "\"bf16\", \"peer\": \"F.rms_norm\", \"median_ms\": 0.0825, \"noise\": 0.003, \"runs\": 30}]}",
         NULL},
        {"{\"peers\": 3}", "field 'peers' must be an array"},
        {"{\"peers\": [{\"op\": \"rms_norm\"}]}", "peers[0] needs strings op, pass, shape, dtype, peer"},
        {"{\"peers\": [{\"op\": \"conv\", \"pass\": \"fwd\", \"shape\": \"1x1\", \"dtype\": \"bf16\", \"peer\": \"x\", "
         "\"median_ms\": 1}]}",
         "peers[0].op 'conv' is not an op parity bench knows"},
        {"{\"peers\": [{\"op\": \"rms_norm\", \"pass\": \"both\", \"shape\": \"1x1\", \"dtype\": \"bf16\", \"peer\": \"x\", "
         "\"median_ms\": 1}]}",
         "peers[0].pass 'both' is neither fwd nor fwd+bwd"},
        {"{\"peers\": [{\"op\": \"rms_norm\", \"pass\": \"fwd\", \"shape\": \"1x1\", \"dtype\": \"bf16\", \"peer\": \"x\", "
         "\"median_ms\": -1}]}",
         "a positive number median_ms"},
        {"{\"peers\": [{\"op\": \"rms_norm\", \"pass\": \"fwd\", \"shape\": \"1x1\", \"dtype\": \"bf16\", \"peer\": \"x\", "
         "\"median_ms\": 1, \"runs\": 1e16}]}",
         "peers[0].runs = 1e+16 is not a count"},
        {"{\"peers\": [", "not valid JSON"},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        char path[64];
        write_temporary(rows[i].text, path);
        parity_bench_report report;
        memset(&report, 0, sizeof report);
        parity_bench_result ours = measured_row("rms_norm", "fwd", "16384x4096", "bf16", "triton", 0.075);
        cr_assert_null(parity_bench_report_add(&report, &ours));
        parity_error *error = parity_bench_read_peers(path, &report);
        if (!rows[i].expected) {
            cr_expect_null(error, "row %zu: %s", i, error ? parity_error_message(error) : "");
            cr_expect_eq(report.count, 2);
            cr_expect(report.results[1].is_peer);
            cr_expect_str_eq(report.results[1].backend, "torch:F.rms_norm");
            cr_expect_float_eq(report.results[0].peer_median_ms, 0.0825, 1e-12, "our row is linked to its peer");
            // bytes of the peer follow parity's model: read x and w, write y
            cr_expect_float_eq(report.results[1].bytes, (2.0 * 16384 * 4096 + 4096) * 2, 1e-3);
        } else {
            cr_expect_not_null(error, "row %zu accepted", i);
            if (error) {
                cr_expect(strstr(parity_error_message(error), rows[i].expected) != NULL, "row %zu: '%s' lacks '%s'", i,
                          parity_error_message(error), rows[i].expected);
                cr_expect(strstr(parity_error_message(error), path) != NULL, "row %zu: '%s' does not name the file", i,
                          parity_error_message(error));
                cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
            }
        }
        parity_error_free(error);
        parity_bench_report_release(&report);
        unlink(path);
    }
}

// A peer that could not run (compiled flex_attention failing, a varlen peer the script does not time)
// is a row with its error text: read as a peer that is not ok, never linked as a parity row's peer; the
// first measured peer of the same row is, with its % of the GEMM ceiling.
Test(bench, peers_that_failed_are_rows_with_their_reason) {
    const char *text =
        "{\"peers\": [{\"op\": \"attention\", \"pass\": \"fwd\", \"shape\": \"4x16x16x4096x128x1\", \"dtype\": \"bf16\", "
        "\"peer\": \"flex_attention (torch.compile)\", \"error\": \"BackendCompilerFailed: boom\"}, "
        "{\"op\": \"attention\", \"pass\": \"fwd\", \"shape\": \"4x16x16x4096x128x1\", \"dtype\": \"bf16\", "
        "\"peer\": \"sdpa flash\", \"median_ms\": 2.0, \"runs\": 20}]}";
    char path[64];
    write_temporary(text, path);
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    report.context.gemm_teraflops = 800;
    parity_bench_result ours = measured_row("attention", "fwd", "4x16x16x4096x128x1", "bf16", "sdpa", 4.0);
    cr_assert_null(parity_bench_report_add(&report, &ours));
    parity_error *error = parity_bench_read_peers(path, &report);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_assert_eq(report.count, 3);
    cr_expect(report.results[1].is_peer && !report.results[1].ok);
    cr_expect_str_eq(report.results[1].status, "not measured: BackendCompilerFailed: boom");
    cr_expect(report.results[2].is_peer && report.results[2].ok);
    cr_expect_str_eq(report.results[0].peer, "torch:sdpa flash");
    cr_expect_float_eq(report.results[0].peer_median_ms, 2.0, 1e-12);
    double flops = 2.0 * 4 * 16 * 4096.0 * 4096 * 128;
    cr_expect_float_eq(report.results[2].teraflops, flops / 2e-3 / 1e12, 1e-9);
    cr_expect_float_eq(report.results[2].gemm_fraction, flops / 2e-3 / 1e12 / 800, 1e-12);
    cr_expect(!parity_bench_report_has_errors(&report), "a failed peer is not a parity error");
    parity_bench_report_release(&report);
    unlink(path);
}

// A flop-bound peer may give its flops: parity's count for the op, pass and shape (checked), or, for a
// peer that times a part of the op ("part": moe_experts' gate_up GEMM alone), that part's own count; a
// part's row has the part's name as its pass, and is linked to parity's row of the same part (a
// backend's gate_up GEMM alone), never to a row of the whole op, whatever the order of the file.
Test(bench, peers_with_flops_are_checked_and_parts_linked_only_to_parts) {
    static const char *const prefix = "{\"op\": \"moe_experts\", \"shape\": \"2048x2048x16x768x2\", \"dtype\": \"bf16\", ";
    double layer = 6.0 * 2048 * 2 * 2048 * 768, gemm = 4.0 * 2048 * 2 * 2048 * 768;
    char text[1024], path[64];
    snprintf(text, sizeof text,
             "{\"peers\": [%s\"pass\": \"fwd\", \"peer\": \"grouped_mm gate_up GEMM\", \"part\": \"gate_up GEMM\", "
             "\"flops\": %.17g, \"median_ms\": 0.1, \"runs\": 20}, "
             "%s\"pass\": \"fwd\", \"peer\": \"grouped_mm layer\", \"flops\": %.17g, \"median_ms\": 0.5, \"runs\": 20}, "
             "%s\"pass\": \"fwd+bwd\", \"peer\": \"grouped_mm layer\", \"flops\": %.17g, \"median_ms\": 1.5, \"runs\": 20}]}",
             prefix, gemm, prefix, layer, prefix, 3 * layer);
    write_temporary(text, path);
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    report.context.gemm_teraflops = 700;
    parity_bench_result ours = measured_row("moe_experts", "fwd", "2048x2048x16x768x2", "bf16", "eager", 1.0);
    cr_assert_null(parity_bench_report_add(&report, &ours));
    // a backend's gate_up GEMM alone (bench_run.c's third pass): its pass is the part's name
    parity_bench_result part = measured_row("moe_experts", "gate_up GEMM", "2048x2048x16x768x2", "bf16", "fused_quack", 0.08);
    part.is_part = true;
    cr_assert_null(parity_bench_report_add(&report, &part));
    parity_error *error = parity_bench_read_peers(path, &report);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_assert_eq(report.count, 5);
    cr_expect(report.results[2].is_part && !report.results[3].is_part);
    cr_expect_str_eq(report.results[2].pass, "gate_up GEMM", "a part peer's pass is its part");
    cr_expect_float_eq(report.results[2].teraflops, gemm / 0.1e-3 / 1e12, 1e-9, "the part's own flops");
    cr_expect_float_eq(report.results[3].teraflops, layer / 0.5e-3 / 1e12, 1e-9);
    cr_expect_float_eq(report.results[4].flops, 3 * layer, 1);
    cr_expect_str_eq(report.results[0].peer, "torch:grouped_mm layer", "linked to the layer, not the GEMM alone");
    cr_expect_float_eq(report.results[0].peer_median_ms, 0.5, 1e-12);
    cr_expect_str_eq(report.results[1].peer, "torch:grouped_mm gate_up GEMM", "a part linked to the same part");
    cr_expect_float_eq(report.results[1].peer_median_ms, 0.1, 1e-12);
    // the report parity writes keeps the part through a re-read (`parity bench render`)
    snprintf(report.context.device_name, sizeof report.context.device_name, "NVIDIA H200");
    report.context.copy_gigabytes_per_second = 4000;
    char written[64];
    write_temporary("", written);
    cr_assert_null(parity_bench_write_json(&report, written));
    parity_bench_report again;
    memset(&again, 0, sizeof again);
    error = parity_bench_read_report(written, &again);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_assert_eq(again.count, 5);
    cr_expect(again.results[1].is_part && again.results[2].is_part && !again.results[3].is_part && !again.results[0].is_part);
    cr_expect_str_eq(again.results[1].pass, "gate_up GEMM");
    cr_expect_str_eq(again.results[2].pass, "gate_up GEMM");
    cr_expect_float_eq(again.results[2].flops, gemm, 1);
    parity_bench_report_release(&again);
    unlink(written);
    parity_bench_report_release(&report);
    unlink(path);

    static const struct {
        const char *fields, *expected;
    } refused[] = {
        {"\"pass\": \"fwd\", \"peer\": \"x\", \"flops\": 1e12, \"median_ms\": 1", "peers[0].flops = 1000000000000 is not parity's count"},
        {"\"pass\": \"fwd\", \"peer\": \"x\", \"flops\": -1, \"median_ms\": 1", "peers[0].flops = -1 is not a positive number"},
        {"\"pass\": \"fwd\", \"peer\": \"x\", \"part\": \"gate_up GEMM\", \"median_ms\": 1",
         "peers[0] times the part 'gate_up GEMM' of moe_experts and needs its flops"},
    };
    for (size_t i = 0; i < ROWS(refused); i++) {
        snprintf(text, sizeof text, "{\"peers\": [%s%s}]}", prefix, refused[i].fields);
        write_temporary(text, path);
        memset(&report, 0, sizeof report);
        error = parity_bench_read_peers(path, &report);
        cr_expect_not_null(error, "row %zu accepted", i);
        if (error) {
            cr_expect(strstr(parity_error_message(error), refused[i].expected) != NULL, "row %zu: '%s' lacks '%s'", i,
                      parity_error_message(error), refused[i].expected);
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
        }
        parity_error_free(error);
        parity_bench_report_release(&report);
        unlink(path);
    }
    // flops on a memory-bound op
    write_temporary("{\"peers\": [{\"op\": \"rms_norm\", \"pass\": \"fwd\", \"shape\": \"8x8\", \"dtype\": \"bf16\", "
                    "\"peer\": \"x\", \"flops\": 5, \"median_ms\": 1}]}",
                    path);
    memset(&report, 0, sizeof report);
    error = parity_bench_read_peers(path, &report);
    cr_expect(error && strstr(parity_error_message(error), "flops and part are for the flop-bound ops; rms_norm is not one"),
              "%s", error ? parity_error_message(error) : "accepted");
    parity_error_free(error);
    parity_bench_report_release(&report);
    unlink(path);
}

// A count in a report (runs, warm-ups, SMs, the GEMM size) that does not fit an int is refused, naming
// the field (the fuzzer found the out-of-range conversion: suites/fuzz/corpus/bench_report/).
Test(bench, report_counts_out_of_range_are_named) {
    static const struct {
        const char *context, *timing, *expected;
    } rows[] = {
        {"\"warmup\": 1e300", "\"runs\": 3", "context.warmup = 1e+300 is not a count"},
        {"\"multiprocessors\": -1", "\"runs\": 3", "context.multiprocessors = -1 is not a count"},
        {"\"gemm_n\": 2.5", "\"runs\": 3", "context.gemm_n = 2.5 is not a count"},
        {"\"gemm_timing\": {\"runs\": 3e9}", "\"runs\": 3", "context.gemm_timing.runs = 3e+09 is not a count"},
        {"\"runs\": 10", "\"runs\": 1e16", "benchmarks[0].timing.runs = 1e+16 is not a count"},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        char text[512], path[64];
        snprintf(text, sizeof text,
                 "{\"context\": {\"device\": \"x\", \"copy_gigabytes_per_second\": 1, %s}, \"benchmarks\": [{\"op\": \"rms_norm\", "
                 "\"pass\": \"fwd\", \"shape\": \"1x1\", \"dtype\": \"bf16\", \"backend\": \"eager\", \"status\": \"ok\", "
                 "\"timing\": {\"median_ms\": 1, %s}}]}",
                 rows[i].context, rows[i].timing);
        write_temporary(text, path);
        parity_bench_report report;
        memset(&report, 0, sizeof report);
        parity_error *error = parity_bench_read_report(path, &report);
        cr_expect_not_null(error, "row %zu accepted", i);
        if (error) {
            const char *message = parity_error_message(error);
            cr_expect(strstr(message, rows[i].expected) != NULL, "row %zu: '%s' lacks '%s'", i, message, rows[i].expected);
            cr_expect(strstr(message, path) != NULL, "row %zu: '%s' does not name the file", i, message);
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
        }
        parity_error_free(error);
        parity_bench_report_release(&report);
        unlink(path);
    }
}

// The committed H200 baseline renders again without a GPU, with its targets checked.
Test(bench, committed_h200_baseline_renders_with_its_targets) {
    char markdown[64];
    write_temporary("", markdown);
    char arguments[256];
    snprintf(arguments, sizeof arguments, "bench render " BASELINE " --markdown %s", markdown);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "NVIDIA H200") != NULL, "%s", result.output);
    free(result.output);
    char text[32768];
    read_text(markdown, text, sizeof text);
    unlink(markdown);
    static const char *const expected[] = {
        "| RoPE fwd >= 3.5 TB/s | liger_kernel:",
        "| fused linear+CE (liger_kernel) fwd+bwd no slower than PyTorch eager, <= 1.5 GiB extra peak | liger_kernel:",
        "| rms_norm | 16384x4096 | bf16 | fwd | torch:F.rms_norm |",
        "| cross_entropy | 8192x4096x151936 | bf16 | fwd+bwd | liger_kernel |",
    };
    for (size_t i = 0; i < ROWS(expected); i++)
        cr_expect(strstr(text, expected[i]) != NULL, "the rendered baseline lacks '%s'", expected[i]);

    // a report without its context is refused, naming the file
    char broken[64];
    write_temporary("{\"benchmarks\": []}", broken);
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    parity_error *error = parity_bench_read_report(broken, &report);
    cr_expect_not_null(error);
    if (error) cr_expect(strstr(parity_error_message(error), "expected an object 'context'") != NULL, "%s",
                         parity_error_message(error));
    parity_error_free(error);
    parity_bench_report_release(&report);
    unlink(broken);
}

// Malformed JSON in either reader is a DATA error naming the file and quoting where parsing stopped
// (the quote is taken before the text is freed: `make SAN=1 test` caught a use after free here).
Test(bench, malformed_json_names_the_file_and_where_parsing_stopped) {
    static const struct {
        bool report; // parity_bench_read_report, else parity_bench_read_peers
        const char *text, *expected;
    } rows[] = {
        {false, "{\"peers\": [", "not valid JSON (near '')"},
        {false, "{\"peers\": [{\"op\": rms_norm}]}", "not valid JSON (near 'rms_norm}]}')"},
        {true, "{\"context\": {\"device\": H200}, \"benchmarks\": []}", "not valid JSON (near 'H200}, \"benchmarks\": []}')"},
        {true, "{\"context\": {", "not valid JSON (near '')"},
        {true, "", "not valid JSON"},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        char path[64];
        write_temporary(rows[i].text, path);
        parity_bench_report report;
        memset(&report, 0, sizeof report);
        parity_error *error = rows[i].report ? parity_bench_read_report(path, &report) : parity_bench_read_peers(path, &report);
        cr_expect_not_null(error, "row %zu accepted", i);
        if (error) {
            const char *message = parity_error_message(error);
            cr_expect(strstr(message, rows[i].expected) != NULL, "row %zu: '%s' lacks '%s'", i, message, rows[i].expected);
            cr_expect(strstr(message, path) != NULL, "row %zu: '%s' does not name the file", i, message);
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
        }
        parity_error_free(error);
        parity_bench_report_release(&report);
        unlink(path);
    }
}

// The targets of the Markdown report are data (harness/bench/targets.tsv): the committed file reads,
// and a malformed line is named by file and line.
Test(bench, targets_file_reads_and_malformed_lines_are_named) {
    parity_bench_targets targets;
    parity_error *error = parity_bench_targets_read(PARITY_BENCH_TARGETS_REPOSITORY_PATH, &targets);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_expect_eq(targets.count, 20); // 15 of issues 13 and 14, 5 of issue 15 (GatedDeltaNet ops)
    cr_expect_str_eq(targets.items[0].op, "rms_norm");
    cr_expect_str_eq(targets.items[0].backend, "", "'best' is the best backend");
    cr_expect_str_eq(targets.items[0].peer, "", "a bandwidth target names no peer");
    cr_expect_float_eq(targets.items[0].minimum_gigabytes_per_second, 3800, 1e-12);
    cr_expect_str_eq(targets.items[4].backend, "liger_kernel");
    cr_expect_str_eq(targets.items[4].peer, "eager linear + F.cross_entropy");
    cr_expect_float_eq(targets.items[4].minimum_speedup, 1, 0, "'-': no slower");
    cr_expect_float_eq(targets.items[4].minimum_gigabytes_per_second, 0, 0, "a peer target: no bandwidth");
    cr_expect_float_eq(targets.items[4].maximum_extra_gib, 1.5, 1e-12);
    // issue 13's attention targets, each against its own peer (not the row's first)
    static const struct { const char *pass, *backend, *peer; double speedup; } attention[] = {
        {"fwd", "flash_attention_2", "sdpa flash", 1.1},
        {"fwd+bwd", "flash_attention_2", "sdpa flash", 1.1},
        {"fwd", "flex_attention", "flex_attention (torch.compile)", 1},
        {"fwd+bwd", "flex_attention", "flex_attention (torch.compile)", 1},
        {"fwd", "sdpa", "sdpa memory-efficient", 1},
        {"fwd+bwd", "sdpa", "sdpa memory-efficient", 1},
    };
    for (size_t i = 0; i < ROWS(attention) && 5 + i < targets.count; i++) {
        const parity_bench_target *target = &targets.items[5 + i];
        cr_expect_str_eq(target->op, "attention");
        cr_expect_str_eq(target->shape, "4x16x16x4096x128x1");
        cr_expect_str_eq(target->pass, attention[i].pass);
        cr_expect_str_eq(target->backend, attention[i].backend);
        cr_expect_str_eq(target->peer, attention[i].peer);
        cr_expect_float_eq(target->minimum_speedup, attention[i].speedup, 1e-12);
        cr_expect_float_eq(target->maximum_extra_gib, 0, 0, "%s: memory not judged", target->what);
    }
    // issue 14's MoE targets against the layer torch builds from grouped_mm: fused_quack fwd+bwd at most
    // 0.8x its time (1.25x as fast), fused_triton no slower
    static const struct { const char *pass, *backend; double speedup; } moe[] = {
        {"fwd+bwd", "fused_quack", 1.25},
        {"fwd", "fused_triton", 1},
        {"fwd+bwd", "fused_triton", 1},
        {"gate_up GEMM", "fused_quack", 1}, // the part alone, against torch's grouped_mm of the same GEMM
    };
    for (size_t i = 0; i < ROWS(moe) && 11 + i < targets.count; i++) {
        const parity_bench_target *target = &targets.items[11 + i];
        cr_expect_str_eq(target->op, "moe_experts");
        cr_expect_str_eq(target->shape, "16384x2048x64x768x8");
        cr_expect_str_eq(target->pass, moe[i].pass);
        cr_expect_str_eq(target->backend, moe[i].backend);
        cr_expect_str_eq(target->peer, i == 3 ? "grouped_mm gate_up GEMM" : "grouped_mm layer");
        cr_expect_float_eq(target->minimum_speedup, moe[i].speedup, 1e-12);
    }
    parity_bench_targets_release(&targets);

#define HEADER "op\tpass\tshape\tbackend\tpeer\tmin_speedup\tmin_gb_per_s\tmax_extra_gib\twhat\n"
    static const struct {
        const char *text;
        const char *expected; // NULL: reads
    } rows[] = {
        {"# a comment\n\n" HEADER "rms_norm\tfwd\t16384x4096\tbest\t-\t-\t3800\t-\tRMSNorm fwd\n", NULL},
        {HEADER "swiglu\tfwd\t8x8\tliger_kernel\tF.silu\t-\t-\t0.5\tpeer target\r\n", NULL},
        {HEADER "swiglu\tfwd\t8x8\tliger_kernel\tF.silu\t1.25\t-\t-\tpeer target, speed only\n", NULL},
        {"op\tpass\tshape\n", "t.tsv:1: 3 tab-separated fields, expected 9"},
        {"op\tpass\tshape\tbackend\tpeer\tmin_speedup\tmin_gb_per_s\tmax_extra\twhat\n", "t.tsv:1: header column 8 is 'max_extra'"},
        // the format before targets named their peer (judged against the row's first peer) is refused
        {"op\tpass\tshape\tbackend\tmin_gb_per_s\tmax_extra_gib\twhat\n", "t.tsv:1: 7 tab-separated fields, expected 9"},
        // the old format with a typed-in torch time is refused: a verdict needs a peer measured in the run
        {"op\tpass\tshape\tbackend\tpeer\tmin_speedup\tmin_gb_per_s\ttorch_anchor_ms\tmax_extra_gib\twhat\n",
         "t.tsv:1: more than 9 tab-separated fields"},
        {HEADER, "t.tsv: no targets"},
        {HEADER "rms_norm\tfwd\t16384x4096\tbest\t-\t-\t3800\t-\n", "t.tsv:2: 8 tab-separated fields, expected 9"},
        {HEADER "rms_norm\tfwd\t16384x4096\tbest\t-\t-\t3800\t-\twhat\textra\n", "t.tsv:2: more than 9 tab-separated fields"},
        {"# c\n" HEADER "conv\tfwd\t8x8\tbest\t-\t-\t1\t-\tw\n", "t.tsv:3: op 'conv' is not an op parity bench knows"},
        {HEADER "rms_norm\tboth\t8x8\tbest\t-\t-\t1\t-\tw\n", "t.tsv:2: pass 'both' is neither fwd nor fwd+bwd"},
        // a part's name is a pass of its own op only
        {HEADER "moe_experts\tgate_up GEMM\t8x8x4x8x2\tfused_quack\tgrouped_mm gate_up GEMM\t-\t-\t-\tw\n", NULL},
        {HEADER "moe_experts\tgate_up\t8x8x4x8x2\tfused_quack\tx\t-\t-\t-\tw\n",
         "t.tsv:2: pass 'gate_up' is neither fwd nor fwd+bwd nor 'gate_up GEMM'"},
        {HEADER "rms_norm\tgate_up GEMM\t8x8\tbest\t-\t-\t1\t-\tw\n", "t.tsv:2: pass 'gate_up GEMM' is neither fwd nor fwd+bwd"},
        {HEADER "rms_norm\tfwd\t8x8x8\tbest\t-\t-\t1\t-\tw\n", "t.tsv:2: shape:"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\t-\t-\t3.8TB\t-\tw\n", "t.tsv:2: min_gb_per_s '3.8TB' is not a positive number or '-'"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\t-\t-\t-1\t-\tw\n", "t.tsv:2: min_gb_per_s '-1' is not a positive number"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\tF.rms_norm\t0\t-\t-\tw\n", "t.tsv:2: min_speedup '0' is not a positive number"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\t-\t-\t-\t-\tw\n", "t.tsv:2: a target sets either min_gb_per_s (a bandwidth target) or peer"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\tF.rms_norm\t-\t1\t-\tw\n", "t.tsv:2: a target sets either min_gb_per_s (a bandwidth target) or peer"},
        // a peer criterion without a peer: once the row's first peer, now refused
        {HEADER "rms_norm\tfwd\t8x8\tbest\t-\t-\t1\t2\tw\n", "t.tsv:2: min_speedup and max_extra_gib judge a torch peer"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\t-\t1.1\t1\t-\tw\n", "t.tsv:2: min_speedup and max_extra_gib judge a torch peer"},
        {HEADER "rms_norm\tfwd\t8x8\t\t-\t-\t1\t-\tw\n", "t.tsv:2: backend is empty"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\t\t-\t1\t-\tw\n", "t.tsv:2: peer is empty"},
        {HEADER "rms_norm\tfwd\t8x8\tbest\t-\t-\t1\t-\t\n", "t.tsv:2: what is empty"},
    };
#undef HEADER
    for (size_t i = 0; i < ROWS(rows); i++) {
        error = parity_bench_targets_parse(rows[i].text, "t.tsv", &targets);
        if (!rows[i].expected) {
            cr_expect_null(error, "row %zu: %s", i, error ? parity_error_message(error) : "");
            cr_expect_eq(targets.count, 1, "row %zu", i);
        } else {
            cr_expect_not_null(error, "row %zu accepted", i);
            if (error) {
                cr_expect(strstr(parity_error_message(error), rows[i].expected) != NULL, "row %zu: '%s' lacks '%s'", i,
                          parity_error_message(error), rows[i].expected);
                cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA, "row %zu", i);
            }
        }
        parity_error_free(error);
        parity_bench_targets_release(&targets);
    }
}

// `parity bench --markdown` finds its targets from the repository root (the test above and the
// baseline test), from another directory through the copy make puts beside the binary, and says
// where it looked when neither is there.
Test(bench, targets_are_found_beside_the_binary_and_their_absence_named) {
    char root[4096], baseline[4300], markdown[64], arguments[4600];
    cr_assert_not_null(getcwd(root, sizeof root));
    snprintf(baseline, sizeof baseline, "%s/" BASELINE, root);
    write_temporary("", markdown);
    snprintf(arguments, sizeof arguments, "bench render '%s' --markdown %s", baseline, markdown);
    command_result result = run_parity_from("/tmp", NULL, arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    free(result.output);
    char text[32768];
    read_text(markdown, text, sizeof text);
    cr_expect(strstr(text, "| RMSNorm fwd+bwd >= 3.4 TB/s | liger_kernel:") != NULL, "no targets from /tmp:\n%s", text);

    // a parity binary alone in a folder, run outside the repository: no targets file anywhere
    char folder[] = "/tmp/parity-bench-lone-XXXXXX", lone[128], copy[4400], original[4096];
    cr_assert_not_null(mkdtemp(folder));
    snprintf(lone, sizeof lone, "%s/parity", folder);
    parity_binary_path(original, sizeof original);
    snprintf(copy, sizeof copy, "cp '%s' '%s'", original, lone);
    cr_assert_eq(system(copy), 0);
    result = run_parity_from("/tmp", lone, arguments);
    cr_expect_eq(result.exit_code, 3, "%s", result.output);
    cr_expect(strstr(result.output, "no targets file") && strstr(result.output, "harness/bench/targets.tsv") &&
                  strstr(result.output, folder),
              "%s", result.output);
    free(result.output);
    unlink(lone);
    rmdir(folder);
    unlink(markdown);
}
