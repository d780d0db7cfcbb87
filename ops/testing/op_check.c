// op_check.c: the engine behind op_check.h.
#include "ops/testing/op_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/cpu_math.h"
#include "ops/testing/blocks.h"
#include "ops/testing/worst_error.h"

static op_check_tensor *next_slot(op_check_state *state, const char *name) {
    if (state->tensor_count >= OP_CHECK_MAX_TENSORS) return NULL;
    op_check_tensor *slot = &state->tensors[state->tensor_count++];
    memset(slot, 0, sizeof *slot);
    snprintf(slot->name, sizeof slot->name, "%s", name);
    return slot;
}

// ---- element loops, on every core (blocks.h) ----

typedef struct rounded_copy {
    parity_tensor *destination;
    const parity_tensor *source; // NULL: NaN everywhere (poison)
    parity_dtype precision;
} rounded_copy;

static void rounded_copy_block(void *raw, int64_t block, int64_t begin, int64_t end) {
    const rounded_copy *copy = raw;
    for (int64_t i = begin; i < end; i++)
        parity_tensor_set(copy->destination, i,
                          copy->source ? parity_round_to_dtype(parity_tensor_get(copy->source, i), copy->precision) : NAN);
}

// destination[i] = source[i] rounded to `precision` (then stored in the destination's dtype).
static void copy_rounded(parity_tensor *destination, const parity_tensor *source, parity_dtype precision) {
    rounded_copy copy = {destination, source, precision};
    op_check_for_blocks(destination->numel, rounded_copy_block, &copy);
}

static void poison(parity_tensor *tensor) {
    if (!tensor->data || !parity_dtype_is_float(tensor->dtype)) return;
    rounded_copy copy = {tensor, NULL, tensor->dtype};
    op_check_for_blocks(tensor->numel, rounded_copy_block, &copy);
}

// An input of `dtype` whose values are first rounded to `precision`.
static parity_tensor *make_input(op_check_state *state, const char *name, bool differentiable, parity_dtype dtype,
                                 parity_dtype precision, op_check_fill fill, double a, double b, int ndim,
                                 const int64_t *shape) {
    op_check_tensor *slot = next_slot(state, name);
    if (!slot) return NULL;
    slot->differentiable = differentiable;
    parity_tensor exact;
    parity_error *error = parity_tensor_alloc(&exact, PARITY_F64, PARITY_CPU, ndim, shape);
    if (error) { parity_error_free(error); return NULL; }
    char stream_name[160];
    snprintf(stream_name, sizeof stream_name, "%s/%s", state->case_name, name);
    error = parity_rng_fill(NULL, &exact, parity_rng_stream_named(state->seed, stream_name),
                            fill == OP_CHECK_UNIFORM ? PARITY_RNG_UNIFORM : PARITY_RNG_NORMAL, a, b);
    if (!error) error = parity_tensor_alloc(&slot->value, dtype, PARITY_CPU, ndim, shape);
    if (!error) {
        copy_rounded(&slot->value, &exact, precision);
        if (differentiable) error = parity_tensor_alloc(&slot->gradient, dtype, PARITY_CPU, ndim, shape);
    }
    parity_tensor_release(&exact);
    if (error) { parity_error_free(error); return NULL; }
    return &slot->value;
}

parity_tensor *op_check_input(op_check_state *state, const char *name, bool differentiable, op_check_fill fill, double a,
                              double b, int ndim, const int64_t *shape) {
    return make_input(state, name, differentiable, state->dtype, state->input_precision, fill, a, b, ndim, shape);
}

parity_tensor *op_check_input_compute(op_check_state *state, const char *name, bool differentiable, op_check_fill fill,
                                      double a, double b, int ndim, const int64_t *shape) {
    return make_input(state, name, differentiable, parity_compute_dtype(state->dtype),
                      parity_compute_dtype(state->input_precision), fill, a, b, ndim, shape);
}

parity_tensor *op_check_input_copy(op_check_state *state, const char *name, bool differentiable, bool compute,
                                   const parity_tensor *source) {
    op_check_tensor *slot = next_slot(state, name);
    if (!slot) return NULL;
    bool is_float = parity_dtype_is_float(source->dtype);
    slot->differentiable = differentiable && is_float;
    parity_dtype dtype = !is_float ? source->dtype : compute ? parity_compute_dtype(state->dtype) : state->dtype;
    parity_dtype precision = compute ? parity_compute_dtype(state->input_precision) : state->input_precision;
    parity_tensor host = {0};
    parity_error *error = parity_tensor_to(&host, source, PARITY_CPU, is_float ? PARITY_F64 : source->dtype);
    if (!error) error = parity_tensor_alloc(&slot->value, dtype, PARITY_CPU, source->ndim, source->shape);
    if (!error && !is_float) memcpy(slot->value.data, host.data, parity_tensor_nbytes(&host));
    if (!error && is_float) copy_rounded(&slot->value, &host, precision);
    if (!error && slot->differentiable) error = parity_tensor_alloc(&slot->gradient, dtype, PARITY_CPU, source->ndim, source->shape);
    parity_tensor_release(&host);
    if (error) { parity_error_free(error); return NULL; }
    return &slot->value;
}

