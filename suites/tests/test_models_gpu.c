// test_models_gpu.c: the reference models at production head sizes on the GPU, in fp64, against the CPU
// eager: the configurations of golden/upstream's tiny checkpoints with their sizes grown (head_dim 128
// with GQA, a GatedDeltaNet of 128 x 128 heads whose f64 state needs more than the default 48 KB of
// shared memory, 32 experts with grouped DeepSeek-V3 routing, MLA with D != Dv, q/k/v biases, GatedDeltaNet
// with routed and shared experts), one row for every case golden/upstream ships (a test scans the folder,
// and builds every grown model on the CPU, without a GPU), weights drawn from a seed, one packed row of
// several documents (the longest 200 tokens). Every op runs eager. loss, aux_loss, grad_norm and every
// parameter's gradient norm must agree to 1e-10 relative, and every gradient sketch (the loss input's
// too) to 1e-10 of its gradient's norm: the two devices run the same math, only the order of the GEMM
// sums differs (and the sketches' signs are the same). This is what fp64 goldens of shapes the
// tiny checkpoints do not reach rest on. Without a GPU every test skips visibly (gpu_skip.h).
#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "upstream_compare.h"
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_skip.h"
#include "models/model.h"
#include "suites/tests/exec_fixture.h"

#define MAX_DOCUMENTS 4

typedef struct grown_model {
    const char *name;
    const char *base;                // golden/upstream case whose config.json is the template
    const char *overrides;           // JSON object: fields replaced or added
    int64_t documents[MAX_DOCUMENTS]; // lengths of the packed row's documents, 0-terminated
} grown_model;

static const grown_model grown_models[] = {
    {"qwen3_5 GatedDeltaNet 128x128, attention D=128", "qwen3_5_tiny",
     "{\"hidden_size\": 256, \"intermediate_size\": 384, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
     " \"head_dim\": 128, \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 128,"
     " \"linear_value_head_dim\": 128}",
     {5, 180, 71}},
    {"llama GQA 4/2 D=128", "llama3_tiny",
     "{\"hidden_size\": 256, \"intermediate_size\": 512, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
     " \"head_dim\": 128}",
     {200, 56}},
    {"qwen3_moe 32 experts top-4", "qwen3_moe_tiny",
     "{\"hidden_size\": 256, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 64,"
     " \"num_local_experts\": 32, \"num_experts_per_tok\": 4, \"moe_intermediate_size\": 128, \"decoder_sparse_step\": 1,"
     " \"norm_topk_prob\": true}",
     {256}},
    {"deepseek_v3 MLA 96/48, 32 experts in 8 groups", "deepseek_v3_tiny",
     "{\"hidden_size\": 256, \"intermediate_size\": 256, \"num_attention_heads\": 4, \"num_key_value_heads\": 4,"
     " \"kv_lora_rank\": 128, \"qk_nope_head_dim\": 64, \"qk_rope_head_dim\": 32, \"qk_head_dim\": 96, \"head_dim\": 32,"
     " \"v_head_dim\": 48, \"n_routed_experts\": 32, \"n_group\": 8, \"topk_group\": 4, \"num_experts_per_tok\": 6,"
     " \"moe_intermediate_size\": 64}",
     {100, 156}},
    {"qwen2 biases GQA 4/2 D=128", "qwen2_tiny",
     "{\"hidden_size\": 512, \"intermediate_size\": 512, \"num_attention_heads\": 4, \"num_key_value_heads\": 2}",
     {3, 97, 156}},
    {"qwen3 q/k-norm GQA 4/2 D=128, tied embeddings", "qwen3_tiny",
     "{\"hidden_size\": 256, \"intermediate_size\": 512, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
     " \"head_dim\": 128}",
     {120, 136}},
    {"seed_oss biases GQA 4/2 D=128", "seed_oss_tiny",
     "{\"hidden_size\": 256, \"intermediate_size\": 512, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
     " \"head_dim\": 128}",
     {200, 1, 55}},
    {"qwen3_next GatedDeltaNet 128x128, 16 experts top-4 + shared", "qwen3_next_tiny",
     "{\"hidden_size\": 256, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 128,"
     " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 128,"
     " \"linear_value_head_dim\": 128, \"num_experts\": 16, \"num_experts_per_tok\": 4, \"moe_intermediate_size\": 64,"
     " \"shared_expert_intermediate_size\": 128}",
     {64, 192}},
    {"qwen3_5_moe GatedDeltaNet 128x128, 16 experts top-4 + shared", "qwen3_5_moe_tiny",
     "{\"hidden_size\": 256, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 128,"
     " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 128,"
     " \"linear_value_head_dim\": 128, \"num_experts\": 16, \"num_experts_per_tok\": 4, \"moe_intermediate_size\": 64,"
     " \"shared_expert_intermediate_size\": 128}",
     {180, 5, 71}},
};

