// results.h: the results of a `parity run`: a context block and one record per combo. This is the
// contract between the harness (which fills it and writes results.json) and every report writer
// (which only read it: JSON, JUnit XML, Markdown, HTML). `parity report DIR` re-renders every
// report from results.json alone, so everything a report shows must be in here.
#ifndef PARITY_RESULTS_H
#define PARITY_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/error.h"

#define PARITY_RESULTS_SCHEMA_VERSION 1

typedef enum parity_combo_status {
    PARITY_COMBO_PASS = 0,
    PARITY_COMBO_FAIL,           // a metric exceeded its tolerance, or NaN/Inf appeared
    PARITY_COMBO_NOT_SUPPORTED,  // a backend cannot do what the model needs (a reason says what)
    PARITY_COMBO_ERROR,          // the combo could not run (environment, data)
    PARITY_COMBO_EXCLUDED,       // the suite excludes it (a reason says why)
} parity_combo_status;

// "pass", "fail", "not_supported", "error", "excluded"
const char *parity_combo_status_name(parity_combo_status status);
bool parity_combo_status_parse(const char *name, parity_combo_status *out);

typedef struct parity_metric {
    char name[192];          // "loss", "aux_loss", "grad_norm", "grad_norm:model.layers.0.mlp.up_proj.weight",
                             // "grad_sketch:lm_head.weight[2]", "grad_cosine:loss_input"
    double value;            // this combo's value
    double golden;           // the fp64 eager golden
    double error;            // |value - golden|
    double tolerance;        // max(k * max(|eager_same_dtype - golden|, jitter spread), floor)
    double ratio;            // error / tolerance (<= 1 passes)
    bool pass;
    char basis[16];          // which term set the tolerance: "eager error", "jitter spread", "floor", "veomni"
                             // ("" when a results.json from before the field is read)
} parity_metric;

typedef struct parity_field_choice {
    char field[64];          // kernel-selection field, e.g. "attn_implementation" (or its alias in ids)
    char value[64];          // e.g. "sdpa"
} parity_field_choice;

#define PARITY_COMBO_MAX_FIELDS 16

typedef struct parity_combo_result {
    char id[320];            // stable and readable: "qwen3_tiny/attn=sdpa,ce=chunk_loss/bf16/cpu"
    char suite[64], model[64], batch[64], dtype[16], device[32];
    parity_field_choice fields[PARITY_COMBO_MAX_FIELDS];
    size_t field_count;
    bool is_eager_baseline;  // every swept field eager: the combo tolerances are derived from
    parity_combo_status status;
    char reason[1024];       // not_supported / error / excluded / fail: why (first failing metric, first NaN tensor)
    parity_metric *metrics;
    size_t metric_count;
    size_t metric_capacity;  // managed by parity_metric_add (0 with a malloc'd array of metric_count is fine)
    double *samples_ms;      // timed repeats (wall ms on CPU, CUDA-event ms on GPU)
    size_t sample_count;
    size_t warmup_count;
    double median_ms;
    double noise;            // relative: (p90 - p10) / median, or MAD / median (results.json says which)
    int64_t peak_memory_bytes;
    int64_t tokens;          // tokens per step, for tokens/s
} parity_combo_result;

typedef struct parity_results_context {
    int schema_version;
    char suite[64];
    char git_sha[64];
    char host[128];
    char device[160];        // "cpu" or "NVIDIA H200 (SM90, 139 GiB)"
    char driver_version[32], cuda_version[32];
    char libraries[512];     // "OpenBLAS 0.3.21, HDF5 1.10.8, cuBLAS 13.0, NCCL 2.28"
    char command[1024];
    char plugins[1024];             // backend plugins loaded ("PATH (sha256 HEX, N backends); ..."), "" for none
    char started[32], finished[32]; // ISO 8601 UTC
    char tolerance_rule[512];       // "parity: max(k * eager error, floor); k = 2 loss-like, 3 gradients"
    char timing_method[512];        // "CUDA events, 3 warm-up, median of 10; ..." / "wall clock ..."
    char interrupted[16];           // "" for a run that went to its end; else the signal that stopped it
                                    // ("SIGINT", "SIGTERM"): the combos are those that finished
    char stopped[512];              // "" unless a rank failure ended a multi-rank run early: the failed
                                    // collective (a rank died or hangs); the combos are those that finished
    size_t combos_selected;         // combos the run set out to record (what --filter selected); 0 when
                                    // a results.json from before the field is read
} parity_results_context;

typedef struct parity_results {
    parity_results_context context;
    parity_combo_result *combos;
    size_t combo_count, combo_capacity;
} parity_results;

// Appends a zeroed combo record and returns it (NULL on allocation failure). The array may move:
// a pointer returned earlier is invalid after the next call.
parity_combo_result *parity_results_add_combo(parity_results *results);
// Appends a copy of `metric` to the combo's metrics.
parity_error *parity_metric_add(parity_combo_result *combo, const parity_metric *metric);
// Replaces the combo's timing samples with a copy of `samples_ms` (count may be 0). Median and noise
// are the harness's to set: the reports show them as given.
parity_error *parity_combo_set_samples(parity_combo_result *combo, const double *samples_ms, size_t count);
// Frees every combo's metrics and samples and the combo array; leaves *results zeroed.
void parity_results_release(parity_results *results);

// results.json (Google Benchmark style: context + records). Writes atomically (temp + rename).
// Numbers round-trip exactly; NaN and +-Inf are written as the strings "nan", "inf", "-inf".
parity_error *parity_results_write_json(const char *path, const parity_results *results);
// Reads results.json back, validating schema_version; a malformed file is a DATA error naming it.
parity_error *parity_results_read_json(const char *path, parity_results *out);

#define PARITY_COMBO_STATUS_COUNT 5
// Counts by status, indexed by parity_combo_status.
void parity_results_counts(const parity_results *results, size_t counts[PARITY_COMBO_STATUS_COUNT]);

#endif
