// model.h: a reference model (llama, qwen2, qwen3, seed_oss, qwen3_moe, deepseek_v3, qwen3_5 ...)
// ready to run: its config, its parameters on the run's device and dtype, and the backends of every
// op it calls, bound once from the kernel-selection choice before the model is built (VeOmni's
// single install point: no per-call "which implementation?"; a node call reads its op's slot). A
// model family is written once, as its forward, from tape node calls (models/autograd/); backward
// comes from the ops.
#ifndef PARITY_MODEL_H
#define PARITY_MODEL_H

#include <stdbool.h>

#include "models/autograd/tape.h"
#include "models/batch.h"
#include "models/checkpoint/model_config.h"
#include "models/parameters.h"
#include "models/step_result.h"
#include "models/parallel/parallel.h"
#include "ops/registry.h"

// The variant of an op a model needs; a backend lacking the capability is "not supported" for it.
typedef struct parity_op_requirement {
    parity_op_id op;
    uint32_t capabilities;   // PARITY_CAP_* flags the model needs from that op's backend
    const char *why;         // "partial rotary (partial_rotary_factor < 1)", "the (1 + w) RMSNorm" (static text)
} parity_op_requirement;

// Every op a model calls for its config, with what it needs from each op's backend. Computed once
// per model (parity_model_requirements_of) and handed to whatever needs it: the combo enumeration,
// the kernel-selection config (which fields matter) and the binding.
typedef struct parity_model_requirements {
    char model_type[64];
    parity_op_set needed;                         // the ops the model calls
    uint32_t capabilities[PARITY_OP_ID_COUNT];    // per op: PARITY_CAP_* flags it needs
    const char *why[PARITY_OP_ID_COUNT];          // per op: what those are for, or NULL
    parity_op_id order[PARITY_OP_ID_COUNT];       // the needed ops in the order the family declares them
    size_t count;
} parity_model_requirements;

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
    parity_variable *loss_input;     // the hidden state (N, H) the cross-entropy reads (lm_head's input),
                                     // whose gradient the step sketches; NULL when a family has none
    bool want_logits;
} parity_forward_outputs;

typedef struct parity_model parity_model;

typedef struct parity_model_family {
    const char *name;                        // "causal-LM decoder"; each model_type's traits row names its family
    // Every op the model calls for this config, with the capabilities it needs (`*count` entries).
    parity_error *(*requirements)(const parity_model_config *config, parity_op_requirement *out, size_t capacity, size_t *count);
    // Every op `requirements` can name for some config (PARITY_OP_* names; parity_model_requirements_of
    // checks each answer against it): what `parity config check` counts as used by a model.
    const char *const *ops;
    size_t op_count;
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
    parity_bindings bindings;        // the backend of every op it calls (family_backend reads them)
    parity_variable **parameter_variables; // per step: one tape variable per parameter (tied weights share it)
    parity_tape_profile *profile;          // NULL, or where steps add their per-op times (tape_profile.h)
    // True (the default): a step that meets NaN/Inf runs once more on a checking tape to name where
    // it first appeared (parity_model_step). The timed steps after a measured one turn it off.
    bool locate_non_finite;
    // True (the default): a step reduces every gradient (and the loss's input gradient) to its norm
    // and sketch for the step result, one device reduction and host read each. The timed steps after
    // a measured one turn it off, so they time the forward + backward a training step runs and not
    // the harness's metrics (their results are discarded); their norms and sketches are NaN.
    bool measure_gradients;
    // NULL, or the parallel layout this model's step is one rank of (parity_model_apply_layout): its
    // batch is the rank's shard (parity_parallel_shard_batch, whose loss divides by the whole batch's
    // target count), its expert and fsdp parameters are this rank's pieces (placements), and after
    // the backward the gradients, loss, logits' sum and the loss input's norm and sketch are summed
    // over the ranks in rank order, so every rank's step result is the whole batch's. CPU only (MPI
    // moves host buffers). Not owned.
    const parity_parallel *parallel;
    struct parity_parameter_placement *placements; // (parameters.count) under a layout, else NULL
};

// The family that builds `config` (its traits row's), or NULL for a config not read by parity_model_config_parse.
const parity_model_family *parity_model_family_of(const parity_model_config *config);

// The model's requirements (UNSUPPORTED when no family implements config->model_type; INTERNAL when
// the family requires an op outside its `ops`).
parity_error *parity_model_requirements_of(const parity_model_config *config, parity_model_requirements *out);

// Resolves kernel selection into bindings, once, before the model is built: for every op in
// `requirements`, the backend named in `names` (NULL names or a NULL entry: "eager") must pass
// parity_registry_check on `device` in `dtype` with the capabilities the model needs. An unknown,
// unavailable or unsupported backend is an error naming the op, the backend and the reason
// (UNAVAILABLE, or UNSUPPORTED for a dtype or a missing variant). Nothing falls back.
parity_error *parity_model_bind(const parity_model_requirements *requirements, const parity_op_names *names,
                                parity_device device, parity_dtype dtype, parity_bindings *out);

// Builds a model from a parsed config and CPU parameters (taken over and moved to device/dtype),
// running its ops on `bindings` (from parity_model_bind; copied). A node whose op has no binding
// fails with an error naming the op. A tensor the config implies that is missing or misshapen is a
// DATA error naming parameters->source (the checkpoint file) and the tensor.
parity_error *parity_model_create(const parity_model_config *config, parity_parameters *parameters, parity_device device,
                                  parity_dtype dtype, const parity_bindings *bindings, parity_model **out);
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

// Puts the model on a layout's ranks (after any jitter of its weights, which every rank draws the
// same): expert parameters cut to this rank's experts under ep, every parameter cut to its fsdp
// slice. A layout of one rank, or NULL, changes nothing. UNSUPPORTED for a device model (the MPI
// transport) or experts that do not split over ep.
parity_error *parity_model_apply_layout(parity_model *model, const parity_parallel *parallel);

// A parameter as a borrowed tape variable ("model.layers.0.self_attn.q_proj.weight").
parity_error *parity_model_parameter(parity_model *model, parity_tape *tape, const char *name, parity_variable **out);

// One forward + backward on `exec` (a context on the model's device, owned by whoever runs the step);
// fills `result` (free with parity_step_result_release). Gradients stay in model->parameters[i].gradient.
// NaN/Inf costs nothing extra to detect (each gradient norm is reduced anyway); a step that meets
// some is rerun with checks (model->locate_non_finite) so result->first_non_finite names the first
// tensor where it appeared: a parameter, a forward output with its op and backend, or a gradient
// with the backward that wrote it.
parity_error *parity_model_step(parity_model *model, const parity_exec *exec, const parity_batch *batch,
                                bool want_logits, parity_step_result *result);

#endif
