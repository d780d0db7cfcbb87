// test_config.c: the kernel-selection rules of seeds/000 as tables. Each row is one config (an
// --ops string on a device with an SP degree and a MODELING_BACKEND) and what one field must
// resolve to: its registry backend, what the model sees, its status, and a piece of the message
// a broken rule must produce (naming field, value and what is allowed). Adding a rule case is
// adding a row. Availability is switched off here (test_config_availability.c covers it), so
// valid selections end "not checked".
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/config/fields.h"
#include "harness/config/ops_config.h"
#include "harness/config/ops_override.h"
#include "harness/config/value_support.h"
#include "ops/registry.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define CPU PARITY_DEVICE_CPU
#define CUDA PARITY_DEVICE_CUDA
#define NPU PARITY_DEVICE_NPU
#define VEOMNI PARITY_MODELING_VEOMNI
#define HF PARITY_MODELING_HF

typedef struct rule_case {
    const char *ops; // --ops text; NULL = all defaults
    parity_device_type device;
    int sequence_parallel_size;
    parity_modeling_backend modeling_backend;
    const char *field;            // field name or alias to look at
    const char *backend;          // expected registry backend (NULL: not checked / rejected)
    const char *resolved;         // expected name the model sees (NULL: same as backend)
    parity_ops_status status;     // expected status
    const char *message;          // substring of a problem about the field; NULL = no problem for it
    const char *note;             // substring of the field's notes; NULL = not checked
} rule_case;

static parity_error *build(const char *ops, parity_device_type device, int sp, parity_modeling_backend backend,
                           parity_ops_config *config) {
    parity_ops_settings settings = {0};
    if (ops) {
        parity_error *error = parity_ops_override_parse(ops, &settings);
        cr_assert_null(error, "--ops \"%s\" did not parse", ops);
    }
    parity_ops_config_options options = parity_ops_config_options_default();
    options.device = (parity_device){device, 0};
    options.sequence_parallel_size = sp;
    options.modeling_backend = backend;
    options.skip_availability = true;
    parity_error *error = parity_ops_config_build(&settings, &options, config);
    parity_ops_settings_free(&settings);
    return error;
}

// The first problem about `field` (or any problem when field is NULL) containing `text`.
static const parity_ops_problem *find_problem(const parity_ops_config *config, const parity_kernel_field *field,
                                              const char *text) {
    for (size_t i = 0; i < config->problem_count; i++) {
        const parity_ops_problem *problem = &config->problems[i];
        if (field && problem->field != field) continue;
        if (!text || strstr(problem->message, text)) return problem;
    }
    return NULL;
}

static void check_rows(const rule_case *rows, size_t count) {
    for (size_t row = 0; row < count; row++) {
        const rule_case *expected = &rows[row];
        const char *ops = expected->ops ? expected->ops : "(defaults)";
        parity_ops_config config;
        parity_error *error = build(expected->ops, expected->device, expected->sequence_parallel_size,
                                    expected->modeling_backend, &config);
        const parity_ops_selection *selection = parity_ops_config_find(&config, expected->field);
        cr_assert_not_null(selection, "row %zu: no field %s", row, expected->field);
        cr_expect_eq(selection->status, expected->status, "row %zu (%s on %s, sp=%d): %s is %s, expected %s", row, ops,
                     parity_device_type_name(expected->device), expected->sequence_parallel_size, expected->field,
                     parity_ops_status_name(selection->status), parity_ops_status_name(expected->status));
        if (expected->backend) {
            cr_expect_str_eq(selection->backend, expected->backend, "row %zu (%s): %s backend", row, ops,
                             expected->field);
            const char *resolved = expected->resolved ? expected->resolved : expected->backend;
            cr_expect_str_eq(selection->resolved, resolved, "row %zu (%s): %s resolved", row, ops, expected->field);
        }
        if (expected->message) {
            const parity_ops_problem *problem = find_problem(&config, selection->field, expected->message);
            cr_expect_not_null(problem, "row %zu (%s on %s): no problem containing \"%s\"", row, ops,
                               parity_device_type_name(expected->device), expected->message);
            cr_expect_not_null(error, "row %zu (%s): a rejection must make the build fail", row, ops);
            if (error) cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG, "row %zu: error kind", row);
        } else {
            const parity_ops_problem *problem = find_problem(&config, selection->field, NULL);
            cr_expect_null(problem, "row %zu (%s on %s): unexpected problem: %s", row, ops,
                           parity_device_type_name(expected->device), problem ? problem->message : "");
        }
        if (expected->note)
            cr_expect(strstr(selection->notes, expected->note) != NULL, "row %zu (%s): notes \"%s\" lack \"%s\"", row,
                      ops, selection->notes, expected->note);
        parity_error_free(error);
        parity_ops_config_release(&config);
    }
}

