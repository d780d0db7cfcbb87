// test_config_availability.c: after the rules, each needed selection is looked up in the backend
// registry for the device, and an unusable one is reported with why ("not built yet", "needs an
// Ascend NPU build", "not supported on cpu", or the backend's own probe), apart from rejections,
// never swapped for eager. Third-party backends registered through parity_registry_add join the
// vocabulary of their op. Each test starts from an empty registry, so the answers do not depend on
// which built-in backends exist yet, and puts the built-ins back at the end.
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness/config/ops_config.h"
#include "harness/config/ops_override.h"
#include "harness/config/value_support.h"
#include "ops/registry.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static void empty_registry(void) { parity_registry_clear(); }
static void builtin_registry(void) {
    parity_registry_clear();
    parity_error_free(parity_registry_register_builtins());
}

static bool refuse_probe(const parity_backend *backend, const parity_device_info *info, char *reason,
                         size_t reason_size) {
    snprintf(reason, reason_size, "needs at least 4 experts per rank");
    return false;
}

static void register_backend(const char *op, const char *name, parity_device_type device, parity_backend_probe probe,
                             uint32_t capabilities) {
    parity_backend backend = {
        .op = op,
        .name = name,
        .device = device,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = capabilities,
        .probe = probe,
        .description = "test backend",
        .origin = "test_config_availability",
    };
    parity_error *error = parity_registry_add(&backend);
    cr_assert_null(error, "registering %s/%s: %s", op, name, parity_error_message(error));
}

static parity_error *build(const char *ops, parity_device_type device, const char *const *needed,
                           parity_ops_config *config) {
    parity_ops_settings settings = {0};
    if (ops) cr_assert_null(parity_ops_override_parse(ops, &settings), "--ops %s", ops);
    parity_ops_config_options options = parity_ops_config_options_default();
    options.device = (parity_device){device, 0};
    options.modeling_backend = PARITY_MODELING_VEOMNI;
    parity_op_set needed_set = {{false}};
    for (const char *const *op = needed; op && *op; op++) {
        parity_op_id id;
        cr_assert(parity_op_id_find(*op, &id), "%s is an op", *op);
        needed_set.contains[id] = true;
    }
    options.needed_ops = needed ? &needed_set : NULL;
    parity_error *error = parity_ops_config_build(&settings, &options, config);
    parity_ops_settings_free(&settings);
    return error;
}

static const parity_ops_problem *find_problem(const parity_ops_config *config, const char *text) {
    for (size_t i = 0; i < config->problem_count; i++)
        if (strstr(config->problems[i].message, text)) return &config->problems[i];
    return NULL;
}

TestSuite(config_availability, .init = empty_registry, .fini = builtin_registry);

