// results_sample.h: a `parity run`'s results built in code for the report tests: two models (dense
// qwen3_tiny, MoE qwen3_moe_tiny) in bf16 on cpu, with combos of every status: eager baselines,
// passing backends (one near its tolerance), a fail over tolerance, a fail with a NaN metric, not
// supported (one reason holding < & > " '), an error and an exclusion; timing samples on the ones
// that ran. Each combo is one row of a table in results_sample.c.
#ifndef PARITY_TESTS_RESULTS_SAMPLE_H
#define PARITY_TESTS_RESULTS_SAMPLE_H

#include "reports/results.h"

// The reason of the not-supported combo that needs XML/HTML escaping.
#define SAMPLE_ESCAPE_REASON "needs head_dim <= 256 & \"causal\" masks: 'sliding' given"
// The metric that fails the over-tolerance combo, and that combo's id.
#define SAMPLE_FAILING_METRIC "grad_norm:model.layers.0.mlp.up_proj.weight"
#define SAMPLE_FAILING_COMBO "qwen3_tiny/attn=sdpa,ce=perturbed_1e-3/bf16/cpu"
// the failing combo's second failing metric (ratio 2), a sketch component: the sketch of a flipped gradient
#define SAMPLE_FAILING_SKETCH "grad_sketch:lm_head.weight[2]"

// Fills *results (zeroed first); aborts the test on allocation failure.
void sample_results_build(parity_results *results);
// A large crafted run for size tests: combo_count combos of 130 a model (attn x ce, 10 x 13 values;
// the first of each model its eager baseline), every 13th not supported (one reason), every 50th failing with
// every metric over tolerance, metric_count metrics each (loss, then sketch components), timed.
void sample_results_build_large(parity_results *results, size_t combo_count, size_t metric_count);

#endif