Test(config_rules, every_field_defaults_as_the_seed_says) {
    static const struct {
        const char *field, *alias, *op, *default_value;
    } rows[] = {
        {"attn_implementation", "attn", PARITY_OP_ATTENTION, "flash_attention_2"},
        {"dsa_indexer_implementation", "dsa_indexer", PARITY_OP_DSA_INDEXER, "eager"},
        {"dsa_attention_implementation", "dsa_attn", PARITY_OP_DSA_ATTENTION, "eager"},
        {"mhc_implementation", "mhc", PARITY_OP_MHC, "eager"},
        {"cross_entropy_loss_implementation", "ce", PARITY_OP_CROSS_ENTROPY, "liger_kernel"},
        {"rms_norm_implementation", "rms_norm", PARITY_OP_RMS_NORM, "liger_kernel"},
        {"swiglu_mlp_implementation", "swiglu", PARITY_OP_SWIGLU, "liger_kernel"},
        {"rotary_pos_emb_implementation", "rope", PARITY_OP_ROTARY, "liger_kernel"},
        {"rotary_pos_emb_vision_implementation", "rope_vision", PARITY_OP_ROTARY_VISION, "eager"},
        {"rms_norm_gated_implementation", "rms_norm_gated", PARITY_OP_RMS_NORM_GATED, "fla"},
        {"causal_conv1d_implementation", "conv1d", PARITY_OP_CAUSAL_CONV1D, "fla"},
        {"chunk_gated_delta_rule_implementation", "gdr", PARITY_OP_GATED_DELTA_RULE, "fla"},
        {"load_balancing_loss_implementation", "lb_loss", PARITY_OP_LOAD_BALANCING_LOSS, "triton"},
        {"moe_implementation", "moe", PARITY_OP_MOE_EXPERTS, "fused_triton"},
    };
    cr_assert_eq(ROWS(rows), PARITY_KERNEL_FIELD_COUNT, "every field of the Quick Reference has a row");
    parity_ops_config config;
    parity_error_free(build(NULL, CUDA, 1, VEOMNI, &config));
    for (size_t row = 0; row < ROWS(rows); row++) {
        const parity_kernel_field *field = parity_kernel_field_find(rows[row].field, false);
        cr_assert_not_null(field, "%s", rows[row].field);
        cr_expect_eq(parity_kernel_field_find(rows[row].alias, true), field, "alias %s", rows[row].alias);
        cr_expect_null(parity_kernel_field_find(rows[row].alias, false), "alias %s is not a field name",
                       rows[row].alias);
        cr_expect_str_eq(field->op, rows[row].op, "%s op", rows[row].field);
        cr_expect_str_eq(field->default_value, rows[row].default_value, "%s default", rows[row].field);
        cr_expect_not_null(parity_kernel_field_value(field, field->default_value), "%s default is a value",
                           rows[row].field);
        const parity_ops_selection *selection = parity_ops_config_find(&config, rows[row].field);
        cr_expect_str_eq(selection->requested, rows[row].default_value, "%s requested", rows[row].field);
        cr_expect_eq(selection->source.kind, PARITY_OPS_FROM_DEFAULT, "%s source", rows[row].field);
        cr_expect_str_eq(selection->backend, rows[row].default_value, "%s backend on cuda", rows[row].field);
        cr_expect_eq(selection->status, PARITY_OPS_NOT_CHECKED, "%s status", rows[row].field);
        cr_expect_eq(parity_ops_config_find(&config, rows[row].op), selection, "lookup by op %s", rows[row].op);
        cr_expect_str_eq(parity_ops_config_backend(&config, rows[row].op), rows[row].default_value);
    }
    cr_expect_eq(config.problem_count, 0, "defaults on cuda break no rule");
    parity_ops_config_release(&config);
}

