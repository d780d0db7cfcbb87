// run_jitter.c: the jitter spread of a group's eager baseline (run_internal.h, harness/tolerance.h).
#include "harness/run/run_internal.h"

#include <math.h>

#include "harness/text.h"

parity_error *parity_run_jitter_spread(const parity_combo_plan *plan, const parity_case *c, parity_run_group *group) {
    parity_run_values *spread = &group->spread;
    PARITY_TRY(parity_run_values_copy_shape(&group->eager, spread));
    group->has_spread = true;
    for (int run = 1; run <= PARITY_JITTER_RUNS; run++) {
        parity_evaluation evaluation;
        parity_error *run_error = parity_case_evaluate(c, plan->dtype, plan->device, NULL, false, NULL, 0, 0, (uint64_t)run,
                                                       &evaluation);
        parity_run_values jittered = {0};
        if (!run_error) run_error = parity_run_values_copy(&evaluation.step, &jittered);
        parity_evaluation_release(&evaluation); // filled even when the run failed (as run_combo's)
        if (run_error) {
            char message[800];
            group->baseline_ok = false;
            parity_text_format(group->baseline_problem, sizeof group->baseline_problem, "jittered eager run %d: %s", run,
                               parity_error_format(run_error, message, sizeof message));
            parity_error_free(run_error);
            break;
        }
        spread->loss = fmax(spread->loss, fabs(jittered.loss - group->eager.loss));
        if (group->eager.has_aux_loss && jittered.has_aux_loss)
            spread->aux_loss = fmax(spread->aux_loss, fabs(jittered.aux_loss - group->eager.aux_loss));
        spread->grad_norm = fmax(spread->grad_norm, fabs(jittered.grad_norm - group->eager.grad_norm));
        for (size_t i = 0; i < spread->count; i++) // fmax drops a NaN (a name the jittered run lacks)
            spread->norms[i] =
                fmax(spread->norms[i], fabs(parity_run_norm_named(&jittered, spread->names[i], i) - group->eager.norms[i]));
        parity_run_values_release(&jittered);
    }
    return NULL;
}
