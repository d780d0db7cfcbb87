// op_verdict.c: see op_verdict.h.
#include "ops/testing/op_verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/testing/worst_error.h"

const char *op_verdict_outcome_name(op_verdict_outcome outcome) {
    switch (outcome) {
    case OP_VERDICT_PASS: return "pass";
    case OP_VERDICT_FAIL: return "FAIL";
    case OP_VERDICT_UNSUPPORTED: return "not supported";
    }
    return "?";
}

double op_verdict_floor(parity_dtype dtype) {
    switch (dtype) {
    // the floors of the op tests (suites/tests/test_ops_gpu.c): room for a last rounding or a
    // summation order that differs where eager's own error is ~0; in fp64 eager is the truth
    case PARITY_BF16: return 1e-3;
    case PARITY_F32: return 1e-6;
    default: return 1e-12;
    }
}

static void unsupported(op_verdict *verdict, const char *reason) {
    verdict->outcome = OP_VERDICT_UNSUPPORTED;
    snprintf(verdict->reason, sizeof verdict->reason, "%s", reason);
}

// A run of the backend under test: its device and dtype, sentinels around what it writes.
static op_check_run_options candidate_run(const op_verdict_options *options) {
    return (op_check_run_options){.backend = options->backend, .dtype = options->dtype, .input_precision = options->dtype,
                                  .seed = options->seed, .device = options->device, .sentinels = true};
}

// The candidate's run; an UNSUPPORTED error from the backend becomes the verdict (*refused set).
static parity_error *run_candidate(const op_check_case *test_case, const op_verdict_options *options, op_check_state *state,
                                   op_verdict *verdict, bool *refused) {
    *refused = false;
    parity_error *error = op_check_run(test_case, candidate_run(options), state);
    if (error && parity_error_kind_of(error) == PARITY_ERROR_UNSUPPORTED) {
        unsupported(verdict, parity_error_message(error));
        parity_error_free(error);
        op_check_release(state);
        *refused = true;
        return NULL;
    }
    if (error) op_check_release(state);
    return error;
}

static void fail(op_verdict *verdict, const char *reason) {
    if (verdict->outcome == OP_VERDICT_FAIL) return; // the first reason stays
    verdict->outcome = OP_VERDICT_FAIL;
    snprintf(verdict->reason, sizeof verdict->reason, "%s", reason);
}

// The per-tensor numbers from the maxima of candidate and eager against the truth.
static parity_error *measure(const op_check_state *truth, const op_check_state *eager, const op_check_state *candidate,
                             parity_dtype dtype, op_verdict *verdict) {
    op_check_max_error cand[OP_CHECK_MAX_TENSORS], base[OP_CHECK_MAX_TENSORS];
    int count = 0, base_count = 0;
    PARITY_TRY(op_check_max_errors(truth, candidate, cand, OP_CHECK_MAX_TENSORS, &count));
    if (eager) PARITY_TRY(op_check_max_errors(truth, eager, base, OP_CHECK_MAX_TENSORS, &base_count));
    if (eager && base_count != count)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: eager has %d tensors to compare, the candidate %d", truth->case_name,
                            base_count, count);
    verdict->tensor_count = count;
    verdict->worst = -1;
    double floor = op_verdict_floor(dtype);
    for (int i = 0; i < count; i++) {
        op_verdict_tensor *entry = &verdict->tensors[i];
        snprintf(entry->tensor, sizeof entry->tensor, "%.47s", cand[i].tensor);
        double scale = cand[i].max_reference > 0 ? cand[i].max_reference : 1;
        double eager_error = eager ? base[i].max_error : 0;
        entry->nmse = cand[i].relative_rms * cand[i].relative_rms;
        entry->max_relative = cand[i].max_error / scale;
        entry->eager_max_relative = eager_error / scale;
        entry->allowance = 2 * eager_error + floor * cand[i].max_reference;
        // an all-zero truth that eager also gets exactly: the floor of one unit of the tensor's scale
        if (entry->allowance == 0) entry->allowance = floor;
        entry->ratio = isnan(cand[i].max_error) || isnan(entry->allowance) ? NAN : cand[i].max_error / entry->allowance;
        if (verdict->worst < 0 || parity_test_worse(entry->ratio, verdict->tensors[verdict->worst].ratio)) verdict->worst = i;
    }
    return NULL;
}

parity_error *op_verdict_reference_run(const op_check_case *test_case, parity_dtype dtype, parity_device device,
                                       uint64_t seed, op_verdict_reference *out) {
    memset(out, 0, sizeof *out);
    out->dtype = dtype;
    out->device = device;
    out->seed = seed;
    out->with_eager = dtype != PARITY_F64;
    parity_error *error = op_check_run(
        test_case, (op_check_run_options){.dtype = PARITY_F64, .input_precision = dtype, .seed = seed, .device = device},
        &out->truth);
    if (error) {
        op_check_release(&out->truth);
        return parity_error_wrap(error, __FILE__, __LINE__, "the fp64 eager reference");
    }
    op_check_drop_mirrors(&out->truth); // kept for its host tensors while the candidates use the device
    if (!out->with_eager) return NULL;
    error = op_check_run(
        test_case, (op_check_run_options){.dtype = dtype, .input_precision = dtype, .seed = seed, .device = device}, &out->eager);
    if (error) {
        op_check_release(&out->eager);
        op_check_release(&out->truth);
        return parity_error_wrap(error, __FILE__, __LINE__, "eager in %s", parity_dtype_name(dtype));
    }
    op_check_drop_mirrors(&out->eager);
    return NULL;
}

