// test_model_gradients.c: whole-model gradients against central finite differences of the loss, in
// f64, for configurations the upstream data does not cover: DeepSeek-V3 with a q_lora path and yarn
// RoPE, Qwen2-style biases with a packed batch, tied embeddings with sliding-window attention, and
// the Qwen3.5-MoE hybrid (GatedDeltaNet + gated attention + MoE with a gated shared expert), and
// Qwen3-Next (fused per-key-head in_proj_qkvz / in_proj_ba, two value heads per key head, a dense
// mlp_only layer between MoE layers, norm_topk_prob off, packed documents).
// Weights are drawn from (seed, name); a handful of elements of every parameter is perturbed. The
// step result's sketches are checked to be those of the gradients it reports, in its order, and the
// loss input's gradient to be there; a timed step (measure_gradients off) to give the same loss and
// gradients bit for bit without norms or sketches.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <string.h>

#include "models/model.h"
#include "suites/tests/exec_fixture.h"
#include "ops/testing/worst_error.h"

typedef struct model_row {
    const char *name;
    const char *config_json;
    bool packed;
} model_row;

static const model_row rows[] = {
    {"deepseek_v3 q_lora + yarn",
     "{\"model_type\":\"deepseek_v3\",\"vocab_size\":29,\"hidden_size\":16,\"intermediate_size\":24,\"moe_intermediate_size\":8,"
     "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"q_lora_rank\":12,\"kv_lora_rank\":8,"
     "\"qk_nope_head_dim\":6,\"qk_rope_head_dim\":4,\"v_head_dim\":5,\"n_routed_experts\":4,\"num_experts_per_tok\":2,"
     "\"n_group\":2,\"topk_group\":1,\"n_shared_experts\":1,\"first_k_dense_replace\":1,\"routed_scaling_factor\":2.5,"
     "\"norm_topk_prob\":true,\"rope_interleave\":true,\"rope_scaling\":{\"type\":\"yarn\",\"factor\":4,"
     "\"original_max_position_embeddings\":8,\"mscale\":1,\"mscale_all_dim\":1},\"rope_theta\":10000}", false},
    {"qwen2 biases, packed",
     "{\"model_type\":\"qwen2\",\"vocab_size\":31,\"hidden_size\":18,\"intermediate_size\":22,\"num_hidden_layers\":2,"
     "\"num_attention_heads\":3,\"num_key_value_heads\":1,\"rms_norm_eps\":1e-6}", true},
    {"qwen3 tied + sliding window",
     "{\"model_type\":\"qwen3\",\"vocab_size\":23,\"hidden_size\":16,\"intermediate_size\":20,\"num_hidden_layers\":2,"
     "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":6,\"tie_word_embeddings\":true,"
     "\"use_sliding_window\":true,\"sliding_window\":3,\"layer_types\":[\"sliding_attention\",\"full_attention\"]}", true},
    {"qwen3_5_moe hybrid",
     "{\"model_type\":\"qwen3_5_moe_text\",\"vocab_size\":27,\"hidden_size\":16,\"moe_intermediate_size\":6,"
     "\"shared_expert_intermediate_size\":7,\"num_experts\":4,\"num_experts_per_tok\":2,\"num_hidden_layers\":2,"
     "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":8,\"partial_rotary_factor\":0.5,"
     "\"linear_num_key_heads\":1,\"linear_num_value_heads\":2,\"linear_key_head_dim\":4,\"linear_value_head_dim\":3,"
     "\"linear_conv_kernel_dim\":3,\"layer_types\":[\"linear_attention\",\"full_attention\"],"
     "\"output_router_logits\":true,\"router_aux_loss_coef\":0.05}", true},
    {"qwen3_next hybrid",
     "{\"model_type\":\"qwen3_next\",\"vocab_size\":27,\"hidden_size\":16,\"intermediate_size\":10,\"moe_intermediate_size\":6,"
     "\"shared_expert_intermediate_size\":5,\"num_experts\":4,\"num_experts_per_tok\":2,\"norm_topk_prob\":false,"
     "\"decoder_sparse_step\":1,\"mlp_only_layers\":[1],\"num_hidden_layers\":3,\"num_attention_heads\":2,"
     "\"num_key_value_heads\":1,\"head_dim\":8,\"partial_rotary_factor\":0.25,\"linear_num_key_heads\":2,"
     "\"linear_num_value_heads\":4,\"linear_key_head_dim\":4,\"linear_value_head_dim\":3,\"linear_conv_kernel_dim\":3,"
     "\"layer_types\":[\"linear_attention\",\"full_attention\",\"linear_attention\"],\"output_router_logits\":true,"
     "\"router_aux_loss_coef\":0.05}", true},
};

