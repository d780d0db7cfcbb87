// test_combos.c: combo enumeration. Only fields a model calls are swept (an unused field never
// multiplies the matrix); values that cannot run are reported not_supported with their reason (the
// device, a missing capability), never dropped or run as eager; exclusions carry the suite's reason;
// --ops pins leave the sweep; test-only backends join only when asked; ids are exact and stable.
#include <criterion/criterion.h>
#include <string.h>

#include "harness/combos.h"
#include "harness/config/ops_override.h"
#include "ops/registry.h"
#include "ops/testing/test_backends.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static parity_suite *parse(const char *text) {
    parity_suite *suite = NULL;
    parity_error *error = parity_suite_parse(text, strlen(text), "suites/combos.yaml", &suite);
    char message[2048] = "";
    if (error) parity_error_format(error, message, sizeof message);
    cr_assert_null(error, "%s", message);
    return suite;
}

static parity_model_requirements requirements_of(const char *model) {
    char path[256];
    snprintf(path, sizeof path, "golden/upstream/%s/config.json", model);
    parity_model_config config;
    parity_error *error = parity_model_config_read(path, &config);
    parity_model_requirements requirements;
    if (!error) error = parity_model_requirements_of(&config, &requirements);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    return requirements;
}

// Enumerates model `index` of `suite` (its first batch) in `dtype` on the CPU.
static parity_combo_list enumerate(const parity_suite *suite, size_t index, const char *model_dir, parity_dtype dtype,
                                   const parity_combo_options *options) {
    cr_assert_null(parity_registry_register_builtins());
    parity_model_requirements requirements = requirements_of(model_dir);
    parity_combo_list list = {0};
    size_t batch_count;
    const parity_suite_batch *batches = parity_suite_model_batches(suite, &suite->models[index], &batch_count);
    parity_error *error = parity_combos_enumerate(suite, &suite->models[index], &requirements, &batches[0], dtype, PARITY_CPU,
                                                  options, &list);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    return list;
}

static size_t count_status(const parity_combo_list *list, parity_combo_status status) {
    size_t count = 0;
    for (size_t i = 0; i < list->count; i++) count += list->items[i].status == status;
    return count;
}

static const parity_combo_plan *find(const parity_combo_list *list, const char *id) {
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].id, id) == 0) return &list->items[i];
    return NULL;
}

#define TINY(model) "  - {name: " model ", checkpoint: ../golden/upstream/" model ",\n" \
                    "     batches: [{name: plain, file: ../golden/upstream/" model "/batch.safetensors}]}\n"

Test(combos, ids_are_exact_and_the_baseline_comes_first) {
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\nmodels:\n" TINY("qwen3_tiny"));
    parity_combo_list list = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, NULL);
    static const char *const runnable[] = {
        "qwen3_tiny/plain/attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
        "qwen3_tiny/plain/attn=eager,ce=chunk_loss,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
        "qwen3_tiny/plain/attn=sdpa,ce=eager,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
        "qwen3_tiny/plain/attn=sdpa,ce=chunk_loss,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
    };
    cr_assert_eq(count_status(&list, PARITY_COMBO_PASS), ROWS(runnable));
    for (size_t i = 0; i < ROWS(runnable); i++) {
        cr_expect_str_eq(list.items[i].id, runnable[i], "combo %zu", i);
        cr_expect_eq(list.items[i].is_baseline, i == 0);
    }
    // Stable: a second enumeration gives the same ids in the same order.
    parity_combo_list again = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, NULL);
    cr_assert_eq(again.count, list.count);
    for (size_t i = 0; i < list.count; i++) cr_expect_str_eq(again.items[i].id, list.items[i].id);
    parity_combo_list_release(&again);
    parity_combo_list_release(&list);
    parity_suite_free(suite);
}

