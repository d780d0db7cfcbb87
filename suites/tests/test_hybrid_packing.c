// test_hybrid_packing.c: packing is invisible at the model level for the hybrid models. Qwen3.5 (drawn
// weights, f64) on one packed row of documents {5, 1, 7} (position_ids restart at each document, the
// label at each document start is -100 so no target crosses a document) must give the loss of the
// documents run alone, combined by their valid-target counts n_d:
//   loss(packed) = sum_d n_d loss_d / sum_d n_d,   grad(packed) = sum_d n_d grad_d / sum_d n_d
// with the gated delta rule recurrent ("eager") and chunked ("fla"). The 1-token document has no valid
// target: alone it contributes nothing, packed it must not disturb its neighbours (conv taps, the
// delta-rule state and attention all stop at document boundaries).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <string.h>

#include "models/model.h"
#include "suites/tests/exec_fixture.h"
#include "ops/testing/worst_error.h"

static const char config_json[] =
    "{\"model_type\":\"qwen3_5_text\",\"vocab_size\":29,\"hidden_size\":16,\"intermediate_size\":12,\"num_hidden_layers\":2,"
    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":8,\"partial_rotary_factor\":0.5,"
    "\"linear_num_key_heads\":1,\"linear_num_value_heads\":2,\"linear_key_head_dim\":4,\"linear_value_head_dim\":3,"
    "\"linear_conv_kernel_dim\":3,\"layer_types\":[\"linear_attention\",\"full_attention\"]}";

enum { document_count = 3, tokens = 13 };
static const int64_t lengths[document_count] = {5, 1, 7};
static const int64_t ids[tokens] = {3, 7, 1, 9, 4, 2, 8, 5, 6, 0, 11, 12, 13};
static const int64_t labels[tokens] = {-100, 7, 1, 9, 4, -100, -100, 5, 6, 0, 11, 12, 13};
static const int64_t positions[tokens] = {0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 4, 5, 6};

static char *error_text(parity_error *error) {
    static char buffer[4096];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    return buffer;
}

static void check_packing(const char *gdr) {
    cr_assert_null(parity_registry_register_builtins());
    parity_model_config config;
    cr_assert_null(parity_model_config_parse(config_json, "qwen3_5 packing", &config));
    parity_parameters parameters = {0};
    cr_assert_null(parity_model_random_parameters(&config, 21, 0.3, &parameters));
    parity_op_names names = {.name = {[PARITY_OP_ID_GATED_DELTA_RULE] = gdr}};
    parity_model_requirements requirements;
    parity_bindings bindings;
    cr_assert_null(parity_model_requirements_of(&config, &requirements));
    cr_assert_null(parity_model_bind(&requirements, &names, PARITY_CPU, PARITY_F64, &bindings));
    parity_model *model;
    cr_assert_null(parity_model_create(&config, &parameters, PARITY_CPU, PARITY_F64, &bindings, &model));

    parity_batch packed;
    parity_error *error = parity_batch_from_arrays(ids, labels, positions, 1, tokens, config.vocab_size, "packed row", &packed);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    cr_assert_eq(packed.document_count, document_count);
    parity_step_result packed_step;
    cr_assert_null(parity_model_step(model, parity_test_exec(model->device), &packed, false, &packed_step));
    size_t count = model->parameters.count;
    parity_tensor packed_gradients[64], combined[64];
    cr_assert(count <= 64);
    for (size_t p = 0; p < count; p++) {
        cr_assert_null(parity_tensor_to(&packed_gradients[p], &model->parameters.items[p].gradient, PARITY_CPU, PARITY_F64));
        cr_assert_null(parity_tensor_zeros(&combined[p], PARITY_F64, PARITY_CPU, packed_gradients[p].ndim, packed_gradients[p].shape));
    }

    double weighted_loss = 0;
    int64_t total_targets = 0, start = 0;
    for (int d = 0; d < document_count; d++) {
        parity_batch alone;
        error = parity_batch_from_arrays(ids + start, labels + start, NULL, 1, lengths[d], config.vocab_size, "document", &alone);
        cr_assert_null(error, "%s", error ? error_text(error) : "");
        int64_t targets = alone.valid_target_count;
        start += lengths[d];
        if (targets == 0) { // the 1-token document: nothing to learn from alone
            parity_batch_release(&alone);
            continue;
        }
        parity_step_result step;
        cr_assert_null(parity_model_step(model, parity_test_exec(model->device), &alone, false, &step));
        weighted_loss += (double)targets * step.loss;
        total_targets += targets;
        for (size_t p = 0; p < count; p++) {
            const parity_tensor *gradient = &model->parameters.items[p].gradient;
            if (!gradient->data) continue;
            for (int64_t i = 0; i < combined[p].numel; i++)
                parity_tensor_set(&combined[p], i, parity_tensor_get(&combined[p], i) + (double)targets * parity_tensor_get(gradient, i));
        }
        parity_step_result_release(&step);
        parity_batch_release(&alone);
    }
    cr_assert_eq(total_targets, packed.valid_target_count, "the documents' targets do not add up to the packed row's");
    double loss = fabs(packed_step.loss - weighted_loss / (double)total_targets) / packed_step.loss, worst = 0;
    const char *worst_name = "";
    for (size_t p = 0; p < count; p++) {
        double difference = 0, norm = 0;
        for (int64_t i = 0; i < combined[p].numel; i++) {
            double expected = parity_tensor_get(&combined[p], i) / (double)total_targets, actual = parity_tensor_get(&packed_gradients[p], i);
            difference += (actual - expected) * (actual - expected);
            norm += expected * expected;
        }
        double relative = sqrt(difference / fmax(norm, 1e-300));
        if (parity_test_worse(relative, worst)) worst = relative, worst_name = model->parameters.items[p].name;
        parity_tensor_release(&packed_gradients[p]);
        parity_tensor_release(&combined[p]);
    }
    cr_log_info("qwen3_5 packed {5, 1, 7} [gdr=%s]: loss %.1e, worst gradient %.1e (%s)", gdr, loss, worst, worst_name);
    cr_expect(loss <= 1e-13, "gdr=%s: packed loss differs from the documents' by %.2e", gdr, loss);
    cr_expect(worst <= 1e-12, "gdr=%s: packed gradient of %s differs by %.2e", gdr, worst_name, worst);
    parity_step_result_release(&packed_step);
    parity_batch_release(&packed);
    parity_model_free(model);
}

Test(hybrid_packing, packed_row_equals_documents_alone_recurrent) { check_packing("eager"); }
Test(hybrid_packing, packed_row_equals_documents_alone_chunked) { check_packing("fla"); }
