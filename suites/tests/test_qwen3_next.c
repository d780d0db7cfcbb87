// test_qwen3_next.c: Qwen3-Next against Qwen3.5-MoE. The two models compute the same function and
// differ in how the GatedDeltaNet projections are stored: Qwen3.5 has in_proj_qkv, in_proj_z, in_proj_b
// and in_proj_a; Qwen3-Next fuses them into in_proj_qkvz and in_proj_ba laid out per key head (HF
// fix_query_key_value_ordering: key head h owns rows [q_h (Dk) | k_h (Dk) | v of its r value heads
// (r Dv) | z of them (r Dv)] and [b of its r value heads | a of them]). With norm_topk_prob on,
// decoder_sparse_step 1 and no mlp_only_layers, Qwen3-Next's MoE is Qwen3.5-MoE's.
// The test draws Qwen3.5-MoE weights, rearranges them into a Qwen3-Next checkpoint written in HF's
// on-disk layout (safetensors, per-expert gate_proj/up_proj/down_proj keys, config.json), loads it
// through parity_evaluate (the `parity eval` path: checkpoint reader, expert converter, model) and
// requires the same loss and the same gradients, rearranged, on a packed batch.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/evaluate.h"
#include "models/checkpoint/safetensors.h"
#include "models/model.h"
#include "suites/tests/exec_fixture.h"
#include "ops/testing/worst_error.h"

// Hk = 2, Hv = 4 (r = 2), Dk = 4, Dv = 3; four experts, a linear and a full-attention layer.
#define SHARED_FIELDS                                                                                                  \
    "\"vocab_size\":27,\"hidden_size\":16,\"moe_intermediate_size\":6,\"shared_expert_intermediate_size\":5,"          \
    "\"num_experts\":4,\"num_experts_per_tok\":2,\"num_hidden_layers\":2,\"num_attention_heads\":2,"                    \
    "\"num_key_value_heads\":1,\"head_dim\":8,\"partial_rotary_factor\":0.25,\"linear_num_key_heads\":2,"              \
    "\"linear_num_value_heads\":4,\"linear_key_head_dim\":4,\"linear_value_head_dim\":3,\"linear_conv_kernel_dim\":3," \
    "\"layer_types\":[\"linear_attention\",\"full_attention\"],\"output_router_logits\":true,\"router_aux_loss_coef\":0.05"
static const char qwen3_5_moe_json[] = "{\"model_type\":\"qwen3_5_moe_text\"," SHARED_FIELDS "}";
static const char qwen3_next_json[] = "{\"model_type\":\"qwen3_next\",\"intermediate_size\":12,\"decoder_sparse_step\":1,"
                                      "\"mlp_only_layers\":[],\"norm_topk_prob\":true," SHARED_FIELDS "}";
enum { key_heads = 2, value_heads = 4, key_head_dim = 4, value_head_dim = 3, ratio = value_heads / key_heads };
enum { key_dim = key_heads * key_head_dim, value_dim = value_heads * value_head_dim, group = 2 * key_head_dim + 2 * ratio * value_head_dim };

static const int64_t ids[] = {3, 7, 1, 9, 4, 2, 8, 5, 6, 0, 11, 12, 13, 14, 20, 21};
static const int64_t labels[] = {7, 1, 9, -100, 2, 8, 5, 6, 0, 11, 12, 13, 14, 20, 21, 3};
static const int64_t positions[] = {0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2}; // documents 5, 1, 7, 3

static char *error_text(parity_error *error) {
    static char buffer[4096];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    return buffer;
}

static const parity_tensor *value_of(const parity_parameters *parameters, const char *module, const char *suffix) {
    char name[192];
    snprintf(name, sizeof name, "%s%s", module, suffix);
    parity_parameter *parameter = parity_parameters_find(parameters, name);
    cr_assert_not_null(parameter, "no parameter %s", name);
    return &parameter->value;
}