parity_tensor *op_check_indices(op_check_state *state, const char *name, const int64_t *values, int ndim,
                                const int64_t *shape) {
    op_check_tensor *slot = next_slot(state, name);
    if (!slot) return NULL;
    parity_error *error = parity_tensor_alloc(&slot->value, PARITY_I64, PARITY_CPU, ndim, shape);
    if (error) { parity_error_free(error); return NULL; }
    memcpy(slot->value.data, values, parity_tensor_nbytes(&slot->value));
    return &slot->value;
}

// An output of `dtype` whose cotangent values are first rounded to `precision`.
static parity_tensor *make_output(op_check_state *state, const char *name, bool differentiable, parity_dtype dtype,
                                  parity_dtype precision, int ndim, const int64_t *shape) {
    op_check_tensor *slot = next_slot(state, name);
    if (!slot) return NULL;
    slot->is_output = true;
    slot->differentiable = differentiable;
    parity_error *error = parity_tensor_alloc(&slot->value, dtype, PARITY_CPU, ndim, shape);
    if (!error && differentiable) {
        error = parity_tensor_alloc(&slot->gradient, dtype, PARITY_CPU, ndim, shape);
        if (!error) {
            char stream_name[160];
            snprintf(stream_name, sizeof stream_name, "%s/cotangent/%s", state->case_name, name);
            parity_tensor exact;
            error = parity_tensor_alloc(&exact, PARITY_F64, PARITY_CPU, ndim, shape);
            if (!error) {
                error = parity_rng_fill(NULL, &exact, parity_rng_stream_named(state->seed, stream_name),
                                        PARITY_RNG_UNIFORM, -1, 1);
                if (!error) copy_rounded(&slot->gradient, &exact, precision);
                parity_tensor_release(&exact);
            }
        }
    }
    if (error) { parity_error_free(error); return NULL; }
    return &slot->value;
}

parity_tensor *op_check_output_typed(op_check_state *state, const char *name, bool differentiable, parity_dtype dtype,
                                     int ndim, const int64_t *shape) {
    return make_output(state, name, differentiable, dtype, state->input_precision, ndim, shape);
}

parity_tensor *op_check_output(op_check_state *state, const char *name, bool differentiable, int ndim,
                               const int64_t *shape) {
    return make_output(state, name, differentiable, state->dtype, state->input_precision, ndim, shape);
}

parity_tensor *op_check_output_compute(op_check_state *state, const char *name, bool differentiable, int ndim,
                                       const int64_t *shape) {
    return make_output(state, name, differentiable, parity_compute_dtype(state->dtype),
                       parity_compute_dtype(state->input_precision), ndim, shape);
}

static op_check_tensor *find(op_check_state *state, const char *name) {
    for (int i = 0; i < state->tensor_count; i++)
        if (strcmp(state->tensors[i].name, name) == 0) return &state->tensors[i];
    return NULL;
}

parity_tensor *op_check_value(op_check_state *state, const char *name) {
    op_check_tensor *slot = find(state, name);
    if (!slot) return NULL;
    return state->mirrored ? &slot->device_value : &slot->value;
}

parity_tensor *op_check_gradient(op_check_state *state, const char *name) {
    op_check_tensor *slot = find(state, name);
    if (!slot || !slot->differentiable) return NULL;
    return state->mirrored ? &slot->device_gradient : &slot->gradient;
}

void op_check_set_attributes(op_check_state *state, const void *attributes) {
    size_t size = state->op->attributes_size;
    if (size > sizeof state->attributes) return; // op_check_run reports it
    memcpy(state->attributes, attributes, size);
    state->has_attributes = true;
}

void op_check_release(op_check_state *state) {
    for (int i = 0; i < state->tensor_count; i++) {
        parity_tensor_release(&state->tensors[i].guarded_value);
        parity_tensor_release(&state->tensors[i].guarded_gradient);
        parity_tensor_release(&state->tensors[i].value);
        parity_tensor_release(&state->tensors[i].gradient);
        parity_tensor_release(&state->tensors[i].device_value);
        parity_tensor_release(&state->tensors[i].device_gradient);
    }
    parity_saved_release(&state->saved);
    if (state->op) parity_op_release_prepared(state->op, state->prepared);
    memset(state, 0, sizeof *state);
}

void op_check_drop_mirrors(op_check_state *state) {
    if (!state->mirrored) return; // a CPU run: its guarded buffers hold the host tensors themselves
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        parity_tensor_release(&slot->device_value);
        parity_tensor_release(&slot->device_gradient);
        parity_tensor_release(&slot->guarded_value); // on a GPU run they hold the device mirrors
        parity_tensor_release(&slot->guarded_gradient);
    }
    parity_saved_release(&state->saved);
    state->mirrored = false;
}

// A GPU run: every tensor of the state gets a device mirror with the host's bytes.
static parity_error *mirror_to_device(op_check_state *state) {
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        if (slot->value.data)
            PARITY_TRY_CONTEXT(parity_tensor_to(&slot->device_value, &slot->value, state->device, slot->value.dtype),
                               "mirroring %s to the device", slot->name);
        if (slot->gradient.data)
            PARITY_TRY_CONTEXT(parity_tensor_to(&slot->device_gradient, &slot->gradient, state->device, slot->gradient.dtype),
                               "mirroring d%s to the device", slot->name);
    }
    state->mirrored = true;
    return NULL;
}