// Per model: the fields it calls (in the id, vocabulary order) and how many combos run on the CPU.
Test(combos, unused_fields_do_not_multiply_the_matrix) {
    static const struct {
        const char *model, *fields;
        size_t runnable;
    } rows[] = {
        {"llama3_tiny", "attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager", 4},
        {"qwen3_moe_tiny", "attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager,lb_loss=eager,moe=eager", 4},
        {"deepseek_v3_tiny", "attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager,moe=eager", 4}, // no aux loss
        {"qwen3_5_tiny", "attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager,rms_norm_gated=eager,conv1d=eager,gdr=eager", 8},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "dtypes: fp32\ndevices: cpu\nmodels:\n  - {name: %s, checkpoint: ../golden/upstream/%s,\n"
                 "     batches: [{name: plain, file: ../golden/upstream/%s/batch.safetensors}]}\n",
                 rows[row].model, rows[row].model, rows[row].model);
        parity_suite *suite = parse(text);
        parity_combo_list list = enumerate(suite, 0, rows[row].model, PARITY_F32, NULL);
        char baseline[320];
        snprintf(baseline, sizeof baseline, "%s/plain/%s/fp32/cpu", rows[row].model, rows[row].fields);
        cr_expect_str_eq(list.items[0].id, baseline, "%s", rows[row].model);
        cr_expect_eq(count_status(&list, PARITY_COMBO_PASS), rows[row].runnable, "%s", rows[row].model);
        for (size_t i = 0; i < list.count; i++) {
            cr_expect(strstr(list.items[i].id, "dsa_") == NULL && strstr(list.items[i].id, "mhc=") == NULL &&
                          strstr(list.items[i].id, "rope_vision=") == NULL,
                      "%s calls no DSA, mHC or vision rotary: %s", rows[row].model, list.items[i].id);
        }
        parity_combo_list_release(&list);
        parity_suite_free(suite);
    }
}

Test(combos, unavailable_values_are_not_supported_with_their_reason_once_each) {
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\nmodels:\n" TINY("qwen3_tiny"));
    parity_combo_list list = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, NULL);
    // attn 7 values, ce 4, rms_norm 4, swiglu 2, rope 4 = 21; runnable values 2 + 2 + 1 + 1 + 1 = 7.
    cr_expect_eq(count_status(&list, PARITY_COMBO_NOT_SUPPORTED), 21 - 7);
    const parity_combo_plan *flash =
        find(&list, "qwen3_tiny/plain/attn=flash_attention_3,ce=eager,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu");
    cr_assert_not_null(flash, "flash_attention_3 is listed, not dropped");
    cr_expect_eq(flash->status, PARITY_COMBO_NOT_SUPPORTED);
    cr_expect_str_eq(flash->reason, "attn flash_attention_3: not supported on cpu");
    const parity_combo_plan *liger =
        find(&list, "qwen3_tiny/plain/attn=eager,ce=liger_kernel,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu");
    cr_assert_not_null(liger);
    cr_expect_str_eq(liger->reason, "ce liger_kernel: not supported on cpu");
    parity_combo_list_release(&list);
    parity_suite_free(suite);
}

// A third-party rotary without partial-rotary support: runnable for qwen3, not_supported (naming
// what the model needs) for qwen3_5, whose RoPE is partial.
Test(combos, a_backend_lacking_a_capability_the_model_needs_is_not_supported) {
    cr_assert_null(parity_registry_register_builtins());
    const parity_backend *eager = parity_registry_find(PARITY_OP_ROTARY, "eager", PARITY_DEVICE_CPU);
    cr_assert_null(parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ROTARY, .name = "full_only", .device = PARITY_DEVICE_CPU, .dtypes = eager->dtypes,
        .capabilities = eager->capabilities & ~(uint32_t)PARITY_CAP_PARTIAL_ROTARY, .kernels = eager->kernels,
        .description = "test: rotary without partial RoPE"}));
    parity_suite *suite = parse("dtypes: fp32\ndevices: cpu\nsweep: rope\nmodels:\n" TINY("qwen3_tiny") TINY("qwen3_5_tiny"));
    parity_combo_list dense = enumerate(suite, 0, "qwen3_tiny", PARITY_F32, NULL);
    const parity_combo_plan *runs = find(&dense, "qwen3_tiny/plain/rope=full_only/fp32/cpu");
    cr_assert_not_null(runs);
    cr_expect_eq(runs->status, PARITY_COMBO_PASS);
    parity_combo_list hybrid = enumerate(suite, 1, "qwen3_5_tiny", PARITY_F32, NULL);
    const parity_combo_plan *refused = find(&hybrid, "qwen3_5_tiny/plain/rope=full_only/fp32/cpu");
    cr_assert_not_null(refused);
    cr_expect_eq(refused->status, PARITY_COMBO_NOT_SUPPORTED);
    cr_expect(strstr(refused->reason, "rope full_only: does not support what the model needs from rotary: partial") != NULL,
              "%s", refused->reason);
    parity_combo_list_release(&dense);
    parity_combo_list_release(&hybrid);
    parity_suite_free(suite);
}

