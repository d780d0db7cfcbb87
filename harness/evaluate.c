// evaluate.c: load weights and batch, resolve the kernel selection for exactly the ops the model
// uses, bind them once (no fallback), build the model, run one step.
#include "harness/evaluate.h"

#include "reports/timing_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/checkpoint/checkpoint.h"
#include "ops/core/clock.h"
#include "ops/core/device.h"
#include "ops/core/memory.h"
#include "ops/core/rng.h"

void parity_evaluation_release(parity_evaluation *evaluation) {
    parity_ops_config_release(&evaluation->ops_config);
    parity_step_result_release(&evaluation->step);
    parity_parameters_release(&evaluation->gradients);
    if (evaluation->has_op_profile) parity_tape_profile_release(&evaluation->op_profile);
    evaluation->has_op_profile = false;
    free(evaluation->step_ms);
    evaluation->step_ms = NULL;
    evaluation->step_ms_count = 0;
}

// Warm-up and timed steps after the measured one (options->timer); each result is discarded.
// With options->adaptive, more timed steps follow while the samples are noisier than its target
// (evaluate.h), within its caps.
static bool wants_another_sample(const parity_evaluation_options *options, const parity_evaluation *out, int most) {
    const parity_adaptive_timing *adaptive = &options->adaptive;
    if (adaptive->noise_target <= 0 || (int)out->step_ms_count >= most) return false;
    double spent = 0, median, noise;
    for (size_t i = 0; i < out->step_ms_count; i++) spent += out->step_ms[i];
    if (adaptive->time_cap_ms > 0 && spent >= adaptive->time_cap_ms) return false;
    parity_timing_summary(out->step_ms, out->step_ms_count, &median, &noise);
    return !(noise <= adaptive->noise_target); // a NaN noise (no positive median) asks for more
}

static parity_error *timed_steps(const parity_evaluation_options *options, parity_model *model, const parity_exec *exec,
                                 const parity_batch *batch, parity_evaluation *out) {
    if (!options->timer || options->timed_steps <= 0) return NULL;
    int most = options->timed_steps;
    if (options->adaptive.noise_target > 0 && options->adaptive.max_steps > most) most = options->adaptive.max_steps;
    out->step_ms = calloc((size_t)most, sizeof *out->step_ms);
    if (!out->step_ms) return PARITY_ERROR(PARITY_ERROR_MEMORY, "timing samples");
    parity_error *error = NULL;
    // Under data parallel every step is collective: the ranks must take the same number of them, so
    // rank 0's samples decide whether another is wanted, for every rank (its times are the ones reported).
    parity_comm *world = model->placements ? model->parallel->world : NULL;
    for (int i = 0; !error; i++) {
        if (i >= options->warmup_steps + options->timed_steps) {
            int64_t another = wants_another_sample(options, out, most);
            if (world) error = parity_comm_broadcast(world, &another, 1, PARITY_I64, 0);
            if (error || !another) break;
        }
        bool timed = i >= options->warmup_steps;
        parity_step_result step;
        if (timed) error = options->timer->begin(options->timer);
        if (!error) error = parity_model_step(model, exec, batch, false, &step);
        if (!error) parity_step_result_release(&step);
        if (!error && timed) error = options->timer->end(options->timer, &out->step_ms[out->step_ms_count++]);
    }
    return error;
}

// Rounding-level noise on the embedding table, in the run's dtype (evaluate.h, jitter_seed).
static parity_error *jitter_embedding(parity_model *model, const parity_exec *exec, uint64_t seed) {
    static const char suffix[] = "embed_tokens.weight";
    for (size_t i = 0; i < model->parameters.count; i++) {
        parity_parameter *parameter = &model->parameters.items[i];
        size_t length = strlen(parameter->name);
        if (length < sizeof suffix - 1 || strcmp(parameter->name + length - (sizeof suffix - 1), suffix) != 0) continue;
        return parity_rng_nudge_ulps(exec, &parameter->value, parity_rng_stream_named(seed, "parity.jitter.embedding"));
    }
    return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "%s: no parameter named *%s to jitter", model->config.model_type, suffix);
}