// Host -> device (upload) or device -> host of one mirrored tensor; a no-op on CPU runs.
static parity_error *sync_mirror(op_check_state *state, parity_tensor *host, parity_tensor *device, bool upload,
                                 const char *name) {
    if (!state->mirrored || !host->data) return NULL;
    PARITY_TRY_CONTEXT(upload ? parity_tensor_copy(device, host) : parity_tensor_copy(host, device), "copying %s %s the device",
                       name, upload ? "to" : "from");
    return NULL;
}

// The tensors of the call by the op's slots (what the backend gets: device mirrors on a GPU run), and
// with `gradients` their gradients: for inputs the ones the backward writes, for outputs the cotangents.
static void slot_tensors(op_check_state *state, parity_tensor **tensors, parity_tensor **gradients) {
    for (int i = 0; i < state->op->slot_count; i++) {
        tensors[i] = op_check_value(state, state->op->slots[i].name);
        if (gradients) gradients[i] = op_check_gradient(state, state->op->slots[i].name);
    }
}

// What setup made must be the op's call: a tensor for every slot that is not optional, no tensor that
// is not a slot (a misspelt name), and the attributes when the op has any.
static parity_error *check_setup(const op_check_case *test_case, op_check_state *state) {
    const parity_op_descriptor *op = test_case->op;
    for (int i = 0; i < op->slot_count; i++)
        if (!op->slots[i].optional && !find(state, op->slots[i].name))
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: setup made no %s", op->name, test_case->name,
                                op->slots[i].name);
    for (int t = 0; t < state->tensor_count; t++) {
        bool known = false;
        for (int i = 0; i < op->slot_count && !known; i++) known = strcmp(op->slots[i].name, state->tensors[t].name) == 0;
        if (!known)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: setup made %s, which is none of the op's slots", op->name,
                                test_case->name, state->tensors[t].name);
    }
    if (op->attributes_size > sizeof state->attributes)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: attributes of %zu bytes, op_check holds %zu", op->name,
                            op->attributes_size, sizeof state->attributes);
    if (op->attributes_size && !state->has_attributes)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: setup set no attributes", op->name, test_case->name);
    return NULL;
}

// What the backend needs beyond the slots (the descriptor's prepare: attention's block mask for a
// backend that runs on one), from the tensors it will get; after setup and mirroring, once per state.
static parity_error *prepare_call(const op_check_case *test_case, op_check_state *state) {
    parity_tensor *tensors[PARITY_OP_MAX_SLOTS];
    slot_tensors(state, tensors, NULL);
    PARITY_TRY_CONTEXT(parity_op_prepare(state->op, state->backend, state->attributes, tensors, &state->prepared),
                       "%s [%s] preparing %s", test_case->op->name, test_case->name, state->backend->name);
    return NULL;
}

// ---- sentinels around the tensors a backend writes ----

// The tensor the backend writes for `slot`: its output value or its input gradient (host on a CPU
// run, the device mirror on a GPU run), with the buffer that guards it.
static parity_tensor *written_tensor(op_check_state *state, op_check_tensor *slot, parity_tensor **guarded) {
    if (slot->is_output) {
        *guarded = &slot->guarded_value;
        return state->mirrored ? &slot->device_value : &slot->value;
    }
    *guarded = &slot->guarded_gradient;
    if (!slot->differentiable) return NULL;
    return state->mirrored ? &slot->device_gradient : &slot->gradient;
}

// Moves `tensor` into the middle of a new buffer (`guarded`, on the tensor's device) of
// OP_CHECK_GUARD_BYTES sentinel bytes on each side; the tensor becomes a view of the middle, with the
// same contents.
static parity_error *guard_tensor(parity_tensor *tensor, parity_tensor *guarded, const char *name) {
    if (!tensor->data || tensor->numel == 0) return NULL;
    size_t bytes = parity_tensor_nbytes(tensor), total = bytes + 2 * OP_CHECK_GUARD_BYTES;
    unsigned char *host = malloc(total);
    if (!host) return PARITY_ERROR(PARITY_ERROR_MEMORY, "sentinels around %s (%zu bytes)", name, total);
    memset(host, OP_CHECK_GUARD_BYTE, total);
    parity_tensor middle = parity_tensor_wrap(host + OP_CHECK_GUARD_BYTES, tensor->dtype, PARITY_CPU, tensor->ndim, tensor->shape);
    parity_error *error = parity_tensor_copy(&middle, tensor);
    parity_tensor whole = parity_tensor_wrap(host, PARITY_U8, PARITY_CPU, 1, (int64_t[]){(int64_t)total});
    if (!error) error = parity_tensor_to(guarded, &whole, tensor->device, PARITY_U8);
    free(host);
    if (error) return parity_error_wrap(error, __FILE__, __LINE__, "sentinels around %s", name);
    parity_tensor view = parity_tensor_wrap((unsigned char *)guarded->data + OP_CHECK_GUARD_BYTES, tensor->dtype, tensor->device,
                                            tensor->ndim, tensor->shape);
    parity_tensor_release(tensor);
    *tensor = view;
    return NULL;
}

static parity_error *guard_written(op_check_state *state) {
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        parity_tensor *guarded, *tensor = written_tensor(state, slot, &guarded);
        if (tensor) PARITY_TRY(guard_tensor(tensor, guarded, slot->name));
    }
    return NULL;
}

