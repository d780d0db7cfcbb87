// evaluate.h: one forward + backward of a model on a batch under a kernel-selection config: the
// unit of work behind `parity eval`, golden generation and every combo of `parity run`.
// Weights come from a checkpoint directory, or are drawn from (seed, HF name) given a config.json.
// Kernel selection (raw settings through the config rules, or a planned combo's names) is bound
// once into the model's bindings (parity_model_bind) before the model is built.
#ifndef PARITY_EVALUATE_H
#define PARITY_EVALUATE_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/config/ops_config.h"
#include "harness/config/ops_settings.h"
#include "harness/timer.h"
#include "models/model.h"
#include "models/parallel/layout.h"

typedef struct parity_evaluation_options {
    const char *checkpoint;            // checkpoint directory, or NULL when weights are drawn from a seed
    const char *config_path;           // config.json for drawn weights (checkpoint == NULL)
    uint64_t seed;                     // drawn weights: the Philox seed
    double initializer_range;          // drawn weights: std of normal-initialized matrices (0 = 0.02)
    const char *batch_path;            // safetensors batch file
    const parity_batch *batch;         // or a batch already in memory (batch_path == NULL)
    parity_dtype dtype;
    parity_device device;
    // The context the steps run on, owned by the caller (the runner keeps one per device for a run);
    // NULL: parity_evaluate makes one on `device` for this call once the model is built.
    const parity_exec *exec;
    const parity_ops_settings *settings; // YAML + --ops, may be NULL
    bool eager_baseline;               // fields nobody set run "eager" instead of VeOmni's GPU defaults
    // Instead of settings: a backend name per op already checked against the vocabulary (a planned
    // combo, harness/combos.h); the config is not built again and ops_config stays empty.
    const parity_op_names *names;
    // The model's requirements when the caller has them (a suite case computes them once); NULL:
    // computed from the config read here.
    const parity_model_requirements *requirements;
    bool want_logits;
    bool keep_gradients;               // move every parameter gradient (CPU, f64) into the result
    // Non-zero: before the step, the embedding table (in the run's dtype) is nudged by rounding-level
    // noise drawn from this seed (parity_rng_nudge_ulps): how far eager moves under such noise is the
    // jitter spread of the tolerance rule (harness/tolerance.h).
    uint64_t jitter_seed;
    // After the measured step (which warms the device up), one more step with the device synchronized
    // at every node, its per-(op, backend) times in op_profile (models/autograd/tape_profile.h).
    bool profile_ops;
    // Timing (parity run): after the measured step, `warmup_steps` untimed and `timed_steps` timed
    // steps of the same model on the same batch. NULL = the measured step only. The timer records on
    // `exec`'s stream (parity_timer_create), so it comes with `exec`.
    parity_timer *timer;
    int warmup_steps, timed_steps;
    // Adaptive repeats: after the timed_steps samples, more timed steps while their noise (median
    // absolute deviation / median) is above noise_target, until max_steps samples in all or until
    // the timed samples add up to time_cap_ms. noise_target 0: off (exactly timed_steps samples).
    parity_adaptive_timing adaptive;
    // The parallel layout (models/parallel/layout.h; zero: one rank). The process must be one of the
    // world's ranks (ops/core/comm.h), which need at least the layout's ranks: the first
    // parity_layout_ranks() of them run it, each on its shard of the batch (rows for dp, columns for
    // sp), with the model's expert and fsdp parameters cut to its pieces, and the step's sums make
    // every such rank's result the whole batch's; a rank past them takes part in the split only and
    // returns with `idle` set. The ranks must be given the same model, dtype, selection and batch
    // (checked before the step).
    parity_layout layout;
} parity_evaluation_options;


typedef struct parity_evaluation {
    parity_model_config model_config;
    parity_ops_config ops_config;      // the resolved selection (filled unless `names` was given; release it)
    parity_step_result step;
    parity_parameters gradients;       // keep_gradients: name -> gradient (CPU, f64), HF names
    int64_t token_count, valid_target_count, document_count;
    double *step_ms;                   // timed_steps samples in ms (owned)
    size_t step_ms_count;
    int64_t peak_memory_bytes;         // the device's peak over the steps (ops/core/memory.h)
    bool has_op_profile;               // profile_ops: the profiled step's times
    parity_tape_profile op_profile;
    // Wall seconds of the phases (where a run's time goes beyond its timed steps): weights drawn or
    // read, and the model built; the measured step (with its gradient norms and sketches, device
    // synchronized at its end); the warm-up and timed steps.
    double setup_seconds, measured_seconds, timed_seconds;
    bool idle;                         // a rank outside options->layout's: nothing was run
} parity_evaluation;

// Runs the evaluation. On a config problem the error lists every problem (ops_config has each).
parity_error *parity_evaluate(const parity_evaluation_options *options, parity_evaluation *out);
void parity_evaluation_release(parity_evaluation *evaluation);

#endif
