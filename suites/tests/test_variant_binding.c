// test_variant_binding.c: the hybrid models bind variants of shared ops: the (1 + w) offset RMSNorm
// (PARITY_CAP_OFFSET_WEIGHT) and partial RoPE (PARITY_CAP_PARTIAL_ROTARY, partial_rotary_factor
// 0.25). A backend that cannot do the variant is "not supported" for these models: binding the model
// (parity_model_bind, before it is built) returns UNSUPPORTED naming the op, the backend and the
// variant, and nothing is silently applied. The same backends bind for a model that does not need
// the variant (Qwen3: full rotary, plain RMSNorm), so it is the variant that is refused, not the
// backend. The test backends are the eager kernels registered under new names without the capability.
// A model whose bindings lack an op it calls reports the op from its step, instead of crashing.
#include <criterion/criterion.h>
#include <string.h>

#include "models/model.h"
#include "suites/tests/exec_fixture.h"

typedef struct variant_row {
    const char *op;
    const char *backend;      // registered by the test
    uint32_t dropped;         // the capability the test backend lacks
    const char *variant_text; // what the error must say is missing
} variant_row;

static const variant_row rows[] = {
    {PARITY_OP_ROTARY, "test_full_rotary_only", PARITY_CAP_PARTIAL_ROTARY, "partial rotary"},
    {PARITY_OP_RMS_NORM, "test_plain_rms_norm_only", PARITY_CAP_OFFSET_WEIGHT, "(1 + w) offset weight"},
};

#define HYBRID_FIELDS                                                                                                  \
    "\"vocab_size\":27,\"hidden_size\":16,\"intermediate_size\":12,\"moe_intermediate_size\":6,"                       \
    "\"shared_expert_intermediate_size\":5,\"num_experts\":4,\"num_experts_per_tok\":2,\"num_hidden_layers\":2,"        \
    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":8,\"partial_rotary_factor\":0.25,"               \
    "\"linear_num_key_heads\":1,\"linear_num_value_heads\":2,\"linear_key_head_dim\":4,\"linear_value_head_dim\":3,"   \
    "\"layer_types\":[\"linear_attention\",\"full_attention\"]"
static const struct {
    const char *model_type;
    const char *json;
} hybrid_models[] = {
    {"qwen3_5_text", "{\"model_type\":\"qwen3_5_text\"," HYBRID_FIELDS "}"},
    {"qwen3_5_moe_text", "{\"model_type\":\"qwen3_5_moe_text\"," HYBRID_FIELDS "}"},
    {"qwen3_next", "{\"model_type\":\"qwen3_next\"," HYBRID_FIELDS "}"},
};
static const char plain_model_json[] = "{\"model_type\":\"qwen3\",\"vocab_size\":27,\"hidden_size\":16,\"intermediate_size\":12,"
                                       "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":8}";

static void register_test_backends(void) {
    cr_assert_null(parity_registry_register_builtins());
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const parity_backend *eager;
        cr_assert_null(parity_registry_resolve(rows[i].op, "eager", PARITY_CPU, &eager));
        cr_assert(eager->capabilities & rows[i].dropped, "eager %s should have the variant", rows[i].op);
        parity_backend limited = *eager;
        limited.name = rows[i].backend;
        limited.capabilities &= ~rows[i].dropped;
        limited.description = "test backend without one variant";
        limited.origin = "test_variant_binding";
        cr_assert_null(parity_registry_add(&limited));
    }
}

// Binds and creates a model from `json` with `op` bound to `backend`; returns the error (NULL on success).
static parity_error *create_with(const char *json, const char *op, const char *backend) {
    parity_model_config config;
    cr_assert_null(parity_model_config_parse(json, "test config", &config));
    parity_parameters parameters = {0};
    cr_assert_null(parity_model_random_parameters(&config, 3, 0.02, &parameters));
    parity_op_id id;
    cr_assert(parity_op_id_find(op, &id), "%s is an op", op);
    parity_op_names names = {0};
    names.name[id] = backend;
    parity_model_requirements requirements;
    cr_assert_null(parity_model_requirements_of(&config, &requirements));
    parity_bindings bindings;
    parity_error *error = parity_model_bind(&requirements, &names, PARITY_CPU, PARITY_F64, &bindings);
    parity_model *model = NULL;
    if (!error) error = parity_model_create(&config, &parameters, PARITY_CPU, PARITY_F64, &bindings, &model);
    else parity_parameters_release(&parameters);
    parity_model_free(model);
    return error;
}