void op_verdict_reference_release(op_verdict_reference *reference) {
    op_check_release(&reference->truth);
    if (reference->with_eager) op_check_release(&reference->eager);
    memset(reference, 0, sizeof *reference);
}

// The verdict's outcome and reason from its numbers, the first failure named.
static void decide(op_verdict *verdict, parity_dtype dtype) {
    verdict->outcome = OP_VERDICT_PASS;
    char text[320];
    if (verdict->non_finite[0]) {
        snprintf(text, sizeof text, "%s is NaN/Inf", verdict->non_finite);
        fail(verdict, text);
    }
    if (verdict->guard_damage[0]) {
        snprintf(text, sizeof text, "out-of-bounds write: %s", verdict->guard_damage);
        fail(verdict, text);
    }
    if (verdict->tensor_count == 0) fail(verdict, "no tensor compared");
    if (verdict->worst >= 0) {
        const op_verdict_tensor *worst = &verdict->tensors[verdict->worst];
        if (!(worst->ratio <= 1)) {
            snprintf(text, sizeof text, "%s max error %.3e of max|truth| is %.2fx the allowance (2x eager's %.3e + %.1e)",
                     worst->tensor, worst->max_relative, worst->ratio, worst->eager_max_relative, op_verdict_floor(dtype));
            fail(verdict, text);
        }
    }
    if (verdict->claims_deterministic && !verdict->deterministic) {
        snprintf(text, sizeof text, "claims determinism, but %s differs between runs", verdict->differing);
        fail(verdict, text);
    }
}

parity_error *op_verdict_judge(const op_check_case *test_case, op_verdict_options options,
                               const op_verdict_reference *reference, op_verdict *verdict) {
    memset(verdict, 0, sizeof *verdict);
    verdict->worst = -1;
    verdict->repeats = 1;
    verdict->deterministic = true;
    const char *op = test_case->op->name;
    if (reference->dtype != options.dtype || reference->seed != options.seed)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s [%s]: a reference of %s, seed %llu, for a check in %s, seed %llu", op,
                            test_case->name, parity_dtype_name(reference->dtype), (unsigned long long)reference->seed,
                            parity_dtype_name(options.dtype), (unsigned long long)options.seed);
    parity_backend_check check;
    parity_backend_need need = {.dtype = options.dtype};
    if (parity_registry_check(op, options.backend, options.device, NULL, &need, &check) != PARITY_AVAILABLE) {
        if (check.verdict == PARITY_DTYPE_UNSUPPORTED || check.verdict == PARITY_CAPABILITY_MISSING) {
            unsupported(verdict, check.reason);
            return NULL;
        }
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s backend %s: %s", op, options.backend, check.reason);
    }
    verdict->claims_deterministic = (check.backend->capabilities & PARITY_CAP_DETERMINISTIC) != 0;
    int repeats = options.repeats > 0 ? options.repeats : verdict->claims_deterministic ? 2 : 1;

    op_check_state candidate;
    bool refused;
    PARITY_TRY(run_candidate(test_case, &options, &candidate, verdict, &refused));
    if (refused) return NULL;
    const op_check_state *eager = reference->with_eager ? &reference->eager : NULL;
    parity_error *error = measure(&reference->truth, eager, &candidate, options.dtype, verdict);
    if (!error) {
        op_check_error_report report;
        error = op_check_compare_states(&reference->truth, &candidate, &report);
        if (!error) snprintf(verdict->non_finite, sizeof verdict->non_finite, "%s", report.non_finite);
    }
    snprintf(verdict->guard_damage, sizeof verdict->guard_damage, "%s", candidate.guard_damage);
    // determinism: further runs of the candidate, bitwise against the first
    for (int r = 1; !error && r < repeats; r++) {
        op_check_state again;
        error = op_check_run(test_case, candidate_run(&options), &again);
        if (error) {
            op_check_release(&again);
            break;
        }
        verdict->repeats = r + 1;
        if (again.guard_damage[0] && !verdict->guard_damage[0])
            snprintf(verdict->guard_damage, sizeof verdict->guard_damage, "%.100s (run %d)", again.guard_damage, r + 1);
        if (verdict->deterministic && !op_check_bitwise_equal(&candidate, &again, verdict->differing, sizeof verdict->differing))
            verdict->deterministic = false;
        op_check_release(&again);
    }
    op_check_release(&candidate);
    if (error) return error;
    decide(verdict, options.dtype);
    return NULL;
}

parity_error *op_verdict_check(const op_check_case *test_case, op_verdict_options options, op_verdict *verdict) {
    op_verdict_reference reference;
    PARITY_TRY(op_verdict_reference_run(test_case, options.dtype, options.reference_device, options.seed, &reference));
    parity_error *error = op_verdict_judge(test_case, options, &reference, verdict);
    op_verdict_reference_release(&reference);
    return error;
}