// One more step with per-op times (options->profile_ops); its results are discarded.
static parity_error *profiled_step(parity_model *model, const parity_exec *exec, const parity_batch *batch,
                                   parity_evaluation *out) {
    parity_tape_profile_init(&out->op_profile, model->device);
    out->has_op_profile = true;
    model->profile = &out->op_profile;
    parity_step_result step;
    parity_error *error = parity_model_step(model, exec, batch, false, &step);
    if (!error) parity_step_result_release(&step);
    model->profile = NULL;
    return error;
}

// Every problem of a config build, one per line, as one error.
static parity_error *config_problems(parity_error *error, const parity_ops_config *config) {
    char message[4096];
    size_t used = 0;
    message[0] = '\0';
    for (size_t i = 0; i < config->problem_count && used < sizeof message; i++)
        used += (size_t)snprintf(message + used, sizeof message - used, "\n  %s", config->problems[i].message);
    parity_error_kind kind = parity_error_kind_of(error);
    parity_error_free(error);
    return parity_error_new(kind, __FILE__, __LINE__, "kernel selection cannot run:%s", message);
}

// The settings (eager for fields nobody set, when asked), through the config rules for the ops the
// model calls, as a backend name per op (pointing into out->ops_config).
static parity_error *names_from_settings(const parity_evaluation_options *options,
                                         const parity_model_requirements *requirements, parity_evaluation *out,
                                         parity_op_names *names) {
    parity_ops_settings settings = {0};
    parity_error *error = NULL;
    if (options->eager_baseline) {
        parity_ops_source baseline = {.kind = PARITY_OPS_FROM_DEFAULT};
        for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT && !error; i++)
            error = parity_ops_settings_add(&settings, parity_kernel_fields[i].name, "eager", &baseline);
    }
    for (size_t i = 0; !error && options->settings && i < options->settings->count; i++) {
        const parity_ops_setting *setting = &options->settings->items[i];
        error = parity_ops_settings_add(&settings, setting->key, setting->value, &setting->source);
    }
    if (!error) {
        parity_ops_config_options config_options = parity_ops_config_options_default();
        config_options.device = options->device;
        config_options.needed_ops = &requirements->needed;
        error = parity_ops_config_build(&settings, &config_options, &out->ops_config);
        if (error) error = config_problems(error, &out->ops_config);
    }
    parity_ops_settings_free(&settings);
    parity_ops_config_op_names(&out->ops_config, names);
    return error;
}

// A parallel layout: the ranks checked to have been given the same work, then this rank's share of
// `batch` (a host batch). *parallel stays NULL on a rank outside the layout (*idle).
static parity_error *layout_shard(const parity_evaluation_options *options, const parity_batch *batch,
                                  parity_parallel **parallel, parity_batch *shard, bool *idle) {
    PARITY_TRY(parity_parallel_create(&options->layout, parallel, idle));
    if (*idle) return NULL;
    parity_comm *world = (*parallel)->world;
    // what every rank must agree on: the weights' source, dtype, device, layout, the selection's names and the tokens
    char work[2048], layout[64];
    parity_layout_name(&options->layout, layout, sizeof layout);
    int used = snprintf(work, sizeof work, "%s|%s|%llu|%s|%d|%s", options->checkpoint ? options->checkpoint : "",
                        options->config_path ? options->config_path : "", (unsigned long long)options->seed,
                        parity_dtype_name(options->dtype), (int)options->device.type, layout);
    for (size_t i = 0; options->settings && i < options->settings->count && used > 0 && (size_t)used < sizeof work; i++)
        used += snprintf(work + used, sizeof work - (size_t)used, "|%s=%s", options->settings->items[i].key,
                         options->settings->items[i].value);
    for (int op = 0; options->names && op < PARITY_OP_ID_COUNT && used > 0 && (size_t)used < sizeof work; op++)
        if (options->names->name[op]) used += snprintf(work + used, sizeof work - (size_t)used, "|%d=%s", op, options->names->name[op]);
    PARITY_TRY(parity_comm_check_agreement(world, "evaluation (weights, dtype, device, layout or kernel selection)", work,
                                           strlen(work)));
    PARITY_TRY(parity_comm_check_agreement(world, "batch", batch->input_ids.data,
                                           (size_t)batch->token_count * sizeof(int64_t)));
    return parity_parallel_shard_batch(*parallel, batch, shard);
}