static const double gpu_vs_cpu_bound = 1e-10;
static const uint64_t weight_seed = 20251130;

// The template config.json with the row's overrides applied, parsed.
static void grown_config(const grown_model *row, parity_model_config *out) {
    char path[256];
    snprintf(path, sizeof path, "golden/upstream/%s/config.json", row->base);
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file, "%s: cannot open %s", row->name, path);
    static char text[1 << 16];
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = '\0';
    cJSON *config = cJSON_Parse(text), *overrides = cJSON_Parse(row->overrides);
    cr_assert(config && overrides, "%s: unparsable template or overrides", row->name);
    for (cJSON *item = overrides->child; item; item = item->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(config, item->string);
        cJSON_AddItemToObject(config, item->string, cJSON_Duplicate(item, true));
    }
    char *grown = cJSON_PrintUnformatted(config);
    parity_error *error = parity_model_config_parse(grown, row->name, out);
    cr_assert_null(error, "%s: %s", row->name, error ? upstream_error_text(error) : "");
    free(grown);
    cJSON_Delete(config);
    cJSON_Delete(overrides);
}

// One packed row of the row's documents: ids and labels from a fixed sequence, every 37th label ignored.
static void packed_batch(const grown_model *row, int64_t vocab_size, parity_batch *out) {
    int64_t tokens = 0;
    for (int d = 0; d < MAX_DOCUMENTS && row->documents[d]; d++) tokens += row->documents[d];
    int64_t *ids = malloc((size_t)tokens * sizeof *ids), *labels = malloc((size_t)tokens * sizeof *labels);
    int64_t *positions = malloc((size_t)tokens * sizeof *positions);
    cr_assert(ids && labels && positions);
    uint64_t state = 0x2545f4914f6cdd1dull;
    for (int d = 0, i = 0; d < MAX_DOCUMENTS && row->documents[d]; d++)
        for (int64_t p = 0; p < row->documents[d]; p++, i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            ids[i] = (int64_t)((state >> 33) % (uint64_t)vocab_size);
            positions[i] = p;
        }
    for (int64_t i = 0; i < tokens; i++) labels[i] = i % 37 == 36 ? PARITY_IGNORE_INDEX : ids[(i * 7 + 3) % tokens];
    parity_error *error = parity_batch_from_arrays(ids, labels, positions, 1, tokens, vocab_size, row->name, out);
    cr_assert_null(error, "%s: %s", row->name, error ? upstream_error_text(error) : "");
    free(ids);
    free(labels);
    free(positions);
}

// One all-eager fp64 step of the drawn model on `device`.
static void step_on(const grown_model *row, const parity_model_config *config, const parity_batch *host_batch,
                    parity_device device, parity_step_result *out) {
    char where[32];
    parity_device_format(device, where, sizeof where);
    parity_parameters parameters = {0};
    parity_error *error = parity_model_random_parameters(config, weight_seed, 0.02, &parameters);
    cr_assert_null(error, "%s on %s: %s", row->name, where, error ? upstream_error_text(error) : "");
    parity_model_requirements requirements;
    parity_bindings bindings;
    error = parity_model_requirements_of(config, &requirements);
    if (!error) error = parity_model_bind(&requirements, NULL, device, PARITY_F64, &bindings);
    cr_assert_null(error, "%s on %s: %s", row->name, where, error ? upstream_error_text(error) : "");
    parity_model *model;
    error = parity_model_create(config, &parameters, device, PARITY_F64, &bindings, &model);
    cr_assert_null(error, "%s on %s: %s", row->name, where, error ? upstream_error_text(error) : "");
    parity_batch device_batch = {0};
    const parity_batch *batch = host_batch;
    if (device.type != PARITY_DEVICE_CPU) {
        error = parity_batch_to_device(host_batch, device, &device_batch);
        cr_assert_null(error, "%s on %s: %s", row->name, where, error ? upstream_error_text(error) : "");
        batch = &device_batch;
    }
    error = parity_model_step(model, parity_test_exec(model->device), batch, false, out);
    cr_assert_null(error, "%s on %s: %s", row->name, where, error ? upstream_error_text(error) : "");
    cr_expect_eq(out->first_non_finite[0], '\0', "%s on %s: NaN/Inf in %s", row->name, where, out->first_non_finite);
    parity_batch_release(&device_batch);
    parity_model_free(model);
}

