// model.h: a reference model (llama, qwen2, qwen3, seed_oss, qwen3_moe, deepseek_v3, qwen3_5 ...)
// ready to run: its config, its parameters on the run's device and dtype, and the backends of every
// op it calls, bound once from the kernel-selection choice before anything runs (VeOmni's single
// install point: no per-call "which implementation?"). A model family is written once, as its
// forward, from tape node calls (models/autograd/); backward comes from the ops.
#ifndef PARITY_MODEL_H
#define PARITY_MODEL_H

#include <stdbool.h>

#include "models/autograd/tape.h"
#include "models/batch.h"
#include "models/checkpoint/model_config.h"
#include "models/parameters.h"
#include "ops/registry.h"

// The backend name chosen for an op (from the kernel-selection config). Ops not listed run "eager".
typedef struct parity_op_choice {
    const char *op;     // registry op name, e.g. PARITY_OP_ATTENTION
    const char *backend;
} parity_op_choice;

typedef struct parity_op_selection {
    const parity_op_choice *choices;
    size_t count;
} parity_op_selection;

// The variant of an op a model needs; a backend lacking the capability is "not supported" for it.
typedef struct parity_op_requirement {
    const char *op;
    uint32_t capabilities;   // PARITY_CAP_* flags the model needs from that op's backend
    const char *why;         // "partial rotary (partial_rotary_factor 0.25)", "(1 + w) RMSNorm"
} parity_op_requirement;

#define PARITY_MODEL_MAX_OPS 32

typedef struct parity_bound_op {
    const char *op;
    const parity_backend *backend;
} parity_bound_op;

typedef enum parity_initializer {
    PARITY_INIT_NORMAL,      // normal(0, initializer_range)
    PARITY_INIT_ONES,
    PARITY_INIT_ZEROS,
    PARITY_INIT_UNIFORM,     // uniform(low, high) with the spec's range
} parity_initializer;

typedef struct parity_parameter_spec {
    char name[160];
    int ndim;
    int64_t shape[4];
    parity_initializer initializer;
    double low, high;        // PARITY_INIT_UNIFORM
} parity_parameter_spec;

typedef struct parity_forward_outputs {
    parity_variable *loss;           // total loss (cross-entropy + router_aux_loss_coef * aux)
    parity_variable *aux_loss;       // NULL for models without one
    parity_variable *logits;         // when requested and the cross-entropy backend produces them
    bool want_logits;
} parity_forward_outputs;

typedef struct parity_model parity_model;

typedef struct parity_model_family {
    const char *name;                        // "llama-family decoder", "deepseek_v3", ...
    const char *const *model_types;          // NULL-terminated config.json model_type values
    // Every op the model calls for this config, with the capabilities it needs (NULL-terminated by op == NULL).
    parity_error *(*requirements)(const parity_model_config *config, parity_op_requirement *out, size_t capacity, size_t *count);
    // Names, shapes and initializers of every parameter, for weights drawn from (seed, name).
    parity_error *(*parameter_specs)(const parity_model_config *config, parity_parameter_spec **out, size_t *count);
    // The forward: returns the loss variable (and the aux loss, logits when asked).
    parity_error *(*forward)(parity_model *model, parity_tape *tape, const parity_batch *batch,
                             parity_forward_outputs *outputs);
} parity_model_family;

struct parity_model {
    parity_model_config config;
    parity_parameters parameters;    // on `device`, in `dtype`
    parity_device device;
    parity_dtype dtype;
    const parity_model_family *family;
    parity_bound_op bound[PARITY_MODEL_MAX_OPS];
    size_t bound_count;
    parity_variable **parameter_variables; // per step: one tape variable per parameter (tied weights share it)
    parity_tape_profile *profile;          // NULL, or where steps add their per-op times (tape_profile.h)
};

// The family for a model_type, or NULL.
const parity_model_family *parity_model_family_find(const char *model_type);

// Builds a model from a parsed config and CPU parameters (taken over and moved to device/dtype).
// Binds every op the model needs from `selection` (unlisted ops: "eager"); an unknown, unavailable
// or unsupported backend is an error naming the op, the backend and the reason. Nothing falls back.
parity_error *parity_model_create(const parity_model_config *config, parity_parameters *parameters, parity_device device,
                                  parity_dtype dtype, const parity_op_selection *selection, parity_model **out);
// Draws every parameter from the Philox stream (seed, HF name) in f64 on the CPU.
parity_error *parity_model_random_parameters(const parity_model_config *config, uint64_t seed, double initializer_range,
                                             parity_parameters *out);
// The same draw made directly on `device` in `dtype` (each value computed in f64 and rounded once, so
// a CPU draw equals the f64 draw rounded; a GPU draw may differ from the CPU's by an ulp of f64 before
// rounding, see ops/core/rng.h). A GPU run draws its 1.6B-parameter toy models in milliseconds
// instead of minutes.
parity_error *parity_model_random_parameters_on(const parity_model_config *config, uint64_t seed, double initializer_range,
                                                parity_device device, parity_dtype dtype, parity_parameters *out);
void parity_model_free(parity_model *model);

// The bound backend of an op (an INTERNAL error when the model did not declare it).
parity_error *parity_model_backend(const parity_model *model, const char *op, const parity_backend **out);
// A parameter as a borrowed tape variable ("model.layers.0.self_attn.q_proj.weight").
parity_error *parity_model_parameter(parity_model *model, parity_tape *tape, const char *name, parity_variable **out);

typedef struct parity_step_result {
    double loss;
    double aux_loss;                 // NAN when the model has none
    bool has_aux_loss;
    double grad_norm;                // L2 over every parameter gradient
    double logits_sum;               // NAN unless logits were produced
    size_t parameter_count;
    char (*parameter_names)[160];    // parameter_count entries
    double *parameter_grad_norms;    // per parameter, HF order
    parity_tensor logits;            // (N, V) on the CPU when requested and produced
    char first_non_finite[192];      // the first tensor where NaN/Inf appeared ("" when none)
} parity_step_result;

// One forward + backward on `exec` (a context on the model's device, owned by whoever runs the step);
// fills `result` (free with parity_step_result_release). Gradients stay in model->parameters[i].gradient.
parity_error *parity_model_step(parity_model *model, const parity_exec *exec, const parity_batch *batch,
                                bool want_logits, parity_step_result *result);
void parity_step_result_release(parity_step_result *result);

#endif
