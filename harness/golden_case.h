// golden_case.h: one case of a suite, (model, batch), and its golden: where the golden lives
// (golden/<suite>/<model>/<batch>.h5), what defines the case (config text, weight source and its
// sha256, the batch and its sha256), computing the golden (eager fp64, plus eager fp32 and bf16 on
// the same device for the per-dtype eager error), and checking that a stored golden belongs to the
// case as the suite defines it today.
#ifndef PARITY_GOLDEN_CASE_H
#define PARITY_GOLDEN_CASE_H

#include <stdbool.h>

#include "golden/golden.h"
#include "harness/case_batch.h"
#include "harness/evaluate.h"
#include "harness/provenance.h"
#include "harness/suite.h"

typedef struct parity_case {
    const parity_suite *suite;
    const parity_suite_model *model;
    const parity_suite_batch *batch_spec;
    char config_path[1100];          // the config.json read
    char *config_text;               // its text (owned)
    parity_model_config config;
    parity_model_requirements requirements; // of `config`, computed once for the combos and every run
    char weight_source[1024];        // "checkpoint <dir>" or "seed <N> from <config.json>"
    char weight_sha256[65];          // of the checkpoint's safetensors files, or of the config text + seed
    parity_case_batch batch;
    // The layout every evaluation of the case runs under (the suite's `parallel:` entry or parity run
    // --parallel; zero: one rank), always against the one-device golden.
    parity_layout layout;
} parity_case;

// Reads the model's config (and its requirements) and builds the batch.
parity_error *parity_case_prepare(const parity_suite *suite, const parity_suite_model *model,
                                  const parity_suite_batch *batch, parity_case *out);
void parity_case_release(parity_case *c);

// golden/<suite>/<model>/<batch>.h5 under `golden_dir`.
void parity_golden_path_of(const char *golden_dir, const char *suite, const char *model, const char *case_name, char *out,
                           size_t size);

// One forward + backward of the case with the backends `names` chooses (a planned combo's, already
// checked: parity_combo_op_names; NULL: every op eager); a non-zero `jitter_seed` nudges the
// embedding table by rounding-level noise first (harness/evaluate.h). `exec`: the caller's context
// on `device`, or NULL (one is made for the call); a timer records on it. `out` is filled (zeroed
// first) whether or not the call fails: release it with parity_evaluation_release either way.
parity_error *parity_case_evaluate(const parity_case *c, parity_dtype dtype, parity_device device,
                                   const parity_exec *exec, const parity_op_names *names, bool want_logits,
                                   parity_timer *timer, int warmup_steps, int timed_steps,
                                   const parity_adaptive_timing *adaptive, uint64_t jitter_seed, parity_evaluation *out);

// The device a suite's goldens are computed on: cuda:0 when a suite device is cuda (or best) and a
// GPU is present, else the CPU.
parity_device parity_golden_device(const parity_suite *suite);

// Computes the golden of a case on `device`: eager fp64 (expected), eager fp32 and bf16 (free it with
// parity_golden_release).
parity_error *parity_golden_compute(const parity_case *c, parity_device device, const parity_provenance *provenance,
                                    parity_golden *out);

// DATA error naming `path` and both suites when the stored golden was made for another suite case
// (the suite, model and batch names it records): a golden copied from another suite is foreign.
parity_error *parity_golden_check_owner(const char *path, const parity_golden *golden, const parity_case *c);
// DATA error naming `path` when the stored golden is foreign (parity_golden_check_owner) or was made
// for other inputs than the case has now (model type, config text, weights checksum, batch
// checksum): a foreign or stale golden is never compared against.
parity_error *parity_golden_check_case(const char *path, const parity_golden *golden, const parity_case *c);

#endif