static void check_row(const grown_model *row) {
    parity_test_require_gpu();
    parity_model_config config;
    grown_config(row, &config);
    parity_batch batch;
    packed_batch(row, config.vocab_size, &batch);
    parity_step_result gpu, cpu;
    step_on(row, &config, &batch, PARITY_CUDA(0), &gpu);
    step_on(row, &config, &batch, PARITY_CPU, &cpu);
    double loss = upstream_relative(gpu.loss, cpu.loss), grad_norm = upstream_relative(gpu.grad_norm, cpu.grad_norm), worst = 0;
    double aux = cpu.has_aux_loss ? upstream_relative(gpu.aux_loss, cpu.aux_loss) : 0;
    const char *worst_name = "";
    cr_expect_eq(gpu.has_aux_loss, cpu.has_aux_loss, "%s: aux loss on one device only", row->name);
    cr_assert_eq(gpu.parameter_count, cpu.parameter_count, "%s: %zu parameters with gradients on cuda, %zu on cpu", row->name,
                 gpu.parameter_count, cpu.parameter_count);
    cr_expect(cpu.parameter_count > 0, "%s: no gradients", row->name);
    double worst_sketch = 0; // max |s_j(cuda) - s_j(cpu)| / |g(cpu)| over every gradient
    const char *worst_sketch_name = "";
    for (size_t i = 0; i < gpu.parameter_count; i++) {
        cr_expect_str_eq(gpu.parameter_names[i], cpu.parameter_names[i], "%s: parameter %zu", row->name, i);
        double difference = upstream_relative(gpu.parameter_grad_norms[i], cpu.parameter_grad_norms[i]);
        if (!(difference <= worst)) {
            worst = isnan(difference) ? INFINITY : difference;
            worst_name = gpu.parameter_names[i];
        }
        for (int j = 0; j < PARITY_SKETCH_K; j++) {
            double gap = fabs(gpu.parameter_grad_sketches[i * PARITY_SKETCH_K + j] - cpu.parameter_grad_sketches[i * PARITY_SKETCH_K + j]) /
                         fmax(cpu.parameter_grad_norms[i], 1e-300);
            if (!(gap <= worst_sketch)) worst_sketch = isnan(gap) ? INFINITY : gap, worst_sketch_name = gpu.parameter_names[i];
        }
    }
    cr_expect(gpu.has_loss_input && cpu.has_loss_input, "%s: the loss input's gradient on both devices", row->name);
    double loss_input = upstream_relative(gpu.loss_input_grad_norm, cpu.loss_input_grad_norm);
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        double gap = fabs(gpu.loss_input_grad_sketch[j] - cpu.loss_input_grad_sketch[j]) / fmax(cpu.loss_input_grad_norm, 1e-300);
        if (!(gap <= worst_sketch)) worst_sketch = isnan(gap) ? INFINITY : gap, worst_sketch_name = PARITY_STEP_LOSS_INPUT;
    }
    cr_log_info("%-48s %lld tokens: loss %.1e aux %.1e grad_norm %.1e worst parameter norm %.1e (%s)", row->name,
                (long long)batch.token_count, loss, aux, grad_norm, worst, worst_name);
    cr_expect(loss <= gpu_vs_cpu_bound, "%s: loss differs from the cpu by %.2e relative", row->name, loss);
    cr_expect(aux <= gpu_vs_cpu_bound, "%s: aux_loss differs from the cpu by %.2e relative", row->name, aux);
    cr_expect(grad_norm <= gpu_vs_cpu_bound, "%s: grad_norm differs from the cpu by %.2e relative", row->name, grad_norm);
    cr_expect(worst <= gpu_vs_cpu_bound, "%s: the gradient norm of %s differs from the cpu by %.2e relative", row->name,
              worst_name, worst);
    cr_log_info("%-48s loss input norm %.1e, worst sketch %.1e of the norm (%s)", row->name, loss_input, worst_sketch,
                worst_sketch_name);
    cr_expect(loss_input <= gpu_vs_cpu_bound, "%s: the loss input's gradient norm differs from the cpu by %.2e relative", row->name,
              loss_input);
    cr_expect(worst_sketch <= gpu_vs_cpu_bound, "%s: the sketch of %s differs from the cpu by %.2e of its norm", row->name,
              worst_sketch_name, worst_sketch);
    parity_step_result_release(&gpu);
    parity_step_result_release(&cpu);
    parity_batch_release(&batch);
}