Test(combos, sweep_narrows_the_fields_and_the_rest_run_eager) {
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\nsweep: [ce]\nmodels:\n" TINY("qwen3_tiny"));
    parity_combo_list list = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, NULL);
    cr_assert_eq(count_status(&list, PARITY_COMBO_PASS), 2);
    cr_expect_str_eq(list.items[0].id, "qwen3_tiny/plain/ce=eager/bf16/cpu");
    cr_expect_str_eq(list.items[1].id, "qwen3_tiny/plain/ce=chunk_loss/bf16/cpu");
    cr_expect_eq(count_status(&list, PARITY_COMBO_NOT_SUPPORTED), 2, "ce liger_kernel and npu");
    parity_combo_list_release(&list);
    parity_suite_free(suite);
}

Test(combos, exclusions_carry_the_suite_reason_and_cannot_hit_the_baseline) {
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\nsweep: [attn, ce]\nmodels:\n"
                                "  - name: qwen3_tiny\n    checkpoint: ../golden/upstream/qwen3_tiny\n"
                                "    batches: [{name: plain, file: ../golden/upstream/qwen3_tiny/batch.safetensors}]\n"
                                "    exclude:\n      - {match: 'attn=sdpa,ce=chunk*', reason: known sdpa + chunk issue}\n"
                                "      - {match: 'attn=flash_attention_*', reason: no flash on this model}\n");
    parity_combo_list list = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, NULL);
    const parity_combo_plan *excluded = find(&list, "qwen3_tiny/plain/attn=sdpa,ce=chunk_loss/bf16/cpu");
    cr_assert_not_null(excluded);
    cr_expect_eq(excluded->status, PARITY_COMBO_EXCLUDED);
    cr_expect(strstr(excluded->reason, "known sdpa + chunk issue (suites/combos.yaml:9, match attn=sdpa,ce=chunk*)") != NULL,
              "%s", excluded->reason);
    const parity_combo_plan *still = find(&list, "qwen3_tiny/plain/attn=sdpa,ce=eager/bf16/cpu");
    cr_assert_not_null(still);
    cr_expect_eq(still->status, PARITY_COMBO_PASS);
    const parity_combo_plan *flash = find(&list, "qwen3_tiny/plain/attn=flash_attention_2,ce=eager/bf16/cpu");
    cr_assert_not_null(flash);
    cr_expect_eq(flash->status, PARITY_COMBO_EXCLUDED, "an exclusion also covers not-supported combos");
    parity_combo_list_release(&list);
    parity_suite_free(suite);

    suite = parse("dtypes: bf16\ndevices: cpu\nexclude:\n  - {match: dtype=bf16, reason: everything}\nmodels:\n" TINY("qwen3_tiny"));
    parity_model_requirements requirements = requirements_of("qwen3_tiny");
    parity_combo_list rejected = {0};
    parity_error *error = parity_combos_enumerate(suite, &suite->models[0], &requirements, &suite->models[0].batches[0], PARITY_BF16,
                                                  PARITY_CPU, NULL, &rejected);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG);
    cr_expect(strstr(parity_error_message(error), "suites/combos.yaml:4: exclusion 'dtype=bf16' excludes") != NULL, "%s",
              parity_error_message(error));
    parity_error_free(error);
    parity_combo_list_release(&rejected);
    parity_suite_free(suite);
}

Test(combos, ops_pins_leave_the_sweep_but_not_the_baseline) {
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\nmodels:\n" TINY("qwen3_tiny"));
    parity_ops_settings fixed = {0};
    cr_assert_null(parity_ops_override_parse("ce=chunk_loss", &fixed));
    parity_combo_options options = {.fixed = &fixed};
    parity_combo_list list = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, &options);
    static const char *const runnable[] = {
        "qwen3_tiny/plain/attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
        "qwen3_tiny/plain/attn=eager,ce=chunk_loss,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
        "qwen3_tiny/plain/attn=sdpa,ce=chunk_loss,rms_norm=eager,swiglu=eager,rope=eager/bf16/cpu",
    };
    cr_assert_eq(count_status(&list, PARITY_COMBO_PASS), ROWS(runnable));
    for (size_t i = 0; i < ROWS(runnable); i++) cr_expect_str_eq(list.items[i].id, runnable[i]);
    parity_combo_list_release(&list);
    parity_ops_settings_free(&fixed);

    parity_ops_settings unknown = {0};
    cr_assert_null(parity_ops_override_parse("attention=sdpa", &unknown));
    parity_model_requirements requirements = requirements_of("qwen3_tiny");
    options.fixed = &unknown;
    parity_error *error = parity_combos_enumerate(suite, &suite->models[0], &requirements, &suite->models[0].batches[0], PARITY_BF16,
                                                  PARITY_CPU, &options, &list);
    cr_assert_not_null(error);
    cr_expect(strstr(parity_error_message(error), "--ops: 'attention' is not a kernel-selection field") != NULL);
    parity_error_free(error);
    parity_ops_settings_free(&unknown);
    parity_combo_list_release(&list);
    parity_suite_free(suite);
}