Test(config_rules, every_value_of_the_seed_is_in_the_vocabulary) {
    static const struct {
        const char *field, *values;
    } rows[] = {
        {"attn_implementation",
         "eager, sdpa, flash_attention_2, flash_attention_3, flash_attention_4, flex_attention, native-sparse"},
        {"dsa_indexer_implementation", "eager, cudnn, tilelang"},
        {"dsa_attention_implementation", "eager, flashmla_cudnn, tilelang"},
        {"mhc_implementation", "eager, tilelang"},
        {"cross_entropy_loss_implementation", "eager, liger_kernel, chunk_loss, npu"},
        {"rms_norm_implementation", "eager, liger_kernel, npu, triton"},
        {"swiglu_mlp_implementation", "eager, liger_kernel"},
        {"rotary_pos_emb_implementation", "eager, liger_kernel, npu, triton"},
        {"rotary_pos_emb_vision_implementation", "eager, npu"},
        {"rms_norm_gated_implementation", "eager, fla, npu"},
        {"causal_conv1d_implementation", "eager, fla, npu"},
        {"chunk_gated_delta_rule_implementation", "eager, fla, flash_qla, npu, npu_ascendc"},
        {"load_balancing_loss_implementation", "eager, triton"},
        {"moe_implementation", "eager, fused_triton, fused_quack, fused_npu"},
    };
    parity_registry_clear(); // no third-party names in the lists
    for (size_t row = 0; row < ROWS(rows); row++) {
        char values[512];
        const parity_kernel_field *field = parity_kernel_field_find(rows[row].field, false);
        cr_expect_str_eq(parity_kernel_field_allowed_values(field, values, sizeof values), rows[row].values, "%s",
                         rows[row].field);
    }
    parity_registry_register_builtins();
}

Test(config_rules, value_details_follow_the_seed) {
    static const struct {
        const char *field, *value;
        unsigned targets;
        int min_compute_capability;
        bool sequence_parallel;
        const char *model_restriction; // substring, NULL = none
    } rows[] = {
        {"attn", "eager", PARITY_TARGET_CPU | PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, false, NULL},
        {"attn", "sdpa", PARITY_TARGET_CPU | PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, false, NULL},
        {"attn", "flash_attention_2", PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, true, NULL},
        {"attn", "flash_attention_3", PARITY_TARGET_CUDA, 90, true, NULL},
        {"attn", "flash_attention_4", PARITY_TARGET_CUDA, 0, true, NULL},
        {"attn", "flex_attention", PARITY_TARGET_CUDA, 0, true, NULL},
        {"attn", "native-sparse", PARITY_TARGET_CUDA, 0, false, NULL},
        {"dsa_indexer", "cudnn", PARITY_TARGET_CUDA, 0, false, "GLM-DSA"},
        {"dsa_indexer", "tilelang", PARITY_TARGET_CUDA, 90, false, "DeepSeek-V4"},
        {"dsa_attn", "flashmla_cudnn", PARITY_TARGET_CUDA, 0, false, "GLM-DSA"},
        {"dsa_attn", "tilelang", PARITY_TARGET_CUDA, 90, false, "DeepSeek-V4"},
        {"mhc", "tilelang", PARITY_TARGET_CUDA, 90, false, "DeepSeek-V4"},
        {"ce", "chunk_loss", PARITY_TARGET_CPU | PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, false, NULL},
        {"ce", "npu", PARITY_TARGET_NPU, 0, false, NULL},
        {"rms_norm", "triton", PARITY_TARGET_CUDA, 0, false, "DeepSeek-V3"},
        {"rope", "triton", PARITY_TARGET_CUDA, 0, false, "DeepSeek-V3"},
        {"gdr", "flash_qla", PARITY_TARGET_CUDA, 90, false, NULL},
        {"gdr", "npu_ascendc", PARITY_TARGET_NPU, 0, false, NULL},
        {"gdr", "eager", PARITY_TARGET_CPU | PARITY_TARGET_CUDA, 0, false, NULL},
        {"moe", "eager", PARITY_TARGET_CPU | PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, false, NULL},
        {"moe", "fused_triton", PARITY_TARGET_CUDA, 70, false, NULL},
        {"moe", "fused_quack", PARITY_TARGET_CUDA, 90, false, NULL},
        {"moe", "fused_npu", PARITY_TARGET_NPU, 0, false, NULL},
        {"lb_loss", "triton", PARITY_TARGET_CUDA, 0, false, NULL},
        {"lb_loss", "eager", PARITY_TARGET_CPU | PARITY_TARGET_CUDA | PARITY_TARGET_NPU, 0, false, NULL},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        const parity_kernel_field *field = parity_kernel_field_find(rows[row].field, true);
        const parity_kernel_value *value = parity_kernel_field_value(field, rows[row].value);
        cr_assert_not_null(value, "%s=%s", rows[row].field, rows[row].value);
        cr_expect_eq(value->targets, rows[row].targets, "%s=%s targets", rows[row].field, rows[row].value);
        cr_expect_eq(value->min_compute_capability, rows[row].min_compute_capability, "%s=%s SM", rows[row].field,
                     rows[row].value);
        cr_expect_eq(value->sequence_parallel, rows[row].sequence_parallel, "%s=%s SP", rows[row].field,
                     rows[row].value);
        if (rows[row].model_restriction)
            cr_expect(value->model_restriction && strstr(value->model_restriction, rows[row].model_restriction),
                      "%s=%s model restriction", rows[row].field, rows[row].value);
        else cr_expect_null(value->model_restriction, "%s=%s model restriction", rows[row].field, rows[row].value);
        cr_expect(value->description && value->description[0], "%s=%s description", rows[row].field, rows[row].value);
    }
}