// Row `row` of a (rows, columns) f64 matrix.
static const double *row_of(const parity_tensor *matrix, int64_t row) { return (const double *)matrix->data + row * matrix->shape[1]; }

// Qwen3-Next's fused rows from Qwen3.5's separate projections (or gradients), per key head h:
//   qkvz row h * group + [0, Dk) = q_h, + [Dk, 2Dk) = k_h, + [2Dk, 2Dk + r Dv) = v, then z;  ba row h * 2r + [0, r) = b, then a.
static void fuse(const parity_tensor *qkv, const parity_tensor *z, const parity_tensor *b, const parity_tensor *a, parity_tensor *qkvz,
                 parity_tensor *ba) {
    int64_t columns = qkv->shape[1];
    cr_assert_null(parity_tensor_alloc(qkvz, PARITY_F64, PARITY_CPU, PARITY_SHAPE(2 * key_dim + 2 * value_dim, columns)));
    cr_assert_null(parity_tensor_alloc(ba, PARITY_F64, PARITY_CPU, PARITY_SHAPE(2 * value_heads, columns)));
    size_t bytes = (size_t)columns * sizeof(double);
    for (int64_t h = 0; h < key_heads; h++) {
        double *base = (double *)qkvz->data + h * group * columns;
        for (int64_t i = 0; i < key_head_dim; i++) {
            memcpy(base + i * columns, row_of(qkv, h * key_head_dim + i), bytes);
            memcpy(base + (key_head_dim + i) * columns, row_of(qkv, key_dim + h * key_head_dim + i), bytes);
        }
        for (int64_t i = 0; i < ratio * value_head_dim; i++) {
            memcpy(base + (2 * key_head_dim + i) * columns, row_of(qkv, 2 * key_dim + h * ratio * value_head_dim + i), bytes);
            memcpy(base + (2 * key_head_dim + ratio * value_head_dim + i) * columns, row_of(z, h * ratio * value_head_dim + i), bytes);
        }
        for (int64_t j = 0; j < ratio; j++) {
            memcpy((double *)ba->data + (h * 2 * ratio + j) * columns, row_of(b, h * ratio + j), bytes);
            memcpy((double *)ba->data + (h * 2 * ratio + ratio + j) * columns, row_of(a, h * ratio + j), bytes);
        }
    }
}

