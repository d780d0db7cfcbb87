// model.c: a model's requirements, binding its ops once (parity_registry_check: availability,
// dtype, capabilities), building it (parameters to device/dtype) and one training step (forward on
// the tape, backward, gradient norms).
#include "models/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_parallel.h"
#include "ops/core/rng.h"

const parity_model_family *parity_model_family_of(const parity_model_config *config) {
    return config->traits ? config->traits->family : NULL;
}

parity_error *parity_model_requirements_of(const parity_model_config *config, parity_model_requirements *out) {
    memset(out, 0, sizeof *out);
    const parity_model_family *family = parity_model_family_of(config);
    if (!family)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "%s: no model implementation for model_type '%s'", config->path,
                            config->model_type);
    parity_op_requirement list[PARITY_OP_ID_COUNT];
    size_t count = 0;
    PARITY_TRY(family->requirements(config, list, PARITY_OP_ID_COUNT, &count));
    snprintf(out->model_type, sizeof out->model_type, "%s", config->model_type);
    for (size_t i = 0; i < count; i++) { // family_require merged repeated uses: each op once
        parity_op_id op = list[i].op;
        bool declared = false;
        for (size_t j = 0; j < family->op_count && !declared; j++) declared = strcmp(family->ops[j], parity_op_id_name(op)) == 0;
        if (!declared)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: the %s family requires op '%s', which its list of ops lacks",
                                config->path, family->name, parity_op_id_name(op));
        out->needed.contains[op] = true;
        out->capabilities[op] = list[i].capabilities;
        out->why[op] = list[i].why;
        out->order[out->count++] = op;
    }
    return NULL;
}

parity_error *parity_model_bind(const parity_model_requirements *requirements, const parity_op_names *names,
                                parity_device device, parity_dtype dtype, parity_bindings *out) {
    memset(out, 0, sizeof *out);
    PARITY_TRY(parity_registry_register_builtins());
    for (size_t i = 0; i < requirements->count; i++) {
        parity_op_id id = requirements->order[i];
        const char *op = parity_op_id_name(id);
        const char *name = names && names->name[id] ? names->name[id] : "eager";
        parity_backend_need need = {dtype, requirements->capabilities[id]};
        parity_backend_check check;
        switch (parity_registry_check(op, name, device, NULL, &need, &check)) {
        case PARITY_AVAILABLE: out->backend[id] = check.backend; break;
        case PARITY_DTYPE_UNSUPPORTED:
            return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "%s backend '%s' %s", op, name, check.reason);
        case PARITY_CAPABILITY_MISSING:
            return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "%s backend '%s' %s, which %s needs (%s)", op, name, check.reason,
                                requirements->model_type, requirements->why[id] ? requirements->why[id] : "");
        default:
            return parity_error_wrap(PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s backend '%s' is not available on %s: %s", op,
                                                  name, parity_device_type_name(device.type), check.reason),
                                     __FILE__, __LINE__, "binding %s for %s", op, requirements->model_type);
        }
    }
    return NULL;
}