// What a layout asks of the model and its bound backends, before it is built: UNSUPPORTED with the reason.
static parity_error *layout_support(const parity_evaluation_options *options, const parity_model_config *config,
                                    const parity_bindings *bindings) {
    const parity_layout *layout = &options->layout;
    const parity_backend *attention = bindings->backend[PARITY_OP_ID_ATTENTION];
    const parity_backend *experts = bindings->backend[PARITY_OP_ID_MOE_EXPERTS];
    if (layout->sp > 1) {
        for (int64_t layer = 0; layer < config->num_hidden_layers; layer++)
            PARITY_CHECK(config->layer_kinds[layer] != PARITY_LAYER_LINEAR_ATTENTION, PARITY_ERROR_UNSUPPORTED,
                         "sequence parallel: %s's gated delta net layers carry a recurrent state and a convolution across "
                         "the sequence shards, whose sequence-parallel form is not built",
                         config->model_type);
        PARITY_CHECK(!attention || (attention->capabilities & PARITY_CAP_SEQUENCE_PARALLEL), PARITY_ERROR_UNSUPPORTED,
                     "sequence parallel: attention backend '%s' has no sequence-parallel form (the seed's table: the "
                     "flash_attention_* and flex_attention values have one, sdpa and native-sparse not; parity's eager "
                     "reference does, for the layouts' baselines)",
                     attention->name);
    }
    if (layout->ep > 1) {
        PARITY_CHECK(experts, PARITY_ERROR_UNSUPPORTED, "expert parallel: %s has no MoE layer", config->model_type);
        PARITY_CHECK(experts->capabilities & PARITY_CAP_EXPERT_PARALLEL, PARITY_ERROR_UNSUPPORTED,
                     "expert parallel: moe_experts backend '%s' has no expert-parallel form (the seed's table)", experts->name);
    }
    PARITY_CHECK(!options->keep_gradients || (layout->ep <= 1 && !layout->fsdp), PARITY_ERROR_UNSUPPORTED,
                 "keeping every gradient under ep or fsdp (each rank holds pieces of them): not built");
    return NULL;
}