Test(config_rules, npu_normalizes_values_equal_to_the_gpu_default) {
    static const rule_case rows[] = {
        // defaults
        {NULL, NPU, 1, VEOMNI, "rms_norm", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, "NPU: default liger_kernel -> npu"},
        {NULL, NPU, 1, VEOMNI, "rope", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, "NPU: default liger_kernel -> npu"},
        {NULL, NPU, 1, VEOMNI, "rope_vision", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, "NPU: default eager -> npu"},
        {NULL, NPU, 1, VEOMNI, "ce", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, "NPU: default liger_kernel -> npu"},
        {NULL, NPU, 1, VEOMNI, "moe", "fused_npu", NULL, PARITY_OPS_NOT_CHECKED, NULL,
         "NPU: default fused_triton -> fused_npu"},
        {NULL, NPU, 1, VEOMNI, "swiglu", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL,
         "NPU: default liger_kernel -> eager"},
        {NULL, NPU, 1, VEOMNI, "lb_loss", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, "NPU: default triton -> eager"},
        // explicit values equal to the default are normalized too
        {"rms_norm=liger_kernel", NPU, 1, VEOMNI, "rms_norm", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL,
         "explicit GPU default liger_kernel -> npu"},
        {"rope=liger_kernel", NPU, 1, VEOMNI, "rope", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"rope_vision=eager", NPU, 1, VEOMNI, "rope_vision", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"ce=liger_kernel", NPU, 1, VEOMNI, "ce", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"moe=fused_triton", NPU, 1, VEOMNI, "moe", "fused_npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"swiglu_mlp_implementation=liger_kernel", NPU, 1, VEOMNI, "swiglu", "eager", NULL, PARITY_OPS_NOT_CHECKED,
         NULL, NULL},
        {"load_balancing_loss_implementation=triton", NPU, 1, VEOMNI, "lb_loss", "eager", NULL,
         PARITY_OPS_NOT_CHECKED, NULL, NULL},
        // no normalization on cuda
        {NULL, CUDA, 1, VEOMNI, "rms_norm", "liger_kernel", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {NULL, CUDA, 1, VEOMNI, "moe", "fused_triton", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        // attention, DSA and mHC are never normalized
        {NULL, NPU, 1, VEOMNI, "attn", "flash_attention_2", "veomni_flash_attention_2_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {NULL, NPU, 1, VEOMNI, "dsa_indexer", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {NULL, NPU, 1, VEOMNI, "mhc", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
    };
    check_rows(rows, ROWS(rows));
}

Test(config_rules, npu_keeps_supported_explicit_values_and_rejects_the_rest) {
    static const rule_case rows[] = {
        {"moe=eager", NPU, 1, VEOMNI, "moe", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"moe=fused_npu", NPU, 1, VEOMNI, "moe", "fused_npu", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"ce=chunk_loss", NPU, 1, VEOMNI, "ce", "chunk_loss", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"ce=eager", NPU, 1, VEOMNI, "ce", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"rms_norm=eager", NPU, 1, VEOMNI, "rms_norm", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"rope=eager", NPU, 1, VEOMNI, "rope", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=sdpa", NPU, 1, VEOMNI, "attn", "sdpa", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=eager", NPU, 1, VEOMNI, "attn", "eager", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"moe=fused_quack", NPU, 1, VEOMNI, "moe", NULL, NULL, PARITY_OPS_REJECTED,
         "--ops: moe_implementation: 'fused_quack' is not supported on npu (allowed on npu: eager, fused_npu)", NULL},
        {"rms_norm=triton", NPU, 1, VEOMNI, "rms_norm", NULL, NULL, PARITY_OPS_REJECTED,
         "rms_norm_implementation: 'triton' is not supported on npu (allowed on npu: eager, npu)", NULL},
        {"rope=triton", NPU, 1, VEOMNI, "rope", NULL, NULL, PARITY_OPS_REJECTED,
         "rotary_pos_emb_implementation: 'triton' is not supported on npu (allowed on npu: eager, npu)", NULL},
        {"attn=flash_attention_3", NPU, 1, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "attn_implementation: 'flash_attention_3' is not supported on npu (allowed on npu: eager, sdpa, "
         "flash_attention_2)",
         NULL},
        {"dsa_indexer=tilelang", NPU, 1, VEOMNI, "dsa_indexer", NULL, NULL, PARITY_OPS_REJECTED,
         "dsa_indexer_implementation: 'tilelang' is not supported on npu (allowed on npu: none)", NULL},
        {"rope_vision=npu", CUDA, 1, VEOMNI, "rope_vision", NULL, NULL, PARITY_OPS_REJECTED,
         "rotary_pos_emb_vision_implementation: 'npu' is not supported on cuda (allowed on cuda: eager)", NULL},
        {"moe=fused_npu", CUDA, 1, VEOMNI, "moe", NULL, NULL, PARITY_OPS_REJECTED,
         "moe_implementation: 'fused_npu' is not supported on cuda (allowed on cuda: eager, fused_triton, "
         "fused_quack)",
         NULL},
        {"rms_norm=liger_kernel,rms_norm_gated=fla,moe=fused_quack", CPU, 1, VEOMNI, "moe", NULL, NULL,
         PARITY_OPS_REJECTED, "moe_implementation: 'fused_quack' is not supported on cpu (allowed on cpu: eager)",
         NULL},
        // a default the device has no code for is not a rejection: availability reports it
        {NULL, CPU, 1, VEOMNI, "rms_norm", "liger_kernel", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
    };
    check_rows(rows, ROWS(rows));
}

Test(config_rules, gated_delta_net_fields_are_not_auto_resolved_on_npu) {
    static const rule_case rows[] = {
        {NULL, NPU, 1, VEOMNI, "rms_norm_gated", NULL, NULL, PARITY_OPS_REJECTED,
         "rms_norm_gated_implementation: 'fla' (the GPU default) is not auto-resolved on npu; set it to npu "
         "explicitly (allowed on npu: npu)",
         NULL},
        {NULL, NPU, 1, VEOMNI, "conv1d", NULL, NULL, PARITY_OPS_REJECTED,
         "causal_conv1d_implementation: 'fla' (the GPU default) is not auto-resolved on npu", NULL},
        {NULL, NPU, 1, VEOMNI, "gdr", NULL, NULL, PARITY_OPS_REJECTED,
         "set it to npu explicitly (allowed on npu: npu, npu_ascendc)", NULL},
        {"gdr=fla", NPU, 1, VEOMNI, "gdr", NULL, NULL, PARITY_OPS_REJECTED, "cu_seqlens", NULL},
        {"rms_norm_gated=npu,conv1d=npu,gdr=npu", NPU, 1, VEOMNI, "rms_norm_gated", "npu", NULL,
         PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"rms_norm_gated=npu,conv1d=npu,gdr=npu", NPU, 1, VEOMNI, "conv1d", "npu", NULL, PARITY_OPS_NOT_CHECKED, NULL,
         NULL},
        {"gdr=npu_ascendc", NPU, 1, VEOMNI, "gdr", "npu_ascendc", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"conv1d=eager", NPU, 1, VEOMNI, "conv1d", NULL, NULL, PARITY_OPS_REJECTED,
         "causal_conv1d_implementation: 'eager' is not supported on npu (allowed on npu: npu)", NULL},
        {"gdr=flash_qla", NPU, 1, VEOMNI, "gdr", NULL, NULL, PARITY_OPS_REJECTED,
         "'flash_qla' is not supported on npu (allowed on npu: npu, npu_ascendc)", NULL},
        {NULL, CUDA, 1, VEOMNI, "gdr", "fla", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
    };
    check_rows(rows, ROWS(rows));
}

Test(config_rules, veomni_rewrites_sequence_parallel_attention) {
    static const rule_case rows[] = {
        {"attn=flash_attention_2", CUDA, 1, VEOMNI, "attn", "flash_attention_2", "veomni_flash_attention_2_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, "SP: flash_attention_2 -> veomni_flash_attention_2_with_sp"},
        {"attn=flash_attention_3", CUDA, 1, VEOMNI, "attn", "flash_attention_3", "veomni_flash_attention_3_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, "SP: flash_attention_3 -> veomni_flash_attention_3_with_sp"},
        {"attn=flash_attention_4", CUDA, 1, VEOMNI, "attn", "flash_attention_4", "veomni_flash_attention_4_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=flex_attention", CUDA, 1, VEOMNI, "attn", "flex_attention", "veomni_flex_attention_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, "SP: flex_attention -> veomni_flex_attention_with_sp"},
        {"attn=flash_attention_2", CUDA, 4, VEOMNI, "attn", "flash_attention_2", "veomni_flash_attention_2_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=flex_attention", CUDA, 2, VEOMNI, "attn", "flex_attention", "veomni_flex_attention_with_sp",
         PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=eager", CUDA, 1, VEOMNI, "attn", "eager", "eager", PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=sdpa", CUDA, 1, VEOMNI, "attn", "sdpa", "sdpa", PARITY_OPS_NOT_CHECKED, NULL, NULL},
        {"attn=native-sparse", CUDA, 1, VEOMNI, "attn", "native-sparse", NULL, PARITY_OPS_NOT_CHECKED, NULL, NULL},
        // MODELING_BACKEND=hf: no rewrite
        {"attn=flash_attention_2", CUDA, 1, HF, "attn", "flash_attention_2", "flash_attention_2",
         PARITY_OPS_NOT_CHECKED, NULL, "MODELING_BACKEND=hf: no SP rewrite"},
        {"attn=flex_attention", CUDA, 1, HF, "attn", "flex_attention", "flex_attention", PARITY_OPS_NOT_CHECKED, NULL,
         NULL},
        // sp > 1 needs an attention with SP support
        {"attn=eager", CUDA, 2, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "attn_implementation: 'eager' does not support sequence parallel (sp=2) (allowed with sp > 1 on cuda: "
         "flash_attention_2, flash_attention_3, flash_attention_4, flex_attention)",
         NULL},
        {"attn=sdpa", CUDA, 8, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "'sdpa' does not support sequence parallel (sp=8)", NULL},
        {"attn=native-sparse", CUDA, 2, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "'native-sparse' does not support sequence parallel", NULL},
        {"attn=eager", NPU, 2, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "(allowed with sp > 1 on npu: flash_attention_2)", NULL},
        {"attn=flash_attention_2", CUDA, 2, HF, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "sequence parallel (sp=2) needs MODELING_BACKEND=veomni", NULL},
    };
    check_rows(rows, ROWS(rows));
}

Test(config_rules, unknown_values_name_field_value_and_allowed_values) {
    static const rule_case rows[] = {
        {"ce=zzz", CUDA, 1, VEOMNI, "ce", NULL, NULL, PARITY_OPS_REJECTED,
         "--ops: cross_entropy_loss_implementation: 'zzz' is not a known value (allowed: eager, liger_kernel, "
         "chunk_loss, npu)",
         NULL},
        {"moe=grouped_mm", CUDA, 1, VEOMNI, "moe", NULL, NULL, PARITY_OPS_REJECTED,
         "moe_implementation: 'grouped_mm' is not a known value (allowed: eager, fused_triton, fused_quack, "
         "fused_npu)",
         NULL},
        {"attn=flash_attention", NPU, 1, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "attn_implementation: 'flash_attention' is not a known value (allowed: eager, sdpa, flash_attention_2, "
         "flash_attention_3, flash_attention_4, flex_attention, native-sparse)",
         NULL},
        {"attn=veomni_flash_attention_2_with_sp", CUDA, 1, VEOMNI, "attn", NULL, NULL, PARITY_OPS_REJECTED,
         "is not a known value", NULL},
        {"swiglu=Eager", CUDA, 1, VEOMNI, "swiglu", NULL, NULL, PARITY_OPS_REJECTED,
         "swiglu_mlp_implementation: 'Eager' is not a known value (allowed: eager, liger_kernel)", NULL},
    };
    check_rows(rows, ROWS(rows));
}

Test(config_rules, unknown_fields_are_not_kernel_selection_knobs) {
    static const struct {
        const char *ops;
        const char *message;
    } rows[] = {
        {"foo=bar", "--ops: 'foo' is not a kernel selection knob (valid fields: attn_implementation, "},
        {"use_liger_kernel=true", "'use_liger_kernel' is not a kernel selection knob"},
        {"attention_implementation=eager", "'attention_implementation' is not a kernel selection knob"},
        {"attn=eager,experts_implementation=grouped_mm", "valid fields: attn_implementation, "
                                                         "dsa_indexer_implementation"},
        {"moe=eager,foo=1", "moe_implementation; --ops also takes the aliases of `parity list ops`)"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_ops_config config;
        parity_error *error = build(rows[row].ops, CUDA, 1, VEOMNI, &config);
        cr_expect_not_null(error, "row %zu: %s must fail", row, rows[row].ops);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG, "row %zu", row);
        cr_expect_not_null(find_problem(&config, NULL, rows[row].message), "row %zu: no problem containing \"%s\"",
                           row, rows[row].message);
        parity_error_free(error);
        parity_ops_config_release(&config);
    }
}

Test(config_rules, every_problem_is_collected_not_just_the_first) {
    parity_ops_config config;
    parity_error *error =
        build("foo=1,moe=fused_quack,ce=zzz,attn=eager,bar=2", NPU, 2, VEOMNI, &config);
    cr_assert_not_null(error);
    static const char *const expected[] = {
        "'foo' is not a kernel selection knob",
        "'bar' is not a kernel selection knob",
        "moe_implementation: 'fused_quack' is not supported on npu",
        "cross_entropy_loss_implementation: 'zzz' is not a known value",
        "attn_implementation: 'eager' does not support sequence parallel (sp=2)",
        "rms_norm_gated_implementation: 'fla' (the GPU default) is not auto-resolved on npu",
        "causal_conv1d_implementation: 'fla' (the GPU default) is not auto-resolved on npu",
        "chunk_gated_delta_rule_implementation: 'fla' (the GPU default) is not auto-resolved on npu",
    };
    for (size_t i = 0; i < ROWS(expected); i++)
        cr_expect_not_null(find_problem(&config, NULL, expected[i]), "missing: %s", expected[i]);
    cr_expect_eq(config.rejected_count, ROWS(expected));
    cr_expect_eq(config.problem_count, ROWS(expected));
    cr_expect(strstr(parity_error_message(error), "8 rejected, 0 unavailable") != NULL, "%s",
              parity_error_message(error));
    cr_expect(strstr(parity_error_message(error), "'foo' is not a kernel selection knob") != NULL, "%s",
              parity_error_message(error));
    parity_error_free(error);
    parity_ops_config_release(&config);
}

Test(config_rules, repeated_ops_keys_are_rejected) {
    parity_ops_config config;
    parity_error *error = build("attn=eager,attn_implementation=sdpa", CUDA, 1, VEOMNI, &config);
    cr_assert_not_null(error);
    cr_expect_not_null(find_problem(&config, NULL, "--ops: attn_implementation is set twice ('eager', then 'sdpa')"));
    parity_error_free(error);
    parity_ops_config_release(&config);
}

Test(config_rules, modeling_backend_comes_from_the_environment_unless_set) {
    static const struct {
        const char *environment; // NULL = unset
        parity_modeling_backend requested;
        parity_modeling_backend effective;
        const char *resolved_attention;
        const char *problem; // NULL = none
    } rows[] = {
        {NULL, PARITY_MODELING_FROM_ENVIRONMENT, VEOMNI, "veomni_flash_attention_2_with_sp", NULL},
        {"veomni", PARITY_MODELING_FROM_ENVIRONMENT, VEOMNI, "veomni_flash_attention_2_with_sp", NULL},
        {"hf", PARITY_MODELING_FROM_ENVIRONMENT, HF, "flash_attention_2", NULL},
        {"hf", VEOMNI, VEOMNI, "veomni_flash_attention_2_with_sp", NULL},
        {NULL, HF, HF, "flash_attention_2", NULL},
        {"HF", PARITY_MODELING_FROM_ENVIRONMENT, VEOMNI, "veomni_flash_attention_2_with_sp",
         "MODELING_BACKEND='HF' is not a modeling backend (allowed: veomni, hf)"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        if (rows[row].environment) setenv(PARITY_MODELING_BACKEND_VARIABLE, rows[row].environment, 1);
        else unsetenv(PARITY_MODELING_BACKEND_VARIABLE);
        parity_ops_config config;
        parity_error *error = build(NULL, CUDA, 1, rows[row].requested, &config);
        cr_expect_eq(config.modeling_backend, rows[row].effective, "row %zu", row);
        cr_expect_str_eq(parity_ops_config_find(&config, "attn")->resolved, rows[row].resolved_attention, "row %zu",
                         row);
        if (rows[row].problem) cr_expect_not_null(find_problem(&config, NULL, rows[row].problem), "row %zu", row);
        else cr_expect_null(error, "row %zu", row);
        parity_error_free(error);
        parity_ops_config_release(&config);
    }
    unsetenv(PARITY_MODELING_BACKEND_VARIABLE);
}

Test(config_rules, aliases_and_full_names_select_the_same_field) {
    static const struct {
        const char *alias, *field, *value;
    } rows[] = {
        {"attn", "attn_implementation", "sdpa"},
        {"dsa_indexer", "dsa_indexer_implementation", "cudnn"},
        {"dsa_attn", "dsa_attention_implementation", "flashmla_cudnn"},
        {"mhc", "mhc_implementation", "tilelang"},
        {"ce", "cross_entropy_loss_implementation", "chunk_loss"},
        {"rms_norm", "rms_norm_implementation", "triton"},
        {"swiglu", "swiglu_mlp_implementation", "eager"},
        {"rope", "rotary_pos_emb_implementation", "eager"},
        {"rope_vision", "rotary_pos_emb_vision_implementation", "eager"},
        {"rms_norm_gated", "rms_norm_gated_implementation", "eager"},
        {"conv1d", "causal_conv1d_implementation", "eager"},
        {"gdr", "chunk_gated_delta_rule_implementation", "flash_qla"},
        {"lb_loss", "load_balancing_loss_implementation", "eager"},
        {"moe", "moe_implementation", "fused_quack"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        for (int spelling = 0; spelling < 2; spelling++) {
            char ops[128];
            snprintf(ops, sizeof ops, "%s=%s", spelling ? rows[row].field : rows[row].alias, rows[row].value);
            parity_ops_config config;
            parity_error *error = build(ops, CUDA, 1, VEOMNI, &config);
            cr_expect_null(error, "%s: %s", ops, error ? parity_error_message(error) : "");
            const parity_ops_selection *selection = parity_ops_config_find(&config, rows[row].field);
            cr_expect_str_eq(selection->requested, rows[row].value, "%s", ops);
            cr_expect_eq(selection->source.kind, PARITY_OPS_FROM_COMMAND_LINE, "%s", ops);
            parity_error_free(error);
            parity_ops_config_release(&config);
        }
    }
}

// The config hands its choices on by op id: every field's op has one, and the backend it selected
// (after the rules, e.g. NPU normalization) is what the binding gets for that op.
Test(config_rules, the_selection_becomes_a_backend_name_per_op) {
    parity_ops_config config;
    parity_error_free(build("attn=sdpa,ce=chunk_loss", PARITY_DEVICE_NPU, 1, PARITY_MODELING_VEOMNI, &config));
    parity_op_names names;
    parity_ops_config_op_names(&config, &names);
    size_t named = 0;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        const parity_kernel_field *field = &parity_kernel_fields[i];
        parity_op_id op;
        cr_assert(parity_op_id_find(field->op, &op), "field %s selects op %s, which has no id", field->name, field->op);
        const char *backend = parity_ops_config_backend(&config, field->op);
        if (backend) cr_expect_str_eq(names.name[op], backend, "%s", field->name);
        else cr_expect_null(names.name[op], "%s", field->name);
        named += names.name[op] != NULL;
    }
    cr_expect_str_eq(names.name[PARITY_OP_ID_ATTENTION], "sdpa");
    cr_expect_str_eq(names.name[PARITY_OP_ID_CROSS_ENTROPY], "chunk_loss");
    cr_expect_str_eq(names.name[PARITY_OP_ID_RMS_NORM], "npu", "the NPU normalization of the liger_kernel default");
    cr_expect_null(names.name[PARITY_OP_ID_LINEAR], "an op without a field has no name (it binds eager)");
    cr_expect_gt(named, 0);
    parity_ops_config_release(&config);
}