Test(config_availability, values_without_a_registry_entry_say_why) {
    static const struct {
        const char *ops;
        parity_device_type device;
        const char *field;
        const char *reason;
        const char *problem;
    } rows[] = {
        {NULL, PARITY_DEVICE_CUDA, "attn", "not built yet",
         "attn_implementation: 'flash_attention_2' is not available on cuda: not built yet"},
        {NULL, PARITY_DEVICE_CUDA, "moe", "not built yet",
         "moe_implementation: 'fused_triton' is not available on cuda: not built yet"},
        {NULL, PARITY_DEVICE_NPU, "rms_norm", "needs an Ascend NPU build",
         "rms_norm_implementation: 'npu' (from liger_kernel) is not available on npu: needs an Ascend NPU build"},
        {"moe=eager", PARITY_DEVICE_NPU, "moe", "needs an Ascend NPU build",
         "moe_implementation: 'eager' is not available on npu: needs an Ascend NPU build"},
        {NULL, PARITY_DEVICE_CPU, "rms_norm", "not supported on cpu",
         "rms_norm_implementation: 'liger_kernel' is not available on cpu: not supported on cpu"},
        {"rms_norm=eager", PARITY_DEVICE_CPU, "rms_norm", "not built yet",
         "rms_norm_implementation: 'eager' is not available on cpu: not built yet"},
        {NULL, PARITY_DEVICE_NPU, "dsa_indexer", "not supported on npu",
         "dsa_indexer_implementation: 'eager' is not available on npu: not supported on npu"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_ops_config config;
        parity_error *error = build(rows[row].ops, rows[row].device, NULL, &config);
        cr_expect_not_null(error, "row %zu", row);
        const parity_ops_selection *selection = parity_ops_config_find(&config, rows[row].field);
        cr_expect_eq(selection->status, PARITY_OPS_UNAVAILABLE, "row %zu: %s", row,
                     parity_ops_status_name(selection->status));
        cr_expect_str_eq(selection->reason, rows[row].reason, "row %zu", row);
        const parity_ops_problem *problem = find_problem(&config, rows[row].problem);
        cr_expect_not_null(problem, "row %zu: no problem \"%s\"", row, rows[row].problem);
        if (problem) cr_expect_eq(problem->kind, PARITY_OPS_PROBLEM_UNAVAILABLE, "row %zu: listed as unavailable", row);
        parity_error_free(error);
        parity_ops_config_release(&config);
    }
}

Test(config_availability, only_unavailability_is_an_unavailable_error) {
    parity_ops_config config;
    parity_error *error = build(NULL, PARITY_DEVICE_CUDA, NULL, &config);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNAVAILABLE);
    cr_expect_eq(config.rejected_count, 0);
    cr_expect_eq(config.unavailable_count, PARITY_KERNEL_FIELD_COUNT);
    parity_error_free(error);
    parity_ops_config_release(&config);
}

Test(config_availability, registered_backends_are_available_and_never_replaced) {
    register_backend(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU, NULL, 0);
    register_backend(PARITY_OP_SWIGLU, "eager", PARITY_DEVICE_CPU, NULL, 0);
    static const char *const needed[] = {PARITY_OP_RMS_NORM, PARITY_OP_SWIGLU, NULL};
    parity_ops_config config;
    parity_error *error = build("rms_norm=eager,swiglu=eager", PARITY_DEVICE_CPU, needed, &config);
    cr_expect_null(error, "%s", error ? parity_error_message(error) : "");
    cr_expect_eq(parity_ops_config_find(&config, "rms_norm")->status, PARITY_OPS_AVAILABLE);
    cr_expect_eq(parity_ops_config_find(&config, "swiglu")->status, PARITY_OPS_AVAILABLE);
    cr_expect_eq(parity_ops_config_find(&config, "moe")->status, PARITY_OPS_NOT_NEEDED, "moe is not needed");
    cr_expect_str_eq(parity_ops_config_backend(&config, PARITY_OP_RMS_NORM), "eager");
    parity_error_free(error);
    parity_ops_config_release(&config);

    // The default liger_kernel is not silently swapped for the registered eager.
    error = build(NULL, PARITY_DEVICE_CPU, needed, &config);
    cr_expect_not_null(error);
    cr_expect_str_eq(parity_ops_config_find(&config, "rms_norm")->backend, "liger_kernel");
    cr_expect_eq(parity_ops_config_find(&config, "rms_norm")->status, PARITY_OPS_UNAVAILABLE);
    parity_error_free(error);
    parity_ops_config_release(&config);
}