// Records in state->guard_damage the first overwritten sentinel of the tensors `call` wrote.
static parity_error *check_guards(op_check_state *state, bool outputs, const char *call) {
    if (!state->sentinels || state->guard_damage[0]) return NULL;
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        if (slot->is_output != outputs) continue;
        parity_tensor *guarded, *tensor = written_tensor(state, slot, &guarded);
        if (!tensor || !guarded->data) continue;
        // only the two guards come back to the host, not the tensor between them
        unsigned char bytes[2][OP_CHECK_GUARD_BYTES];
        size_t offsets[2] = {0, parity_tensor_nbytes(guarded) - OP_CHECK_GUARD_BYTES}, changed[2] = {0, 0};
        for (int side = 0; side < 2; side++) {
            parity_tensor guard = parity_tensor_wrap((unsigned char *)guarded->data + offsets[side], PARITY_U8, guarded->device, 1,
                                                     (int64_t[]){OP_CHECK_GUARD_BYTES});
            parity_tensor host = parity_tensor_wrap(bytes[side], PARITY_U8, PARITY_CPU, 1, (int64_t[]){OP_CHECK_GUARD_BYTES});
            PARITY_TRY_CONTEXT(parity_tensor_copy(&host, &guard), "reading the sentinels of %s", slot->name);
            for (size_t b = 0; b < OP_CHECK_GUARD_BYTES; b++) changed[side] += bytes[side][b] != OP_CHECK_GUARD_BYTE;
        }
        size_t before = changed[0], after = changed[1];
        if (before || after) {
            snprintf(state->guard_damage, sizeof state->guard_damage,
                     "%s%s: %zu of the %d sentinel bytes before it and %zu of those after it overwritten by the %s",
                     slot->is_output ? "" : "d", slot->name, before, OP_CHECK_GUARD_BYTES, after, call);
            return NULL;
        }
    }
    return NULL;
}

static parity_error *run_forward(const op_check_case *test_case, op_check_state *state) {
    parity_saved_release(&state->saved);
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        if (slot->is_output) poison(&slot->value);
        // inputs too: finite differences perturb the host values between forwards
        PARITY_TRY(sync_mirror(state, &slot->value, &slot->device_value, true, slot->name));
    }
    parity_tensor *tensors[PARITY_OP_MAX_SLOTS];
    slot_tensors(state, tensors, NULL);
    PARITY_TRY_CONTEXT(test_case->op->forward(state->exec, state->backend->kernels, state->attributes, tensors, &state->saved),
                       "%s [%s] forward with %s", test_case->op->name, test_case->name, state->backend->name);
    for (int i = 0; i < state->tensor_count; i++)
        if (state->tensors[i].is_output)
            PARITY_TRY(sync_mirror(state, &state->tensors[i].value, &state->tensors[i].device_value, false,
                                   state->tensors[i].name));
    return check_guards(state, true, "forward");
}

static parity_error *run_backward(const op_check_case *test_case, op_check_state *state) {
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        if (slot->is_output || !slot->differentiable) continue;
        poison(&slot->gradient);
        PARITY_TRY(sync_mirror(state, &slot->gradient, &slot->device_gradient, true, slot->name));
    }
    parity_tensor *tensors[PARITY_OP_MAX_SLOTS], *gradients[PARITY_OP_MAX_SLOTS];
    slot_tensors(state, tensors, gradients);
    PARITY_TRY_CONTEXT(
        test_case->op->backward(state->exec, state->backend->kernels, state->attributes, tensors, gradients, &state->saved),
        "%s [%s] backward with %s", test_case->op->name, test_case->name, state->backend->name);
    for (int i = 0; i < state->tensor_count; i++) {
        op_check_tensor *slot = &state->tensors[i];
        if (slot->is_output || !slot->differentiable) continue;
        PARITY_TRY(sync_mirror(state, &slot->gradient, &slot->device_gradient, false, slot->name));
    }
    PARITY_TRY(check_guards(state, false, "backward"));
    return check_guards(state, true, "backward");
}

parity_error *op_check_run(const op_check_case *test_case, op_check_run_options options, op_check_state *state) {
    memset(state, 0, sizeof *state);
    state->op = test_case->op;
    state->case_name = test_case->name;
    state->dtype = options.dtype;
    state->input_precision = options.input_precision;
    state->device = options.device;
    PARITY_TRY(op_check_exec(options.device, &state->exec));
    state->seed = options.seed ? options.seed : 1234;
    PARITY_TRY(parity_registry_register_builtins());
    const char *backend = options.backend ? options.backend : "eager";
    PARITY_TRY(parity_registry_resolve(test_case->op->name, backend, state->device, &state->backend));
    PARITY_TRY_CONTEXT(test_case->setup(state, test_case->params), "%s [%s] setup", test_case->op->name, test_case->name);
    for (int i = 0; i < state->tensor_count; i++)
        if (!state->tensors[i].value.data && state->tensors[i].value.numel > 0)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: setup could not allocate %s", test_case->op->name,
                                test_case->name, state->tensors[i].name);
    PARITY_TRY(check_setup(test_case, state));
    if (state->device.type != PARITY_DEVICE_CPU)
        PARITY_TRY_CONTEXT(mirror_to_device(state), "%s [%s]", test_case->op->name, test_case->name);
    state->sentinels = options.sentinels;
    if (state->sentinels) PARITY_TRY_CONTEXT(guard_written(state), "%s [%s]", test_case->op->name, test_case->name);
    PARITY_TRY(prepare_call(test_case, state));
    PARITY_TRY(run_forward(test_case, state));
    PARITY_TRY(run_backward(test_case, state));
    return NULL;
}