// Writes `parameters` (Qwen3.5-MoE names) as a Qwen3-Next checkpoint in HF's on-disk layout.
static void write_qwen3_next_checkpoint(const char *directory, const parity_parameters *parameters) {
    parity_safetensors_item items[128];
    parity_tensor owned[128];
    char names[128][192];
    size_t count = 0, owned_count = 0;
    for (size_t p = 0; p < parameters->count; p++) {
        const char *name = parameters->items[p].name;
        const parity_tensor *value = &parameters->items[p].value;
        const char *at;
        if ((at = strstr(name, "linear_attn.in_proj_qkv.weight"))) {
            char module[160];
            snprintf(module, sizeof module, "%.*s", (int)(at - name), name); // "model.layers.0."
            fuse(value, value_of(parameters, module, "linear_attn.in_proj_z.weight"),
                 value_of(parameters, module, "linear_attn.in_proj_b.weight"),
                 value_of(parameters, module, "linear_attn.in_proj_a.weight"), &owned[owned_count], &owned[owned_count + 1]);
            snprintf(names[count], sizeof names[count], "%slinear_attn.in_proj_qkvz.weight", module);
            items[count] = (parity_safetensors_item){names[count], &owned[owned_count++]}, count++;
            snprintf(names[count], sizeof names[count], "%slinear_attn.in_proj_ba.weight", module);
            items[count] = (parity_safetensors_item){names[count], &owned[owned_count++]}, count++;
        } else if (strstr(name, "linear_attn.in_proj_z.") || strstr(name, "linear_attn.in_proj_b.") ||
                   strstr(name, "linear_attn.in_proj_a.")) {
            continue; // fused above
        } else if ((at = strstr(name, "mlp.experts.gate_up_proj")) || (at = strstr(name, "mlp.experts.down_proj"))) {
            // per expert j: gate_proj = rows [0, I) of gate_up_proj[j], up_proj = rows [I, 2I); down_proj[j] (H, I)
            bool gate_up = strstr(name, "gate_up_proj") != NULL;
            int64_t experts = value->shape[0], rows = value->shape[1], columns = value->shape[2];
            for (int64_t j = 0; j < experts; j++)
                for (int half = 0; half < (gate_up ? 2 : 1); half++) {
                    int64_t part_rows = gate_up ? rows / 2 : rows;
                    parity_tensor *part = &owned[owned_count++];
                    cr_assert_null(parity_tensor_alloc(part, PARITY_F64, PARITY_CPU, PARITY_SHAPE(part_rows, columns)));
                    memcpy(part->data, (const double *)value->data + (j * rows + half * part_rows) * columns,
                           (size_t)(part_rows * columns) * sizeof(double));
                    snprintf(names[count], sizeof names[count], "%.*smlp.experts.%lld.%s.weight", (int)(at - name), name, (long long)j,
                             gate_up ? (half ? "up_proj" : "gate_proj") : "down_proj");
                    items[count] = (parity_safetensors_item){names[count], part}, count++;
                }
        } else {
            items[count] = (parity_safetensors_item){name, value}, count++;
        }
        cr_assert(count < 120 && owned_count < 120);
    }
    char path[320];
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    parity_error *error = parity_safetensors_write(path, items, count);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    for (size_t i = 0; i < owned_count; i++) parity_tensor_release(&owned[i]);
    snprintf(path, sizeof path, "%s/config.json", directory);
    FILE *stream = fopen(path, "w");
    cr_assert_not_null(stream);
    fputs(qwen3_next_json, stream);
    fclose(stream);
}

static double relative_l2(const parity_tensor *value, const parity_tensor *reference) {
    double difference = 0, norm = 0;
    for (int64_t i = 0; i < reference->numel; i++) {
        double a = parity_tensor_get(value, i), b = parity_tensor_get(reference, i);
        difference += (a - b) * (a - b);
        norm += b * b;
    }
    return sqrt(difference / fmax(norm, 1e-300));
}

