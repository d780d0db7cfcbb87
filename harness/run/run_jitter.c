// run_jitter.c: the jitter spread of a group's eager baseline (run_internal.h, harness/tolerance.h).
#include "harness/run/run_internal.h"

#include <math.h>

#include "harness/text.h"

parity_error *parity_run_jitter_spread(const parity_combo_plan *plan, const parity_exec *exec, const parity_case *c,
                                       parity_run_group *group) {
    parity_step_result *spread = &group->spread;
    const parity_step_result *eager = &group->eager;
    PARITY_TRY(parity_step_result_copy(eager, spread)); // the names; every distance starts at 0
    spread->loss = spread->aux_loss = spread->grad_norm = spread->logits_sum = 0;
    for (size_t i = 0; i < spread->parameter_count; i++) spread->parameter_grad_norms[i] = 0;
    group->has_spread = true;
    for (int run = 1; run <= PARITY_JITTER_RUNS; run++) {
        parity_evaluation evaluation;
        parity_error *run_error = parity_case_evaluate(c, plan->dtype, plan->device, exec, NULL, false, NULL, 0, 0,
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
        spread->loss = fmax(spread->loss, fabs(jittered->loss - eager->loss));
        if (eager->has_aux_loss && jittered->has_aux_loss)
            spread->aux_loss = fmax(spread->aux_loss, fabs(jittered->aux_loss - eager->aux_loss));
        spread->grad_norm = fmax(spread->grad_norm, fabs(jittered->grad_norm - eager->grad_norm));
        for (size_t i = 0; i < spread->parameter_count; i++) { // fmax drops a NaN (a name the jittered run lacks)
            double distance = fabs(parity_step_result_norm(jittered, spread->parameter_names[i], i) - eager->parameter_grad_norms[i]);
            spread->parameter_grad_norms[i] = fmax(spread->parameter_grad_norms[i], distance);
        }
        parity_evaluation_release(&evaluation);
    }
    return NULL;
}