parity_error *op_check_rerun(const op_check_case *test_case, op_check_state *state) {
    PARITY_TRY(run_forward(test_case, state));
    return run_backward(test_case, state);
}

// Records in report->non_finite the first NaN/Inf element of `tensor` ("<prefix><name>[i]"), unless
// an earlier one is recorded.
typedef struct non_finite_job {
    const parity_tensor *tensor;
    int64_t *first; // per block: its first NaN/Inf element, or -1
} non_finite_job;

static void non_finite_block(void *raw, int64_t block, int64_t begin, int64_t end) {
    const non_finite_job *job = raw;
    job->first[block] = -1;
    for (int64_t i = begin; i < end; i++)
        if (!isfinite(parity_tensor_get(job->tensor, i))) {
            job->first[block] = i;
            return;
        }
}

static void note_non_finite(op_check_error_report *report, const parity_tensor *tensor, const char *prefix,
                            const char *name) {
    if (report->non_finite[0] || !tensor->data || !parity_dtype_is_float(tensor->dtype)) return;
    int64_t blocks = op_check_block_count(tensor->numel), first = -1;
    int64_t *firsts = calloc(blocks > 0 ? (size_t)blocks : 1, sizeof *firsts);
    if (!firsts) { // out of memory: the serial scan
        for (int64_t i = 0; i < tensor->numel && first < 0; i++)
            if (!isfinite(parity_tensor_get(tensor, i))) first = i;
    } else {
        non_finite_job job = {tensor, firsts};
        op_check_for_blocks(tensor->numel, non_finite_block, &job);
        for (int64_t b = 0; b < blocks && first < 0; b++) first = firsts[b];
        free(firsts);
    }
    if (first >= 0) snprintf(report->non_finite, sizeof report->non_finite, "%s%s[%lld]", prefix, name, (long long)first);
}

// The run's outputs and the input gradients its backward wrote, in slot order.
static void note_non_finite_state(op_check_error_report *report, const op_check_state *state) {
    for (int i = 0; i < state->tensor_count; i++) {
        const op_check_tensor *slot = &state->tensors[i];
        if (slot->is_output) note_non_finite(report, &slot->value, "", slot->name);
        else if (slot->differentiable) note_non_finite(report, &slot->gradient, "d", slot->name);
    }
}

bool op_check_within(const op_check_error_report *report, double bound, char *message, size_t message_size) {
    if (report->non_finite[0]) {
        snprintf(message, message_size, "%s is NaN/Inf", report->non_finite);
        return false;
    }
    if (report->tensors_compared == 0) {
        snprintf(message, message_size, "no tensor compared");
        return false;
    }
    if (isnan(bound) || parity_test_worse(report->worst_error, bound)) { // a NaN bound (from a NaN reference error) fails
        snprintf(message, message_size, "%s relative error %.3e > %.3g", report->worst_tensor, report->worst_error, bound);
        return false;
    }
    if (message_size) message[0] = '\0';
    return true;
}

// ---- batch invariance ----

static bool is_shared(const op_check_row_layout *layout, const char *name) {
    for (int i = 0; layout->shared && layout->shared[i]; i++)
        if (strcmp(layout->shared[i], name) == 0) return true;
    return false;
}

// Rows of one per-row tensor: the product of its first row_dims dimensions (-1: it has fewer).
static int64_t rows_of(const parity_tensor *tensor, int row_dims) {
    if (tensor->ndim < row_dims) return -1;
    int64_t rows = 1;
    for (int d = 0; d < row_dims; d++) rows *= tensor->shape[d];
    return rows;
}

parity_error *op_check_row_count(const op_check_state *state, const op_check_row_layout *layout, int64_t *rows) {
    *rows = -1;
    const char *first = NULL;
    if (layout->row_dims < 1)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: a row layout needs row_dims >= 1", state->case_name);
    for (int i = 0; i < state->tensor_count; i++) {
        const op_check_tensor *slot = &state->tensors[i];
        if (is_shared(layout, slot->name) || strcmp(slot->name, "cu_seqlens") == 0) continue;
        int64_t count = rows_of(&slot->value, layout->row_dims);
        if (count < 0 || (*rows >= 0 && count != *rows))
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: %s has %lld rows of %d leading dimensions, %s has %lld",
                                state->op->name, state->case_name, slot->name, (long long)count, layout->row_dims,
                                first ? first : "none before it", (long long)*rows);
        *rows = count;
        first = slot->name;
    }
    if (*rows < 0) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: no per-row tensor", state->op->name, state->case_name);
    return NULL;
}