Test(config_availability, third_party_values_join_the_vocabulary) {
    parity_ops_config config;
    parity_error *error = build("rms_norm=my_norm", PARITY_DEVICE_CPU, NULL, &config);
    cr_expect_not_null(find_problem(&config, "rms_norm_implementation: 'my_norm' is not a known value"),
                       "unknown before registration");
    parity_error_free(error);
    parity_ops_config_release(&config);

    register_backend(PARITY_OP_RMS_NORM, "my_norm", PARITY_DEVICE_CPU, NULL, 0);
    register_backend(PARITY_OP_MOE_EXPERTS, "my_moe", PARITY_DEVICE_CPU, refuse_probe, 0);
    register_backend(PARITY_OP_ATTENTION, "my_attention", PARITY_DEVICE_CUDA, NULL, PARITY_CAP_SEQUENCE_PARALLEL);
    char values[512];
    const parity_kernel_field *rms_norm = parity_kernel_field_find("rms_norm_implementation", false);
    cr_expect_str_eq(parity_kernel_field_allowed_values(rms_norm, values, sizeof values),
                     "eager, liger_kernel, npu, triton, my_norm");
    cr_expect_str_eq(parity_kernel_field_allowed_values_on(rms_norm, PARITY_DEVICE_CPU, values, sizeof values),
                     "eager, my_norm");

    static const char *const needed[] = {PARITY_OP_RMS_NORM, PARITY_OP_MOE_EXPERTS, NULL};
    error = build("rms_norm=my_norm,moe=my_moe", PARITY_DEVICE_CPU, needed, &config);
    cr_expect_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNAVAILABLE, "availability only, no rejection");
    const parity_ops_selection *norm = parity_ops_config_find(&config, "rms_norm");
    const parity_ops_selection *moe = parity_ops_config_find(&config, "moe");
    cr_expect_eq(norm->status, PARITY_OPS_AVAILABLE);
    cr_expect_eq(moe->status, PARITY_OPS_UNAVAILABLE);
    cr_expect_str_eq(moe->reason, "needs at least 4 experts per rank");
    cr_expect_not_null(find_problem(&config, "moe_implementation: 'my_moe' is not available on cpu: needs at least 4 "
                                             "experts per rank"));
    parity_error_free(error);
    parity_ops_config_release(&config);

    // A third-party value exists only where it is registered.
    error = build("rms_norm=my_norm", PARITY_DEVICE_NPU, NULL, &config);
    cr_expect_not_null(find_problem(&config, "rms_norm_implementation: 'my_norm' is not supported on npu (allowed on "
                                             "npu: eager, npu)"));
    parity_error_free(error);
    parity_ops_config_release(&config);

    // Its capability flags decide sequence-parallel support.
    parity_ops_config_options options = parity_ops_config_options_default();
    options.sequence_parallel_size = 2;
    options.modeling_backend = PARITY_MODELING_VEOMNI;
    options.skip_availability = true;
    parity_ops_settings settings = {0};
    cr_assert_null(parity_ops_override_parse("attn=my_attention", &settings));
    error = parity_ops_config_build(&settings, &options, &config);
    cr_expect_eq(parity_ops_config_find(&config, "attn")->status, PARITY_OPS_NOT_CHECKED);
    cr_expect_str_eq(parity_ops_config_find(&config, "attn")->resolved, "my_attention");
    parity_error_free(error);
    parity_ops_config_release(&config);
    parity_ops_settings_free(&settings);
}

Test(config_availability, value_status_matches_list_backends) {
    register_backend(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU, NULL, 0);
    static const struct {
        const char *field, *value;
        parity_device_type device;
        parity_value_status status;
        const char *reason;
    } rows[] = {
        {"rms_norm", "eager", PARITY_DEVICE_CPU, PARITY_VALUE_AVAILABLE, "available"},
        {"rms_norm", "liger_kernel", PARITY_DEVICE_CPU, PARITY_VALUE_NOT_SUPPORTED, "not supported on cpu"},
        {"rms_norm", "liger_kernel", PARITY_DEVICE_CUDA, PARITY_VALUE_NOT_BUILT, "not built yet"},
        {"rms_norm", "npu", PARITY_DEVICE_NPU, PARITY_VALUE_NOT_BUILT, "needs an Ascend NPU build"},
        {"moe", "fused_npu", PARITY_DEVICE_CUDA, PARITY_VALUE_NOT_SUPPORTED, "not supported on cuda"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        char reason[256];
        const parity_kernel_field *field = parity_kernel_field_find(rows[row].field, true);
        parity_value_status status =
            parity_kernel_value_status(field, rows[row].value, (parity_device){rows[row].device, 0}, reason,
                                       sizeof reason);
        cr_expect_eq(status, rows[row].status, "row %zu", row);
        cr_expect_str_eq(reason, rows[row].reason, "row %zu", row);
    }
}
