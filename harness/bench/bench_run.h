// bench_run.h: `parity bench op` as a library call, on a CUDA device or the cpu: measures the device's
// ceilings, then for every requested op, shape and backend checks its results on the inputs it will
// time (the correctness column, bench_check.h), times the forward ("fwd", where the op has one worth
// timing alone) and the forward + backward ("fwd+bwd") on the same random inputs, and measures the
// fwd+bwd's extra peak memory. Results are rows of a report (bench_report.h prints, writes and reads it).
#ifndef PARITY_BENCH_RUN_H
#define PARITY_BENCH_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/bench/bench_ops.h"
#include "harness/bench/bench_stats.h"
#include "ops/core/device.h"
#include "ops/core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

// Flop-bound ops take flop_bound_runs runs, or fewer where those would pass this budget (a slow
// backend: eager attention at T = 16384), never fewer than PARITY_BENCH_MIN_RUNS; so `parity bench op
// attention` stays within about 90 s on an H200 whatever its backends' speed.
#define PARITY_BENCH_FLOP_BOUND_ROW_BUDGET_MS 2000.0
#define PARITY_BENCH_MIN_RUNS 3

typedef struct parity_bench_result {
    char op[32], pass[16], shape[64], dtype[8];
    char backend[64];        // the parity backend, or "torch:<peer>" for a PyTorch peer read from a peers file
    bool is_peer;
    bool is_part;            // a peer that times a part of the op (moe_experts' gate_up GEMM alone), with its own
                             // flops: listed, never the peer a parity row's "vs torch" is linked to
    bool ok;                 // timed; otherwise `status` says why not ("not supported: ...", "error: ...")
    char status[256];
    parity_bench_timing timing;
    double bytes, gigabytes_per_second, copy_fraction; // memory-bound ops (0 when not)
    double flops, teraflops, gemm_fraction;           // flop-bound ops (0 when not)
    double extra_peak_bytes;   // fwd+bwd: device memory at the peak beyond what was held before (-1: not measured)
    double gradient_bytes;     // the gradient buffers the caller owns (not in extra_peak_bytes for parity rows)
    double peer_median_ms;     // the first PyTorch peer of the same op/pass/shape/dtype (0: none)
    char peer[64];
    // The correctness column (bench_check.h: op_verdict.h's check on these very inputs, against the
    // device's eager in fp64): "pass", "fail", "not supported", "not checked", "reference" (eager
    // itself); "" for a peer, or when the run was made with --no-check.
    char check[16];
    double check_ratio;        // the worst tensor's ratio to its allowance (NaN when none was compared)
    char check_detail[200];    // the worst tensor, or why it failed / was not checked
} parity_bench_result;

typedef struct parity_bench_context {
    char device_name[256];
    int compute_capability, multiprocessors;
    double l2_bytes, memory_bytes;
    char runtime[16], driver[16];
    double copy_bytes, copy_gigabytes_per_second;
    parity_bench_timing copy_timing;
    int64_t gemm_n;
    double gemm_teraflops;
    parity_bench_timing gemm_timing;
    double flush_bytes;
    int warmup, runs, flop_bound_runs;
    char peers_file[256]; // "" when no peers were read
    char torch_version[32];
    char device_type[8];  // "cuda" or "cpu" ("cuda" for reports written before CPU benches)
    char gemm_name[48];   // the GEMM ceiling's kind: "cuBLAS bf16 GEMM", "OpenBLAS fp32 GEMM"
    bool checked;         // the rows carry the correctness column
    int64_t check_max_elements;
} parity_bench_context;

typedef struct parity_bench_report {
    parity_bench_context context;
    parity_bench_result *results;
    size_t count, capacity;
} parity_bench_report;

typedef struct parity_bench_options {
    const parity_bench_op *const *ops; // the ops to time
    size_t op_count;
    const char *const *backends;       // NULL: every backend registered for the op on cuda
    size_t backend_count;
    const char *const *shapes;         // NULL: each op's default shapes (only with one op)
    size_t shape_count;
    parity_dtype dtype;
    parity_device device;
    int warmup, runs;                  // memory-bound ops; flop-bound ops use flop_bound_runs
    int flop_bound_runs;
    bool check;                        // the correctness column (bench_check.h) for every parity row
    int64_t check_max_elements;        // inputs with a larger tensor are "not checked" (0: no limit)
} parity_bench_options;

// Runs everything into `report` (which the caller releases). Per-backend failures become rows with
// a status; only a failure to use the device at all is returned as an error.
parity_error *parity_bench_run(const parity_bench_options *options, parity_bench_report *report);
parity_error *parity_bench_report_add(parity_bench_report *report, const parity_bench_result *result);
void parity_bench_report_release(parity_bench_report *report);
// True when some parity row ended in an error (not "not supported") or failed its check.
bool parity_bench_report_has_errors(const parity_bench_report *report);

#ifdef __cplusplus
}
#endif
#endif