// `out` (allocated here) = rows[0..count) of `source`, whose first row_dims dimensions are `total` rows.
static parity_error *gather_rows(parity_tensor *out, const parity_tensor *source, int row_dims, int64_t total,
                                 const int64_t *rows, int64_t count) {
    int64_t shape[PARITY_MAX_DIMS];
    for (int d = 0; d < source->ndim; d++) shape[d] = d < row_dims - 1 ? 1 : d == row_dims - 1 ? count : source->shape[d];
    PARITY_TRY(parity_tensor_alloc(out, source->dtype, PARITY_CPU, source->ndim, shape));
    size_t row_bytes = total ? parity_tensor_nbytes(source) / (size_t)total : 0;
    for (int64_t r = 0; r < count && row_bytes; r++)
        memcpy((char *)out->data + (size_t)r * row_bytes, (const char *)source->data + (size_t)rows[r] * row_bytes, row_bytes);
    return NULL;
}

static parity_error *copy_whole(parity_tensor *out, const parity_tensor *source) {
    PARITY_TRY(parity_tensor_alloc(out, source->dtype, PARITY_CPU, source->ndim, source->shape));
    if (parity_tensor_nbytes(source)) memcpy(out->data, source->data, parity_tensor_nbytes(source));
    return NULL;
}

static parity_error *make_rows_state(const op_check_state *whole, const op_check_row_layout *layout, const int64_t *rows,
                                     int64_t count, const int64_t *cu_seqlens, int64_t documents, op_check_state *out) {
    int64_t total;
    PARITY_TRY(op_check_row_count(whole, layout, &total));
    for (int64_t r = 0; r < count; r++)
        if (rows[r] < 0 || rows[r] >= total)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: row %lld of a batch of %lld", whole->case_name, (long long)rows[r],
                                (long long)total);
    for (int i = 0; i < whole->tensor_count; i++) {
        const op_check_tensor *source = &whole->tensors[i];
        op_check_tensor *slot = next_slot(out, source->name);
        if (!slot) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: too many tensors", whole->case_name);
        slot->is_output = source->is_output;
        slot->differentiable = source->differentiable;
        if (strcmp(source->name, "cu_seqlens") == 0 && cu_seqlens) {
            parity_tensor offsets = parity_tensor_wrap((void *)cu_seqlens, PARITY_I64, PARITY_CPU, 1, (int64_t[]){documents + 1});
            PARITY_TRY(copy_whole(&slot->value, &offsets));
            continue;
        }
        bool per_row = !is_shared(layout, source->name) && strcmp(source->name, "cu_seqlens") != 0;
        if (per_row) PARITY_TRY(gather_rows(&slot->value, &source->value, layout->row_dims, total, rows, count));
        else PARITY_TRY(copy_whole(&slot->value, &source->value));
        if (!source->gradient.data) continue;
        if (source->is_output) { // the cotangent
            if (per_row) PARITY_TRY(gather_rows(&slot->gradient, &source->gradient, layout->row_dims, total, rows, count));
            else PARITY_TRY(copy_whole(&slot->gradient, &source->gradient));
        } else {
            PARITY_TRY(parity_tensor_alloc(&slot->gradient, slot->value.dtype, PARITY_CPU, slot->value.ndim, slot->value.shape));
        }
    }
    return NULL;
}

parity_error *op_check_run_rows(const op_check_case *test_case, const op_check_state *whole, const op_check_row_layout *layout,
                                const int64_t *rows, int64_t count, const int64_t *cu_seqlens, int64_t documents,
                                op_check_state *out) {
    memset(out, 0, sizeof *out);
    out->op = whole->op;
    out->case_name = whole->case_name;
    out->dtype = whole->dtype;
    out->input_precision = whole->input_precision;
    out->device = whole->device;
    out->exec = whole->exec;
    out->seed = whole->seed;
    out->backend = whole->backend;
    out->has_attributes = whole->has_attributes;
    memcpy(out->attributes, whole->attributes, sizeof out->attributes);
    PARITY_TRY_CONTEXT(make_rows_state(whole, layout, rows, count, cu_seqlens, documents, out), "%s [%s], a batch of %lld rows",
                       test_case->op->name, test_case->name, (long long)count);
    if (out->device.type != PARITY_DEVICE_CPU)
        PARITY_TRY_CONTEXT(mirror_to_device(out), "%s [%s]", test_case->op->name, test_case->name);
    PARITY_TRY(prepare_call(test_case, out)); // its own rows' visibility, not the whole batch's
    PARITY_TRY(run_forward(test_case, out));
    PARITY_TRY(run_backward(test_case, out));
    return NULL;
}

bool op_check_rows_equal(const op_check_state *whole, const op_check_state *part, const op_check_row_layout *layout,
                         const int64_t *rows, int64_t count, char *differing, size_t differing_size) {
    int64_t total;
    parity_error *error = op_check_row_count(whole, layout, &total);
    if (error || whole->tensor_count != part->tensor_count) {
        if (differing) snprintf(differing, differing_size, "%s", error ? parity_error_message(error) : "different tensors");
        parity_error_free(error);
        return false;
    }
    for (int i = 0; i < whole->tensor_count; i++) {
        const op_check_tensor *a = &whole->tensors[i], *b = &part->tensors[i];
        if (is_shared(layout, a->name) || strcmp(a->name, "cu_seqlens") == 0) continue;
        const parity_tensor *x = a->is_output ? &a->value : &a->gradient, *y = b->is_output ? &b->value : &b->gradient;
        if (!x->data) continue; // an input without a gradient
        size_t row_bytes = total ? parity_tensor_nbytes(x) / (size_t)total : 0;
        if (parity_tensor_nbytes(y) != row_bytes * (size_t)count) {
            if (differing) snprintf(differing, differing_size, "%s%s has %zu bytes, expected %zu", a->is_output ? "" : "d",
                                    a->name, parity_tensor_nbytes(y), row_bytes * (size_t)count);
            return false;
        }
        for (int64_t r = 0; r < count && row_bytes; r++)
            if (memcmp((const char *)y->data + (size_t)r * row_bytes, (const char *)x->data + (size_t)rows[r] * row_bytes,
                       row_bytes) != 0) {
                if (differing)
                    snprintf(differing, differing_size, "%s%s row %lld (row %lld of the whole batch)", a->is_output ? "" : "d",
                             a->name, (long long)r, (long long)rows[r]);
                return false;
            }
    }
    return true;
}