Test(qwen3_next, hf_layout_checkpoint_equals_qwen3_5_moe_rearranged) {
    cr_assert_null(parity_registry_register_builtins());
    parity_model_config config;
    cr_assert_null(parity_model_config_parse(qwen3_5_moe_json, "qwen3_5_moe", &config));
    parity_parameters drawn = {0}, kept = {0};
    cr_assert_null(parity_model_random_parameters(&config, 5, 0.3, &drawn));
    cr_assert_null(parity_model_random_parameters(&config, 5, 0.3, &kept)); // the same draw, for the checkpoint
    parity_model_requirements requirements;
    parity_bindings bindings;
    cr_assert_null(parity_model_requirements_of(&config, &requirements));
    cr_assert_null(parity_model_bind(&requirements, NULL, PARITY_CPU, PARITY_F64, &bindings));
    parity_model *reference;
    cr_assert_null(parity_model_create(&config, &drawn, PARITY_CPU, PARITY_F64, &bindings, &reference));
    parity_batch batch;
    parity_error *error = parity_batch_from_arrays(ids, labels, positions, 1, 16, config.vocab_size, "qwen3_next test", &batch);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    parity_step_result expected;
    cr_assert_null(parity_model_step(reference, parity_test_exec(reference->device), &batch, false, &expected));

    char directory[] = "/tmp/parity-qwen3-next-XXXXXX";
    cr_assert_not_null(mkdtemp(directory));
    write_qwen3_next_checkpoint(directory, &kept);
    parity_parameters_release(&kept);
    parity_evaluation_options options = {.checkpoint = directory, .batch = &batch, .dtype = PARITY_F64, .device = PARITY_CPU,
                                         .eager_baseline = true, .keep_gradients = true};
    parity_evaluation evaluation;
    error = parity_evaluate(&options, &evaluation);
    char path[320];
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", directory);
    unlink(path);
    rmdir(directory);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    cr_expect_str_eq(evaluation.model_config.model_type, "qwen3_next");

    const parity_step_result *step = &evaluation.step;
    double loss = fabs(step->loss - expected.loss) / expected.loss, aux = fabs(step->aux_loss - expected.aux_loss) / expected.aux_loss;
    double grad_norm = fabs(step->grad_norm - expected.grad_norm) / expected.grad_norm, worst = 0;
    const char *worst_name = "";
    int compared = 0;
    for (size_t p = 0; p < reference->parameters.count; p++) {
        const parity_parameter *mine = &reference->parameters.items[p];
        const char *at;
        if ((at = strstr(mine->name, "linear_attn.in_proj_qkv.weight"))) { // compare the fused gradients
            char module[160], name[192];
            snprintf(module, sizeof module, "%.*s", (int)(at - mine->name), mine->name);
            parity_tensor qkvz, ba;
            const parity_parameters *grads = &reference->parameters;
            parity_parameter *z = NULL, *b = NULL, *a = NULL;
            snprintf(name, sizeof name, "%slinear_attn.in_proj_z.weight", module), z = parity_parameters_find(grads, name);
            snprintf(name, sizeof name, "%slinear_attn.in_proj_b.weight", module), b = parity_parameters_find(grads, name);
            snprintf(name, sizeof name, "%slinear_attn.in_proj_a.weight", module), a = parity_parameters_find(grads, name);
            cr_assert(z && b && a);
            fuse(&mine->gradient, &z->gradient, &b->gradient, &a->gradient, &qkvz, &ba);
            const parity_tensor *fused[] = {&qkvz, &ba};
            const char *fused_names[] = {"linear_attn.in_proj_qkvz.weight", "linear_attn.in_proj_ba.weight"};
            for (int f = 0; f < 2; f++) {
                snprintf(name, sizeof name, "%s%s", module, fused_names[f]);
                parity_parameter *theirs = parity_parameters_find(&evaluation.gradients, name);
                cr_assert_not_null(theirs, "qwen3_next has no gradient of %s", name);
                double difference = relative_l2(&theirs->value, fused[f]);
                if (parity_test_worse(difference, worst)) worst = difference, worst_name = fused_names[f];
                compared++;
            }
            parity_tensor_release(&qkvz);
            parity_tensor_release(&ba);
            continue;
        }
        if (strstr(mine->name, "linear_attn.in_proj_z.") || strstr(mine->name, "linear_attn.in_proj_b.") ||
            strstr(mine->name, "linear_attn.in_proj_a."))
            continue;
        parity_parameter *theirs = parity_parameters_find(&evaluation.gradients, mine->name);
        cr_assert_not_null(theirs, "qwen3_next has no gradient of %s", mine->name);
        double difference = relative_l2(&theirs->value, &mine->gradient);
        if (parity_test_worse(difference, worst)) worst = difference, worst_name = mine->name;
        compared++;
    }
    cr_log_info("qwen3_next vs qwen3_5_moe: loss %.1e aux %.1e grad_norm %.1e, worst of %d gradients %.1e (%s)", loss, aux, grad_norm,
                compared, worst, worst_name);
    cr_expect(loss <= 1e-13 && aux <= 1e-13 && grad_norm <= 1e-12, "loss %.2e aux %.2e grad_norm %.2e", loss, aux, grad_norm);
    cr_expect(worst <= 1e-12, "gradient of %s differs by %.2e", worst_name, worst);
    cr_expect_eq((size_t)compared, evaluation.gradients.count, "%d gradients compared, qwen3_next has %zu", compared,
                 evaluation.gradients.count);
    parity_step_result_release(&expected);
    parity_evaluation_release(&evaluation);
    parity_batch_release(&batch);
    parity_model_free(reference);
}