parity_error *parity_model_create(const parity_model_config *config, parity_parameters *parameters, parity_device device,
                                  parity_dtype dtype, const parity_bindings *bindings, parity_model **out) {
    *out = NULL;
    const parity_model_family *family = parity_model_family_of(config);
    if (!family) return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "no model implementation for model_type '%s'", config->model_type);
    if (!bindings) return PARITY_ERROR(PARITY_ERROR_USAGE, "building %s needs its bindings (parity_model_bind)", config->model_type);
    parity_model *model = calloc(1, sizeof *model);
    if (!model) return PARITY_ERROR(PARITY_ERROR_MEMORY, "allocating a model");
    model->config = *config;
    model->device = device;
    model->dtype = dtype;
    model->family = family;
    model->bindings = *bindings;
    model->locate_non_finite = true;
    model->measure_gradients = true;
    // Every parameter the model declares must be there with its declared shape; they are taken in
    // the declared (HF module) order and moved to the run's device and dtype. Tensors the model does
    // not use (e.g. extra prediction heads) are left out.
    parity_parameter_spec *specs = NULL;
    size_t spec_count = 0;
    parity_error *error = family->parameter_specs(config, &specs, &spec_count);
    // A tensor the config implies is looked for where the values came from (the checkpoint file).
    const char *source = parameters->source[0] ? parameters->source : "the parameters";
    for (size_t i = 0; !error && i < spec_count; i++) {
        parity_parameter *parameter = parity_parameters_find(parameters, specs[i].name);
        if (!parameter) {
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: no tensor named '%s', which the config implies (%s, model_type %s)",
                                 source, specs[i].name, config->path, config->model_type);
            break;
        }
        bool shape_ok = parameter->value.ndim == specs[i].ndim;
        for (int dim = 0; shape_ok && dim < specs[i].ndim; dim++) shape_ok = parameter->value.shape[dim] == specs[i].shape[dim];
        if (!shape_ok) {
            char actual[160], expected[160] = "(";
            for (int dim = 0; dim < specs[i].ndim; dim++)
                snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%s%lld", dim ? ", " : "",
                         (long long)specs[i].shape[dim]);
            strncat(expected, ")", sizeof expected - strlen(expected) - 1);
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' has shape %s, the config implies %s (%s)", source,
                                 specs[i].name, parity_tensor_shape_string(&parameter->value, actual, sizeof actual), expected,
                                 config->path);
            break;
        }
        parity_tensor converted;
        if (parameter->value.dtype == dtype && parity_device_equal(parameter->value.device, device)) {
            converted = parameter->value;
            memset(&parameter->value, 0, sizeof parameter->value);
        } else {
            error = parity_tensor_to(&converted, &parameter->value, device, dtype);
            if (error) break;
            parity_tensor_release(&parameter->value);
        }
        error = parity_parameters_add(&model->parameters, parameter->name, &converted);
        parity_tensor_release(&converted);
    }
    free(specs);
    parity_parameters_release(parameters);
    if (!error) {
        model->parameter_variables = calloc(model->parameters.count ? model->parameters.count : 1, sizeof *model->parameter_variables);
        if (!model->parameter_variables) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "allocating the parameter table");
    }
    if (error) {
        parity_model_free(model);
        return error;
    }
    *out = model;
    return NULL;
}

void parity_model_free(parity_model *model) {
    if (!model) return;
    parity_parameters_release(&model->parameters);
    free(model->parameter_variables);
    free(model->placements);
    free(model);
}

parity_error *parity_model_parameter(parity_model *model, parity_tape *tape, const char *name, parity_variable **out) {
    parity_parameter *parameter;
    PARITY_TRY(parity_parameters_require(&model->parameters, name, model->config.path, &parameter));
    size_t index = (size_t)(parameter - model->parameters.items);
    if (!model->parameter_variables[index] && model->placements && model->placements[index].sharded)
        PARITY_TRY(parity_model_gather_parameter(model, tape, index, &model->parameter_variables[index])); // fsdp
    else if (!model->parameter_variables[index])
        PARITY_TRY(parity_tape_borrow(tape, name, &parameter->value, true, &model->parameter_variables[index]));
    *out = model->parameter_variables[index];
    return NULL;
}

parity_error *parity_model_random_parameters_on(const parity_model_config *config, uint64_t seed, double initializer_range,
                                                parity_device device, parity_dtype dtype, parity_parameters *out) {
    const parity_model_family *family = parity_model_family_of(config);
    if (!family) return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "no model implementation for model_type '%s'", config->model_type);
    if (!parity_dtype_is_float(dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "random parameters in %s: float dtypes only", parity_dtype_name(dtype));
    parity_parameter_spec *specs = NULL;
    size_t count = 0;
    PARITY_TRY(family->parameter_specs(config, &specs, &count));
    parity_error *error = NULL;
    for (size_t i = 0; i < count && !error; i++) {
        parity_tensor value;
        error = parity_tensor_alloc(&value, dtype, device, specs[i].ndim, specs[i].shape);
        if (error) break;
        parity_rng_stream stream = parity_rng_stream_named(seed, specs[i].name);
        switch (specs[i].initializer) {
        // Drawn before any step: no execution context, the legacy default stream (ops/core/exec.h).
        case PARITY_INIT_NORMAL:
            error = parity_rng_fill(NULL, &value, stream, PARITY_RNG_NORMAL, 0.0, initializer_range);
            break;
        case PARITY_INIT_UNIFORM:
            error = parity_rng_fill(NULL, &value, stream, PARITY_RNG_UNIFORM, specs[i].low, specs[i].high);
            break;
        case PARITY_INIT_ONES: error = parity_tensor_fill_value(NULL, &value, 1.0); break;
        case PARITY_INIT_ZEROS: error = parity_tensor_fill_zero(&value); break;
        }
        if (!error) error = parity_parameters_add(out, specs[i].name, &value);
        parity_tensor_release(&value);
        if (error) {
            char where[32];
            error = parity_error_wrap(error, __FILE__, __LINE__, "drawing parameter %s on %s", specs[i].name,
                                      parity_device_format(device, where, sizeof where));
        }
    }
    free(specs);
    return error;
}