Test(variant_binding, hybrid_models_refuse_a_backend_without_the_variant) {
    register_test_backends();
    int refused = 0;
    for (size_t m = 0; m < sizeof hybrid_models / sizeof hybrid_models[0]; m++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            parity_error *error = create_with(hybrid_models[m].json, rows[r].op, rows[r].backend);
            cr_assert_not_null(error, "%s bound %s '%s', which lacks %s", hybrid_models[m].model_type, rows[r].op, rows[r].backend,
                               rows[r].variant_text);
            char text[1024];
            parity_error_format(error, text, sizeof text);
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNSUPPORTED, "%s: %s", hybrid_models[m].model_type, text);
            cr_expect(strstr(text, rows[r].op) && strstr(text, rows[r].backend) && strstr(text, rows[r].variant_text) &&
                          strstr(text, hybrid_models[m].model_type),
                      "%s: the message does not name the op, backend, variant and model: %s", hybrid_models[m].model_type, text);
            parity_error_free(error);
            refused++;
        }
    cr_assert_eq(refused, 6);
}

Test(variant_binding, the_same_backends_bind_where_no_variant_is_needed) {
    register_test_backends();
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        parity_error *error = create_with(plain_model_json, rows[r].op, rows[r].backend);
        char text[1024] = "";
        if (error) parity_error_format(error, text, sizeof text);
        cr_expect_null(error, "qwen3 refused %s '%s': %s", rows[r].op, rows[r].backend, text);
        parity_error_free(error);
    }
}

// One row per op left out of otherwise complete bindings: the step fails naming the op (and the
// model), where a NULL backend used to reach the node.
Test(variant_binding, a_missing_binding_is_reported_naming_the_op) {
    static const parity_op_id missing[] = {PARITY_OP_ID_EMBEDDING, PARITY_OP_ID_RMS_NORM, PARITY_OP_ID_LINEAR,
                                           PARITY_OP_ID_ROTARY, PARITY_OP_ID_ATTENTION, PARITY_OP_ID_SWIGLU,
                                           PARITY_OP_ID_CROSS_ENTROPY};
    cr_assert_null(parity_registry_register_builtins());
    parity_model_config config;
    cr_assert_null(parity_model_config_parse(plain_model_json, "test config", &config));
    parity_model_requirements requirements;
    cr_assert_null(parity_model_requirements_of(&config, &requirements));
    static const int64_t ids[] = {1, 5, 9, 2}, labels[] = {5, 9, 2, 7};
    parity_batch batch;
    cr_assert_null(parity_batch_from_arrays(ids, labels, NULL, 1, 4, config.vocab_size, "missing binding", &batch));
    for (size_t row = 0; row < sizeof missing / sizeof missing[0]; row++) {
        const char *op = parity_op_id_name(missing[row]);
        cr_assert(requirements.needed.contains[missing[row]], "qwen3 calls %s", op);
        parity_bindings bindings;
        cr_assert_null(parity_model_bind(&requirements, NULL, PARITY_CPU, PARITY_F64, &bindings));
        bindings.backend[missing[row]] = NULL;
        parity_parameters parameters = {0};
        cr_assert_null(parity_model_random_parameters(&config, 3, 0.02, &parameters));
        parity_model *model = NULL;
        cr_assert_null(parity_model_create(&config, &parameters, PARITY_CPU, PARITY_F64, &bindings, &model));
        parity_step_result step;
        parity_error *error = parity_model_step(model, parity_test_exec(PARITY_CPU), &batch, false, &step);
        cr_assert_not_null(error, "a step without a %s binding must fail", op);
        char text[1024];
        parity_error_format(error, text, sizeof text);
        cr_expect(strstr(text, op) && strstr(text, "qwen3") && strstr(text, "no bound backend"),
                  "the error does not name the op %s and the model: %s", op, text);
        parity_error_free(error);
        parity_model_free(model);
    }
    parity_batch_release(&batch);
}