// sum over differentiable outputs of <cotangent, output>
static double cotangent_loss(const op_check_state *state) {
    double loss = 0;
    for (int i = 0; i < state->tensor_count; i++) {
        const op_check_tensor *slot = &state->tensors[i];
        if (!slot->is_output || !slot->differentiable) continue;
        for (int64_t j = 0; j < slot->value.numel; j++)
            loss += parity_tensor_get(&slot->gradient, j) * parity_tensor_get(&slot->value, j);
    }
    return loss;
}

parity_error *op_check_finite_differences(const op_check_case *test_case, const char *backend,
                                          op_check_error_report *report) {
    memset(report, 0, sizeof *report);
    op_check_state state;
    op_check_run_options options = {.backend = backend, .dtype = PARITY_F64};
    parity_error *error = op_check_run(test_case, options, &state);
    if (error) {
        op_check_release(&state);
        return error;
    }
    note_non_finite_state(report, &state);
    int limit = test_case->max_checked_elements ? test_case->max_checked_elements : 48;
    for (int i = 0; i < state.tensor_count && !error; i++) {
        op_check_tensor *slot = &state.tensors[i];
        if (slot->is_output || !slot->differentiable) continue;
        int64_t count = slot->value.numel;
        int64_t step = count > limit ? count / limit : 1;
        double difference_squared = 0, reference_squared = 0;
        int64_t checked = 0;
        for (int64_t j = (step > 1 ? step / 2 : 0); j < count && !error; j += step) {
            double original = parity_tensor_get(&slot->value, j);
            double h = 1e-6 * fmax(1.0, fabs(original));
            parity_tensor_set(&slot->value, j, original + h);
            error = run_forward(test_case, &state);
            double loss_plus = cotangent_loss(&state);
            parity_tensor_set(&slot->value, j, original - h);
            if (!error) error = run_forward(test_case, &state);
            double loss_minus = cotangent_loss(&state);
            parity_tensor_set(&slot->value, j, original);
            double numeric = (loss_plus - loss_minus) / (2 * h);
            double analytic = parity_tensor_get(&slot->gradient, j);
            difference_squared += (numeric - analytic) * (numeric - analytic);
            reference_squared += numeric * numeric;
            if (isnan(analytic)) difference_squared = INFINITY;
            checked++;
        }
        // Normwise relative error, with a floor of 1e-4 per element in the denominator: central
        // differences with h = 1e-6 carry ~1e-10 absolute round-off, which must not fail a gradient
        // that is legitimately ~0.
        double floor = 1e-4 * sqrt((double)(checked > 0 ? checked : 1));
        double relative = sqrt(difference_squared) / fmax(sqrt(reference_squared), floor);
        if (reference_squared == 0 && difference_squared == 0) relative = 0;
        report->tensors_compared++;
        if (report->tensors_compared == 1 || parity_test_worse(relative, report->worst_error)) {
            report->worst_error = relative;
            snprintf(report->worst_tensor, sizeof report->worst_tensor, "d%s", slot->name);
        }
    }
    op_check_release(&state);
    return error;
}

// Per block of two same-sized tensors: the squared difference and squared reference sums, the largest
// |difference| (NaN when the candidate has a NaN/Inf there) and |reference|, and whether a NaN is in one
// and not the other (or in the candidate).
typedef struct pair_partial {
    double squared_error, squared_reference, max_error, max_reference;
    bool nan_mismatch;
} pair_partial;

typedef struct pair_job {
    const parity_tensor *reference, *candidate;
    pair_partial *partials;
} pair_job;

static void pair_block(void *raw, int64_t block, int64_t begin, int64_t end) {
    const pair_job *job = raw;
    pair_partial partial = {0};
    for (int64_t i = begin; i < end; i++) {
        double r = parity_tensor_get(job->reference, i), c = parity_tensor_get(job->candidate, i);
        if (isnan(r) != isnan(c) || isnan(c)) partial.nan_mismatch = true;
        partial.max_error = parity_test_max(partial.max_error, isfinite(c) ? fabs(c - r) : NAN);
        partial.max_reference = parity_test_max(partial.max_reference, fabs(r));
        partial.squared_error += (c - r) * (c - r);
        partial.squared_reference += r * r;
    }
    job->partials[block] = partial;
}