parity_error *parity_model_random_parameters(const parity_model_config *config, uint64_t seed, double initializer_range,
                                             parity_parameters *out) {
    return parity_model_random_parameters_on(config, seed, initializer_range, PARITY_CPU, PARITY_F64, out);
}

static double scalar_of(const parity_variable *variable) {
    parity_tensor host;
    if (variable->value.device.type == PARITY_DEVICE_CPU) return parity_tensor_get(&variable->value, 0);
    parity_error *error = parity_tensor_to(&host, &variable->value, PARITY_CPU, variable->value.dtype);
    if (error) {
        parity_error_free(error);
        return NAN;
    }
    double value = parity_tensor_get(&host, 0);
    parity_tensor_release(&host);
    return value;
}

// L2 norm of a tensor in f64 (a device tensor is reduced on its device).
static parity_error *norm_of(const parity_exec *exec, const parity_tensor *tensor, double *out) {
    double sum = 0;
    PARITY_TRY(parity_tensor_sum_of_squares(exec, tensor, &sum));
    *out = sqrt(sum);
    return NULL;
}

// snprintf for the step's 192-character description of where NaN/Inf appeared (truncation accepted).
static void describe(char *out, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void describe(char *out, size_t size, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(out, size, format, args);
    va_end(args);
}

// Where NaN/Inf first appeared in a step that met some: the step again on a checking tape, the
// forward's values in the order they were made (parameters as first used, then each node's
// outputs), then each node's backward gradients in the order the backward writes them. One more
// step and one reduction per tensor, only for a step that met NaN/Inf. `where` stays "" when the
// rerun meets none.
static parity_error *locate_non_finite(parity_model *model, const parity_exec *exec, const parity_batch *batch,
                                       bool want_logits, char *where, size_t size) {
    where[0] = '\0';
    parity_tape tape;
    parity_tape_init(&tape, exec, model->dtype, true);
    tape.check_gradients = true;
    memset(model->parameter_variables, 0, model->parameters.count * sizeof *model->parameter_variables);
    parity_forward_outputs outputs = {.want_logits = want_logits};
    parity_error *error = model->family->forward(model, &tape, batch, &outputs);
    if (!error) error = parity_tape_find_non_finite_value(&tape, where, size);
    if (!error && !where[0] && outputs.loss) {
        error = parity_tape_backward(&tape, outputs.loss);
        if (!error) snprintf(where, size, "%s", tape.first_non_finite);
    }
    parity_tape_release(&tape);
    memset(model->parameter_variables, 0, model->parameters.count * sizeof *model->parameter_variables);
    return error;
}

parity_error *parity_model_step(parity_model *model, const parity_exec *exec, const parity_batch *batch,
                                bool want_logits, parity_step_result *result) {
    memset(result, 0, sizeof *result);
    result->aux_loss = NAN;
    result->logits_sum = NAN;
    char a[32], b[32];
    if (!parity_device_equal(exec->device, model->device))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s step on %s with an execution context on %s",
                            model->config.model_type, parity_device_format(model->device, a, sizeof a),
                            parity_device_format(exec->device, b, sizeof b));
    parity_tape tape;
    parity_tape_init(&tape, exec, model->dtype, true);
    tape.profile = model->profile;
    memset(model->parameter_variables, 0, model->parameters.count * sizeof *model->parameter_variables);
    parity_forward_outputs outputs = {.want_logits = want_logits};
    // one rank of a parallel layout: its sums go over the ranks (host buffers, MPI)
    const parity_parallel *parallel = model->placements ? model->parallel : NULL;
    parity_error *error = model->profile ? parity_tape_profile_start(model->profile) : NULL;
    if (!error) error = model->family->forward(model, &tape, batch, &outputs);
    if (!error && !outputs.loss) error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s forward returned no loss", model->config.model_type);
    // The loss and aux_loss are read after the backward is queued: a read waits for the stream, and
    // here it would leave the GPU idle while the host queues the whole backward.
    if (!error) {
        if (outputs.logits) {
            error = parity_tensor_to(&result->logits, &outputs.logits->value, PARITY_CPU, PARITY_F64);
            double sum = 0;
            for (int64_t i = 0; !error && i < result->logits.numel; i++) sum += ((const double *)result->logits.data)[i];
            result->logits_sum = sum;
        }
    }
    if (!error) error = parity_tape_backward(&tape, outputs.loss);
    if (!error) {
        result->loss = scalar_of(outputs.loss);
        result->has_aux_loss = outputs.aux_loss != NULL;
        if (outputs.aux_loss) result->aux_loss = scalar_of(outputs.aux_loss);
    }
    if (!error && parallel) { // the shards' losses add up to the whole batch's (each divides by its target count)
        double local[2] = {result->loss, isnan(result->logits_sum) ? 0 : result->logits_sum}, whole[2];
        error = parity_comm_all_reduce(parallel->world, local, whole, 2, PARITY_F64);
        if (!error) result->loss = whole[0];
        if (!error && !isnan(result->logits_sum)) result->logits_sum = whole[1];
    }
    // Collect each parameter's gradient (the tape's borrowed variables carry them).
    if (!error) {
        result->parameter_names = calloc(model->parameters.count ? model->parameters.count : 1, sizeof *result->parameter_names);
        result->parameter_grad_norms = calloc(model->parameters.count ? model->parameters.count : 1, sizeof(double));
        result->parameter_grad_sketches =
            calloc((model->parameters.count ? model->parameters.count : 1) * PARITY_SKETCH_K, sizeof(double));
        result->parameter_numels = calloc(model->parameters.count ? model->parameters.count : 1, sizeof(int64_t));
        if (!result->parameter_names || !result->parameter_grad_norms || !result->parameter_grad_sketches ||
            !result->parameter_numels)
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "step result");
    }
    // Under a layout every rank takes part in every parameter's sums, with zeros for a gradient its
    // tokens did not reach (an expert shard that got no tokens here).
    bool *has = NULL;
    if (!error) {
        has = calloc(model->parameters.count ? model->parameters.count : 1, sizeof *has);
        if (!has) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "step result");
    }
    for (size_t p = 0; !error && p < model->parameters.count; p++)
        has[p] = model->parameter_variables[p] && model->parameter_variables[p]->has_gradient;
    if (!error && parallel) error = parity_model_agree_gradients(model, has);
    double total = 0;
    for (size_t p = 0; !error && p < model->parameters.count; p++) {
        parity_parameter *parameter = &model->parameters.items[p];
        parity_tensor_release(&parameter->gradient);
        parity_variable *variable = model->parameter_variables[p];
        // Not reached by the loss, or not trained (DeepSeek-V3's e_score_correction_bias is a buffer):
        // HF reports no gradient either.
        if (!has[p]) continue;
        size_t reported = result->parameter_count++;
        snprintf(result->parameter_names[reported], sizeof result->parameter_names[reported], "%s", parameter->name);
        double norm = NAN;
        double *sketch = result->parameter_grad_sketches + reported * PARITY_SKETCH_K;
        if (parallel) {
            const parity_parameter_placement *placement = &model->placements[p];
            parity_tensor local = {0};
            if (variable && variable->has_gradient) { // taken over from the tape
                local = variable->gradient;
                memset(&variable->gradient, 0, sizeof variable->gradient);
                variable->has_gradient = false;
            } else {
                error = parity_tensor_zeros(&local, model->dtype, PARITY_CPU, placement->ndim, placement->shape);
            }
            double squared = NAN;
            if (!error) error = parity_model_reduce_gradient(model, exec, p, &local, model->measure_gradients, &squared, sketch);
            parity_tensor_release(&local);
            norm = sqrt(squared);
            result->parameter_numels[reported] = placement->whole_numel;
        } else {
            parameter->gradient = variable->gradient; // hand the gradient over to the parameter
            memset(&variable->gradient, 0, sizeof variable->gradient);
            variable->has_gradient = false;
            if (model->measure_gradients) {
                if (!error) error = norm_of(exec, &parameter->gradient, &norm);
                if (!error) error = parity_tensor_sketch(exec, &parameter->gradient, parameter->name, sketch);
            } else {
                for (int j = 0; j < PARITY_SKETCH_K; j++) sketch[j] = NAN;
            }
            result->parameter_numels[reported] = parameter->gradient.numel;
        }
        if (!error && model->measure_gradients && !isfinite(norm) && !result->first_non_finite[0])
            snprintf(result->first_non_finite, sizeof result->first_non_finite, "gradient of %s", parameter->name);
        result->parameter_grad_norms[reported] = norm;
        total += norm * norm;
    }
    free(has);
    result->grad_norm = sqrt(total);
    // The loss's input gradient, read off the tape before it is released (the backward keeps every
    // variable's gradient until then).
    result->loss_input_grad_norm = NAN;
    for (int j = 0; j < PARITY_SKETCH_K; j++) result->loss_input_grad_sketch[j] = NAN;
    if (!error && model->measure_gradients && outputs.loss_input && outputs.loss_input->has_gradient) {
        const parity_tensor *gradient = &outputs.loss_input->gradient;
        result->has_loss_input = true;
        result->loss_input_numel = gradient->numel;
        if (parallel) { // this rank's tokens: one run of each local row at its place in the whole
            const int64_t width = batch->token_count > 0 ? gradient->numel / batch->token_count : 0;
            const size_t row_bytes = (size_t)(batch->row_length * width) * parity_dtype_size(gradient->dtype);
            double terms[1 + PARITY_SKETCH_K] = {0}, whole[1 + PARITY_SKETCH_K];
            for (int64_t row = 0; !error && row < batch->rows; row++) {
                parity_tensor run = parity_tensor_wrap((char *)gradient->data + (size_t)row * row_bytes, gradient->dtype,
                                                       PARITY_CPU, PARITY_SHAPE(batch->row_length * width));
                double squared = 0, part[PARITY_SKETCH_K];
                error = parity_tensor_sum_of_squares(exec, &run, &squared);
                if (!error)
                    error = parity_tensor_sketch_at(exec, &run, PARITY_STEP_LOSS_INPUT,
                                                    parity_parallel_token_offset(parallel, batch, row) * width, part);
                terms[0] += squared;
                for (int j = 0; !error && j < PARITY_SKETCH_K; j++) terms[1 + j] += part[j];
            }
            if (!error) error = parity_comm_all_reduce(parallel->world, terms, whole, 1 + PARITY_SKETCH_K, PARITY_F64);
            if (!error) {
                result->loss_input_grad_norm = sqrt(whole[0]);
                memcpy(result->loss_input_grad_sketch, whole + 1, sizeof result->loss_input_grad_sketch);
                result->loss_input_numel *= parallel->ranks;
            }
        } else {
            error = norm_of(exec, gradient, &result->loss_input_grad_norm);
            if (!error) error = parity_tensor_sketch(exec, gradient, PARITY_STEP_LOSS_INPUT, result->loss_input_grad_sketch);
        }
        if (!error && !isfinite(result->loss_input_grad_norm) && !result->first_non_finite[0])
            snprintf(result->first_non_finite, sizeof result->first_non_finite, "gradient of the loss's input (%s)",
                     outputs.loss_input->name);
    }
    if (!error && !isfinite(result->loss) && !result->first_non_finite[0])
        snprintf(result->first_non_finite, sizeof result->first_non_finite, "loss");
    if (!error && result->has_aux_loss && !isfinite(result->aux_loss) && !result->first_non_finite[0])
        snprintf(result->first_non_finite, sizeof result->first_non_finite, "aux_loss");
    parity_tape_release(&tape);
    memset(model->parameter_variables, 0, model->parameters.count * sizeof *model->parameter_variables);
    // What was found so far is the first gradient in parameter order, not where NaN/Inf appeared.
    if (!error && result->first_non_finite[0] && model->locate_non_finite) {
        char where[sizeof result->first_non_finite];
        parity_error *rerun = locate_non_finite(model, exec, batch, want_logits, where, sizeof where);
        char found[sizeof result->first_non_finite];
        memcpy(found, result->first_non_finite, sizeof found);
        if (rerun) {
            char message[160];
            describe(result->first_non_finite, sizeof result->first_non_finite, "%s (a checked rerun to locate it failed: %s)",
                     found, parity_error_format(rerun, message, sizeof message));
            parity_error_free(rerun);
        } else if (where[0]) {
            memcpy(result->first_non_finite, where, sizeof where);
        } else {
            describe(result->first_non_finite, sizeof result->first_non_finite, "%s (not met again in a checked rerun)", found);
        }
    }
    if (error) parity_step_result_release(result);
    return error;
}