parity_error *parity_evaluate(const parity_evaluation_options *options, parity_evaluation *out) {
    memset(out, 0, sizeof *out);
    double phase_started = parity_monotonic_seconds();
    PARITY_TRY(parity_registry_register_builtins());
    parity_parameters parameters = {0};
    parity_error *error = NULL;
    if (options->checkpoint) {
        error = parity_checkpoint_load(options->checkpoint, PARITY_F64, &out->model_config, &parameters);
    } else if (options->config_path) {
        error = parity_model_config_read(options->config_path, &out->model_config);
        // Drawn where the run happens (a GPU draws a toy model's 1.6B values in milliseconds). Where
        // the device is absent they are drawn on the CPU, so binding the ops reports the missing
        // device for each op as always.
        bool device_present = options->device.type == PARITY_DEVICE_CPU ||
                              (options->device.type == PARITY_DEVICE_CUDA &&
                               parity_cuda_device_count(NULL, 0) > options->device.index);
        if (!error)
            error = parity_model_random_parameters_on(&out->model_config, options->seed,
                                                      options->initializer_range > 0 ? options->initializer_range : 0.02,
                                                      device_present ? options->device : PARITY_CPU,
                                                      device_present ? options->dtype : PARITY_F64, &parameters);
    } else {
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "evaluation needs a checkpoint directory or a config.json with a seed");
    }
    if (error) {
        parity_parameters_release(&parameters);
        return error;
    }
    const parity_model_config *model_config = &out->model_config;

    // The ops this model calls decide which fields matter (an unused field never blocks a run).
    parity_model_requirements computed;
    const parity_model_requirements *requirements = options->requirements;
    if (!requirements) {
        error = parity_model_requirements_of(model_config, &computed);
        requirements = &computed;
    }
    parity_op_names names = {0};
    if (!error && options->names) names = *options->names;
    else if (!error) error = names_from_settings(options, requirements, out, &names);

    parity_batch loaded = {0};
    const parity_batch *batch = options->batch;
    if (!error && options->batch_path) {
        error = parity_batch_read(options->batch_path, model_config->vocab_size, &loaded);
        batch = &loaded;
    }
    if (!error && !batch) error = PARITY_ERROR(PARITY_ERROR_USAGE, "evaluation needs a batch");
    const parity_batch *whole = batch; // the counts reported are the whole batch's
    parity_batch shard = {0};          // data parallel: this rank's rows, cut on the host
    parity_parallel *parallel = NULL;
    if (!error && parity_layout_is_parallel(&options->layout)) {
        error = layout_shard(options, batch, &parallel, &shard, &out->idle);
        batch = &shard;
        if (!error && out->idle) { // a rank outside the layout: nothing to run
            parity_parameters_release(&parameters);
            parity_batch_release(&loaded);
            return NULL;
        }
    }
    parity_batch on_device = {0}; // a run off the CPU reads its batch on that device
    if (!error && options->device.type != PARITY_DEVICE_CPU) {
        error = parity_batch_to_device(batch, options->device, &on_device);
        batch = &on_device;
    }
    parity_model *model = NULL;
    parity_bindings bindings;
    if (!error) error = parity_model_bind(requirements, &names, options->device, options->dtype, &bindings);
    if (!error && parallel) error = layout_support(options, model_config, &bindings);
    if (!error) error = parity_model_create(model_config, &parameters, options->device, options->dtype, &bindings, &model);
    // Made here when the caller brings none, after the build (which reports an absent device).
    parity_exec *own_exec = NULL;
    const parity_exec *exec = options->exec;
    char where[32], wanted[32];
    if (!error && exec && !parity_device_equal(exec->device, options->device))
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "evaluation on %s with an execution context on %s",
                             parity_device_format(options->device, wanted, sizeof wanted),
                             parity_device_format(exec->device, where, sizeof where));
    if (!error && !exec) {
        error = parity_exec_create(options->device, &own_exec);
        exec = own_exec;
    }
    if (!error && options->jitter_seed) error = jitter_embedding(model, exec, options->jitter_seed);
    if (!error) error = parity_model_apply_layout(model, parallel); // after the jitter, which every rank draws the same
    if (!error) {
        out->token_count = whole->token_count;
        out->valid_target_count = whole->valid_target_count;
        out->document_count = whole->document_count;
        parity_memory_reset_peak(options->device);
        double now = parity_monotonic_seconds();
        out->setup_seconds = now - phase_started, phase_started = now;
        error = parity_model_step(model, exec, batch, options->want_logits, &out->step);
        now = parity_monotonic_seconds();
        out->measured_seconds = now - phase_started, phase_started = now;
        model->locate_non_finite = false; // the measured step said where; the repeats are for time
        model->measure_gradients = false; // timed: the forward + backward, not the harness's norms and sketches
        if (!error) error = timed_steps(options, model, exec, batch, out);
        out->timed_seconds = parity_monotonic_seconds() - phase_started;
        model->measure_gradients = true;
        if (!error && options->profile_ops) error = profiled_step(model, exec, batch, out);
        out->peak_memory_bytes = (int64_t)parity_memory_get_stats(options->device).peak_bytes;
    }
    for (size_t i = 0; !error && options->keep_gradients && i < model->parameters.count; i++) {
        const parity_parameter *parameter = &model->parameters.items[i];
        if (!parameter->gradient.data) continue;
        parity_tensor host;
        error = parity_tensor_to(&host, &parameter->gradient, PARITY_CPU, PARITY_F64);
        if (!error) error = parity_parameters_add(&out->gradients, parameter->name, &host);
        parity_tensor_release(&host);
    }
    parity_exec_destroy(own_exec);
    parity_model_free(model);
    parity_parameters_release(&parameters);
    parity_batch_release(&loaded);
    parity_batch_release(&on_device);
    parity_batch_release(&shard);
    parity_parallel_free(parallel);
    return error;
}
