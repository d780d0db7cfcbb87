// run_jitter.c: the jitter spread of a group's eager baseline (run_internal.h, harness/tolerance.h).
#include "harness/run/run_internal.h"

#include <math.h>
#include <stdlib.h>

#include "harness/text.h"

// The larger of a and b, NaN when either is NaN.
static double max_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }

static double cosine_or_nan(const double *a, const double *b) { return a && b ? parity_sketch_cosine(a, b) : NAN; }

// Each sketch component's distance |jittered - eager| into spread[j] (NaN for a sketch the jittered
// run lacks), and the distance of the two cosines with `golden` into *cosine_spread.
static void widen_sketch(double spread[PARITY_SKETCH_K], double *cosine_spread, const double *jittered, const double *eager,
                         const double *golden) {
    for (int j = 0; j < PARITY_SKETCH_K; j++) spread[j] = max_nan(spread[j], jittered ? fabs(jittered[j] - eager[j]) : NAN);
    *cosine_spread = max_nan(*cosine_spread, fabs(cosine_or_nan(jittered, golden) - cosine_or_nan(eager, golden)));
}

void parity_run_spread_release(parity_run_spread *spread) {
    parity_step_result_release(&spread->values);
    free(spread->cosines);
    spread->cosines = NULL;
    spread->loss_input_cosine = 0;
}

parity_error *parity_run_jitter_spread(const parity_combo_plan *plan, const parity_exec *exec, const parity_case *c,
                                       const parity_step_result *golden, int runs, parity_run_group *group) {
    parity_run_spread *spread = &group->spread;
    parity_step_result *values = &spread->values;
    const parity_step_result *eager = &group->eager;
    PARITY_TRY(parity_step_result_copy(eager, values)); // the names; every distance starts at 0
    values->loss = values->aux_loss = values->grad_norm = values->logits_sum = 0;
    for (size_t i = 0; i < values->parameter_count; i++) values->parameter_grad_norms[i] = 0;
    if (values->parameter_grad_sketches)
        for (size_t i = 0; i < values->parameter_count * PARITY_SKETCH_K; i++) values->parameter_grad_sketches[i] = 0;
    values->loss_input_grad_norm = 0;
    for (int j = 0; j < PARITY_SKETCH_K; j++) values->loss_input_grad_sketch[j] = 0;
    spread->cosines = calloc(values->parameter_count ? values->parameter_count : 1, sizeof *spread->cosines);
    spread->loss_input_cosine = 0;
    if (!spread->cosines) return PARITY_ERROR(PARITY_ERROR_MEMORY, "the jitter spread of %zu parameters", values->parameter_count);
    group->has_spread = true;
    for (int run = 1; run <= runs; run++) {
        parity_evaluation evaluation;
        parity_error *run_error = parity_case_evaluate(c, plan->dtype, plan->device, exec, NULL, false, NULL, 0, 0, NULL,
                                                       (uint64_t)run, &evaluation);
        if (run_error) {
            parity_evaluation_release(&evaluation); // filled even when the run failed (as run_combo's)
            char message[800];
            group->baseline_ok = false;
            parity_text_format(group->baseline_problem, sizeof group->baseline_problem, "jittered eager run %d: %s", run,
                               parity_error_format(run_error, message, sizeof message));
            parity_error_free(run_error);
            break;
        }
        const parity_step_result *jittered = &evaluation.step;
        values->loss = fmax(values->loss, fabs(jittered->loss - eager->loss));
        if (eager->has_aux_loss && jittered->has_aux_loss)
            values->aux_loss = fmax(values->aux_loss, fabs(jittered->aux_loss - eager->aux_loss));
        values->grad_norm = fmax(values->grad_norm, fabs(jittered->grad_norm - eager->grad_norm));
        for (size_t i = 0; i < values->parameter_count; i++) { // fmax drops a NaN (a name the jittered run lacks)
            const char *name = values->parameter_names[i];
            double distance = fabs(parity_step_result_norm(jittered, name, i) - eager->parameter_grad_norms[i]);
            values->parameter_grad_norms[i] = fmax(values->parameter_grad_norms[i], distance);
            if (values->parameter_grad_sketches)
                widen_sketch(values->parameter_grad_sketches + i * PARITY_SKETCH_K, &spread->cosines[i],
                             parity_step_result_sketch(jittered, name, i), eager->parameter_grad_sketches + i * PARITY_SKETCH_K,
                             parity_step_result_sketch(golden, name, i));
        }
        if (eager->has_loss_input) {
            values->loss_input_grad_norm = max_nan(values->loss_input_grad_norm,
                                                   jittered->has_loss_input
                                                       ? fabs(jittered->loss_input_grad_norm - eager->loss_input_grad_norm)
                                                       : NAN);
            widen_sketch(values->loss_input_grad_sketch, &spread->loss_input_cosine,
                         jittered->has_loss_input ? jittered->loss_input_grad_sketch : NULL, eager->loss_input_grad_sketch,
                         golden->has_loss_input ? golden->loss_input_grad_sketch : NULL);
        }
        parity_evaluation_release(&evaluation);
    }
    return NULL;
}