Test(combos, test_only_backends_join_only_when_asked) {
    cr_assert_null(parity_registry_register_builtins());
    cr_assert_null(parity_test_backends_register());
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\nsweep: [attn, rms_norm, rope]\nmodels:\n" TINY("qwen3_tiny"));
    parity_combo_list normal = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, NULL);
    for (size_t i = 0; i < normal.count; i++)
        cr_expect(strstr(normal.items[i].id, "test_") == NULL, "a normal matrix has no test backend: %s", normal.items[i].id);
    cr_expect_eq(count_status(&normal, PARITY_COMBO_PASS), 2);
    parity_combo_options options = {.with_test_backends = true};
    parity_combo_list tested = enumerate(suite, 0, "qwen3_tiny", PARITY_BF16, &options);
    // attn {eager, sdpa, test_scale_1pct} x rms_norm {eager, test_perturbed, test_perturbed_bf16_unit, test_wrong_eps,
    // test_flipped_dw, test_flipped_dx} x rope {eager, test_position_off_by_one}
    cr_expect_eq(count_status(&tested, PARITY_COMBO_PASS), 3 * 6 * 2);
    cr_expect_not_null(find(&tested, "qwen3_tiny/plain/attn=test_scale_1pct,rms_norm=eager,rope=test_position_off_by_one/bf16/cpu"));
    parity_combo_list_release(&normal);
    parity_combo_list_release(&tested);
    parity_suite_free(suite);
}

Test(combos, veomni_modes_apply_per_model_with_the_first_as_reference) {
    parity_suite *suite = NULL;
    cr_assert_null(parity_suite_load("suites/veomni-compat.yaml", &suite));
    cr_assert_null(parity_registry_register_builtins());
    size_t counts[2];
    const char *models[2] = {"qwen3", "qwen3_moe"};
    for (size_t m = 0; m < 2; m++) {
        const parity_suite_model *model = parity_suite_find_model(suite, models[m]);
        cr_assert_not_null(model);
        parity_model_config config;
        cr_assert_null(parity_model_config_read(model->config, &config));
        parity_model_requirements requirements;
        cr_assert_null(parity_model_requirements_of(&config, &requirements));
        parity_combo_list list = {0};
        cr_assert_null(parity_combos_enumerate(suite, model, &requirements, &suite->batches[0], PARITY_BF16, PARITY_CPU, NULL, &list));
        counts[m] = list.count;
        cr_expect(list.items[0].is_baseline);
        cr_expect_str_eq(list.items[0].mode, "hf_[attn-eager]");
        for (size_t i = 0; i < list.count; i++)
            cr_expect(m == 1 || strstr(list.items[i].mode, "moe-") == NULL, "dense models get no MoE mode: %s", list.items[i].mode);
        parity_combo_list_release(&list);
    }
    cr_expect_eq(counts[0], 9, "3 HF + 3 x 2 VeOmni modes");
    cr_expect_eq(counts[1], 21, "plus 3 x 2 x 2 fused-MoE modes");
    parity_suite_free(suite);
}

Test(combos, a_first_mode_that_is_not_eager_is_refused) {
    parity_suite *suite = parse("dtypes: bf16\ndevices: cpu\ntolerance: veomni\nmodes:\n"
                                "  - {name: fast, ops: {attn: sdpa}}\n  - {name: ref, ops: {attn: eager}}\nmodels:\n" TINY("qwen3_tiny"));
    parity_model_requirements requirements = requirements_of("qwen3_tiny");
    cr_assert_null(parity_registry_register_builtins());
    parity_combo_list list = {0};
    parity_error *error = parity_combos_enumerate(suite, &suite->models[0], &requirements, &suite->models[0].batches[0], PARITY_BF16,
                                                  PARITY_CPU, NULL, &list);
    cr_assert_not_null(error);
    cr_expect(strstr(parity_error_message(error), "suites/combos.yaml:5: mode 'fast' is the first mode for model qwen3_tiny") != NULL,
              "%s", parity_error_message(error));
    parity_error_free(error);
    parity_combo_list_release(&list);
    parity_suite_free(suite);
}