// The partials of every block combined in block order (the same sums whatever the core count).
static bool compare_pair(const parity_tensor *reference, const parity_tensor *candidate, pair_partial *out) {
    memset(out, 0, sizeof *out);
    int64_t blocks = op_check_block_count(reference->numel);
    pair_partial *partials = calloc(blocks > 0 ? (size_t)blocks : 1, sizeof *partials);
    if (!partials) return false;
    pair_job job = {reference, candidate, partials};
    op_check_for_blocks(reference->numel, pair_block, &job);
    for (int64_t b = 0; b < blocks; b++) {
        out->squared_error += partials[b].squared_error;
        out->squared_reference += partials[b].squared_reference;
        out->max_error = parity_test_max(out->max_error, partials[b].max_error);
        out->max_reference = parity_test_max(out->max_reference, partials[b].max_reference);
        out->nan_mismatch |= partials[b].nan_mismatch;
    }
    free(partials);
    return true;
}

double op_check_relative_error(const parity_tensor *reference, const parity_tensor *candidate) {
    if (reference->numel != candidate->numel) return INFINITY;
    pair_partial pair;
    if (!compare_pair(reference, candidate, &pair) || pair.nan_mismatch) return INFINITY;
    if (pair.squared_reference == 0) return sqrt(pair.squared_error);
    return sqrt(pair.squared_error / pair.squared_reference);
}

parity_error *op_check_compare_states(const op_check_state *reference, const op_check_state *candidate,
                                      op_check_error_report *report) {
    memset(report, 0, sizeof *report);
    if (reference->tensor_count != candidate->tensor_count)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "runs of %s have different tensors", reference->case_name);
    note_non_finite_state(report, candidate);
    for (int i = 0; i < reference->tensor_count; i++) {
        const op_check_tensor *a = &reference->tensors[i], *b = &candidate->tensors[i];
        const parity_tensor *pair[2][2] = {{&a->value, &b->value}, {&a->gradient, &b->gradient}};
        for (int which = 0; which < 2; which++) {
            if (which == 0 && !a->is_output) continue;                    // inputs are identical by construction
            if (which == 1 && (a->is_output || !a->differentiable)) continue; // cotangents likewise
            if (!parity_dtype_is_float(pair[which][0]->dtype)) continue;
            double error = op_check_relative_error(pair[which][0], pair[which][1]);
            report->tensors_compared++;
            if (report->tensors_compared == 1 || parity_test_worse(error, report->worst_error)) {
                report->worst_error = error;
                snprintf(report->worst_tensor, sizeof report->worst_tensor, "%s%s", which ? "d" : "", a->name);
            }
        }
    }
    return NULL;
}

parity_error *op_check_max_errors(const op_check_state *reference, const op_check_state *candidate,
                                  op_check_max_error *errors, int capacity, int *count) {
    *count = 0;
    if (reference->tensor_count != candidate->tensor_count)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "runs of %s have different tensors", reference->case_name);
    for (int i = 0; i < reference->tensor_count; i++) {
        const op_check_tensor *a = &reference->tensors[i], *b = &candidate->tensors[i];
        if (!a->is_output && !a->differentiable) continue; // data and non-differentiable inputs: identical by construction
        const parity_tensor *x = a->is_output ? &a->value : &a->gradient, *y = b->is_output ? &b->value : &b->gradient;
        if (!parity_dtype_is_float(x->dtype)) continue;
        if (x->numel != y->numel)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: %s%s has %lld elements in one run, %lld in the other",
                                reference->case_name, a->is_output ? "" : "d", a->name, (long long)x->numel,
                                (long long)y->numel);
        if (*count == capacity)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: more than %d tensors to compare", reference->case_name, capacity);
        op_check_max_error *entry = &errors[(*count)++];
        snprintf(entry->tensor, sizeof entry->tensor, "%s%s", a->is_output ? "" : "d", a->name);
        pair_partial pair;
        if (!compare_pair(x, y, &pair))
            return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: comparing %s", reference->case_name, entry->tensor);
        entry->max_error = pair.max_error;
        entry->max_reference = pair.max_reference;
        double squared_error = pair.squared_error, squared_reference = pair.squared_reference;
        // NaN/Inf in the candidate makes the sum NaN/Inf; an all-zero reference gives the error's own RMS
        entry->relative_rms = !isfinite(squared_error) ? NAN
                              : squared_reference > 0 ? sqrt(squared_error / squared_reference)
                                                      : sqrt(squared_error / (double)(x->numel > 0 ? x->numel : 1));
    }
    return NULL;
}

bool op_check_bitwise_equal(const op_check_state *a, const op_check_state *b, char *differing, size_t differing_size) {
    for (int i = 0; i < a->tensor_count; i++) {
        const parity_tensor *pairs[2][2] = {{&a->tensors[i].value, &b->tensors[i].value},
                                            {&a->tensors[i].gradient, &b->tensors[i].gradient}};
        for (int which = 0; which < 2; which++) {
            const parity_tensor *x = pairs[which][0], *y = pairs[which][1];
            if (!x->data) continue;
            if (parity_tensor_nbytes(x) != parity_tensor_nbytes(y) || memcmp(x->data, y->data, parity_tensor_nbytes(x)) != 0) {
                if (differing) snprintf(differing, differing_size, "%s%s", which ? "d" : "", a->tensors[i].name);
                return false;
            }
        }
    }
    return true;
}