static const int64_t plain_ids[] = {3, 7, 1, 9, 4, 2, 8, 5, 6, 0, 11, 12, 13, 14};
static const int64_t plain_labels[] = {7, 1, 9, -100, 2, 8, 5, 6, 0, 11, 12, 13, 14, 3};
static const int64_t packed_positions[] = {0, 1, 2, 3, 4, 0, 1, 2, 0, 0, 1, 2, 3, 4}; // documents 5, 3, 1, 5

static double loss_of(parity_model *model, const parity_batch *batch) {
    parity_step_result result;
    parity_error *error = parity_model_step(model, parity_test_exec(model->device), batch, false, &result);
    cr_assert_null(error, "step failed");
    double loss = result.loss;
    parity_step_result_release(&result);
    return loss;
}

static void check(const model_row *row) {
    cr_assert_null(parity_registry_register_builtins());
    parity_model_config config;
    parity_error *error = parity_model_config_parse(row->config_json, row->name, &config);
    cr_assert_null(error, "%s: config", row->name);
    parity_parameters parameters = {0};
    cr_assert_null(parity_model_random_parameters(&config, 11, 0.3, &parameters), "%s: parameters", row->name);
    parity_model_requirements requirements;
    parity_bindings bindings;
    cr_assert_null(parity_model_requirements_of(&config, &requirements), "%s: requirements", row->name);
    cr_assert_null(parity_model_bind(&requirements, NULL, PARITY_CPU, PARITY_F64, &bindings), "%s: bind", row->name);
    parity_model *model;
    cr_assert_null(parity_model_create(&config, &parameters, PARITY_CPU, PARITY_F64, &bindings, &model), "%s: create", row->name);
    parity_batch batch;
    error = parity_batch_from_arrays(plain_ids, plain_labels, row->packed ? packed_positions : NULL, row->packed ? 1 : 2,
                                     row->packed ? 14 : 7, config.vocab_size, row->name, &batch);
    if (error) {
        char text[1024];
        parity_error_format(error, text, sizeof text);
        cr_assert_fail("%s: batch: %s", row->name, text);
    }
    parity_step_result analytic;
    cr_assert_null(parity_model_step(model, parity_test_exec(model->device), &batch, false, &analytic), "%s: step",
                   row->name);
    // Snapshot every analytic gradient first: each finite-difference step recomputes them.
    parity_tensor gradients[256];
    cr_assert(model->parameters.count <= 256);
    for (size_t p = 0; p < model->parameters.count; p++) {
        memset(&gradients[p], 0, sizeof gradients[p]);
        if (model->parameters.items[p].gradient.data)
            cr_assert_null(parity_tensor_to(&gradients[p], &model->parameters.items[p].gradient, PARITY_CPU, PARITY_F64));
    }
    // A timed step (measure_gradients off) runs the same forward + backward, bit for bit, and skips
    // only the harness's norms and sketches.
    model->measure_gradients = false;
    parity_step_result timed;
    cr_assert_null(parity_model_step(model, parity_test_exec(model->device), &batch, false, &timed), "%s: timed step",
                   row->name);
    model->measure_gradients = true;
    cr_expect_eq(memcmp(&timed.loss, &analytic.loss, sizeof timed.loss), 0, "%s: timed step's loss", row->name);
    cr_expect_eq(timed.parameter_count, analytic.parameter_count, "%s: timed step's gradients", row->name);
    cr_expect(!timed.first_non_finite[0], "%s: timed step reports '%s'", row->name, timed.first_non_finite);
    for (size_t p = 0; p < model->parameters.count; p++) {
        const parity_tensor *again = &model->parameters.items[p].gradient;
        if (!gradients[p].data) continue;
        parity_tensor host;
        cr_assert_null(parity_tensor_to(&host, again, PARITY_CPU, PARITY_F64));
        cr_expect_eq(memcmp(host.data, gradients[p].data, (size_t)host.numel * sizeof(double)), 0,
                     "%s: %s differs in the timed step", row->name, model->parameters.items[p].name);
        parity_tensor_release(&host);
    }
    for (size_t r = 0; r < timed.parameter_count; r++)
        cr_expect(isnan(timed.parameter_grad_norms[r]) && isnan(timed.parameter_grad_sketches[r * PARITY_SKETCH_K]),
                  "%s: the timed step measured %s", row->name, timed.parameter_names[r]);
    cr_expect(!timed.has_loss_input && isnan(timed.loss_input_grad_norm), "%s: the timed step measured the loss input",
              row->name);
    parity_step_result_release(&timed);
    // The step's norms and sketches are those of the gradients it handed to the parameters, in the
    // result's order (the sketch from each parameter's own name), and the loss input's gradient is there.
    size_t reported = 0;
    for (size_t p = 0; p < model->parameters.count; p++) {
        if (!gradients[p].data) continue;
        const char *name = model->parameters.items[p].name;
        cr_assert_lt(reported, analytic.parameter_count);
        cr_expect_str_eq(analytic.parameter_names[reported], name);
        double sketch[PARITY_SKETCH_K];
        cr_assert_null(parity_tensor_sketch(parity_test_exec(PARITY_CPU), &gradients[p], name, sketch));
        cr_expect_eq(memcmp(sketch, analytic.parameter_grad_sketches + reported * PARITY_SKETCH_K, sizeof sketch), 0,
                     "%s: %s's sketch", row->name, name);
        reported++;
    }
    cr_expect_eq(reported, analytic.parameter_count);
    cr_expect(analytic.has_loss_input, "%s: the decoder exposes the loss input", row->name);
    cr_expect(isfinite(analytic.loss_input_grad_norm) && analytic.loss_input_grad_norm > 0, "%s: |d loss / d h| = %g", row->name,
              analytic.loss_input_grad_norm);
    double squares = 0;
    for (int j = 0; j < PARITY_SKETCH_K; j++) squares += analytic.loss_input_grad_sketch[j] * analytic.loss_input_grad_sketch[j];
    cr_expect(squares > 0 && isfinite(squares), "%s: the loss input's sketch", row->name);
    double worst = 0;
    const char *worst_name = "";
    int checked = 0;
    for (size_t p = 0; p < model->parameters.count; p++) {
        parity_parameter *parameter = &model->parameters.items[p];
        if (!gradients[p].data) continue;
        parity_tensor gradient = gradients[p];
        double difference = 0, reference = 0;
        int64_t step = parameter->value.numel > 5 ? parameter->value.numel / 5 : 1;
        for (int64_t i = step / 2; i < parameter->value.numel; i += step) {
            double original = parity_tensor_get(&parameter->value, i), h = 1e-6;
            parity_tensor_set(&parameter->value, i, original + h);
            double plus = loss_of(model, &batch);
            parity_tensor_set(&parameter->value, i, original - h);
            double minus = loss_of(model, &batch);
            parity_tensor_set(&parameter->value, i, original);
            double numeric = (plus - minus) / (2 * h), exact = parity_tensor_get(&gradient, i);
            difference += (numeric - exact) * (numeric - exact);
            reference += numeric * numeric;
            checked++;
        }
        // Floor: central differences (h = 1e-6) of an O(1) loss carry ~1e-10 absolute round-off per element.
        double error_relative = sqrt(difference) / fmax(sqrt(reference), 1e-4);
        if (parity_test_worse(error_relative, worst)) {
            worst = error_relative;
            worst_name = parameter->name;
        }
        parity_tensor_release(&gradient);
    }
    cr_log_info("%-28s %d elements checked, worst relative error %.2e (%s)", row->name, checked, worst, worst_name);
    cr_expect(checked > 20);
    cr_expect(worst <= 1e-6, "%s: gradient of %s relative error %.2e > 1e-6", row->name, worst_name, worst);
    parity_step_result_release(&analytic);
    parity_batch_release(&batch);
    parity_model_free(model);
}

Test(model_gradients, deepseek_v3_q_lora_yarn) { check(&rows[0]); }
Test(model_gradients, qwen2_biases_packed) { check(&rows[1]); }
Test(model_gradients, qwen3_tied_sliding_window) { check(&rows[2]); }
Test(model_gradients, qwen3_5_moe_hybrid) { check(&rows[3]); }
Test(model_gradients, qwen3_next_hybrid) { check(&rows[4]); }