// Each test and the golden/upstream case whose configuration its row grows. The tests and the scan
// below are both made from this one list, so a row cannot lack its test.
#define GROWN_TESTS(X)                                  \
    X(qwen3_5_gated_delta_net_128, "qwen3_5_tiny")      \
    X(llama_gqa_head_dim_128, "llama3_tiny")            \
    X(qwen3_moe_32_experts, "qwen3_moe_tiny")           \
    X(deepseek_v3_mla_grouped_routing, "deepseek_v3_tiny") \
    X(qwen2_biases_head_dim_128, "qwen2_tiny")          \
    X(qwen3_qk_norm_head_dim_128, "qwen3_tiny")         \
    X(seed_oss_biases_head_dim_128, "seed_oss_tiny")    \
    X(qwen3_next_gated_delta_net_experts, "qwen3_next_tiny") \
    X(qwen3_5_moe_gated_delta_net_experts, "qwen3_5_moe_tiny")

static const grown_model *row_of(const char *base) {
    for (size_t i = 0; i < sizeof grown_models / sizeof grown_models[0]; i++)
        if (strcmp(grown_models[i].base, base) == 0) return &grown_models[i];
    cr_assert_fail("no grown row of %s", base);
    return NULL;
}

#define GROWN_TEST(test, base) Test(models_gpu, test) { check_row(row_of(base)); }
GROWN_TESTS(GROWN_TEST)

#define GROWN_BASE(test, base) base,
static const char *const tested_bases[] = {GROWN_TESTS(GROWN_BASE)};
#define TESTED_COUNT (sizeof tested_bases / sizeof tested_bases[0])

static bool is_tested(const char *base) {
    for (size_t i = 0; i < TESTED_COUNT; i++)
        if (strcmp(tested_bases[i], base) == 0) return true;
    return false;
}

// Runs without a GPU: every case shipped in golden/upstream (a folder with a config.json) has a grown
// row and a test, every row grows a shipped case and has a test, and every grown configuration
// parses, binds and builds on the CPU (what the GPU tests start from).
Test(models_gpu, every_upstream_case_is_grown) {
    DIR *directory = opendir("golden/upstream");
    cr_assert_not_null(directory, "golden/upstream: %s", strerror(errno));
    size_t cases = 0;
    struct dirent *entry;
    while ((entry = readdir(directory))) {
        char path[512];
        snprintf(path, sizeof path, "golden/upstream/%s/config.json", entry->d_name);
        if (entry->d_name[0] == '.' || access(path, R_OK) != 0) continue;
        cases++;
        bool grown = false;
        for (size_t i = 0; i < sizeof grown_models / sizeof grown_models[0]; i++) grown |= strcmp(grown_models[i].base, entry->d_name) == 0;
        cr_expect(grown, "golden/upstream/%s has no grown row in test_models_gpu.c", entry->d_name);
        cr_expect(is_tested(entry->d_name), "golden/upstream/%s has no test in GROWN_TESTS", entry->d_name);
    }
    closedir(directory);
    cr_expect_gt(cases, 0, "no case in golden/upstream");
    cr_assert_null(parity_registry_register_builtins());
    for (size_t i = 0; i < sizeof grown_models / sizeof grown_models[0]; i++) {
        const grown_model *row = &grown_models[i];
        char path[512];
        snprintf(path, sizeof path, "golden/upstream/%s/config.json", row->base);
        cr_expect_eq(access(path, R_OK), 0, "%s grows %s, which golden/upstream does not ship", row->name, row->base);
        cr_expect(is_tested(row->base), "%s has no test in GROWN_TESTS", row->name);
        for (size_t j = 0; j < i; j++)
            cr_expect(strcmp(grown_models[j].base, row->base) != 0, "%s and %s grow the same case", grown_models[j].name, row->name);
        parity_model_config config;
        grown_config(row, &config);
        parity_parameters parameters = {0};
        parity_error *error = parity_model_random_parameters(&config, weight_seed, 0.02, &parameters);
        parity_model_requirements requirements;
        parity_bindings bindings;
        if (!error) error = parity_model_requirements_of(&config, &requirements);
        if (!error) error = parity_model_bind(&requirements, NULL, PARITY_CPU, PARITY_F64, &bindings);
        parity_model *model = NULL;
        if (!error) error = parity_model_create(&config, &parameters, PARITY_CPU, PARITY_F64, &bindings, &model);
        cr_expect_null(error, "%s on cpu: %s", row->name, error ? upstream_error_text(error) : "");
        if (model) parity_model_free(model);
    }
    for (size_t t = 0; t < TESTED_COUNT; t++) {
        bool has_row = false;
        for (size_t i = 0; i < sizeof grown_models / sizeof grown_models[0]; i++) has_row |= strcmp(grown_models[i].base, tested_bases[t]) == 0;
        cr_expect(has_row, "the test of %s has no grown row", tested_bases[t]);
    }
}
