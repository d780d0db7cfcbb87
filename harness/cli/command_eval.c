// command_eval.c: `parity eval`: one forward + backward of a model on a batch, printed as one JSON
// object (--json) or a readable summary: loss, aux_loss, grad_norm, per-parameter gradient norms
// (HF names), logits_sum. Every field the model does not set runs eager, so a bare `parity eval`
// is the reference; --ops and --ops-file pick other backends (no fallback: an unavailable one is
// an error).
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/config/ops_override.h"
#include "harness/config/yaml_ops.h"
#include "harness/evaluate.h"
#include "models/checkpoint/safetensors.h"
#include "ops/core/comm.h"

void parity_command_eval_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity eval (--checkpoint DIR | --config config.json --seed N) --batch FILE.safetensors\n"
            "                   [--dtype fp64|fp32|bf16] [--device cpu|cuda] [--ops field=value,...]\n"
            "                   [--ops-file VEOMNI.yaml] [--logits] [--save-grads FILE] [--profile-ops] [--json]\n"
            "                   [--parallel dp=D,sp=S,ep=E[,fsdp]]\n"
            "\n"
            "Runs one forward + backward and reports loss, aux_loss (null for models without one), grad_norm\n"
            "(L2 over every gradient), the gradient norm of every parameter (HF names, fused experts) and the\n"
            "sum of the logits.\n"
            "\n"
            "  --checkpoint DIR     an HF checkpoint directory (config.json + model.safetensors or shards)\n"
            "  --config FILE        a config.json: weights are drawn from the Philox stream (seed, name)\n"
            "  --seed N             the seed for --config (default 0)\n"
            "  --batch FILE         safetensors with int64 input_ids and labels [B, T], optional position_ids\n"
            "                       (packed rows restart positions at 0: attention stays inside each document)\n"
            "  --dtype T            fp64 (default), fp32 or bf16\n"
            "  --device D           cpu (default) or cuda\n"
            "  --ops k=v,...        kernel selection (field names or aliases, see parity list ops); unset\n"
            "                       fields run eager\n"
            "  --ops-file FILE      a VeOmni YAML whose model.ops_implementation block selects backends\n"
            "  --logits             compute the logits (cross-entropy eager only) for logits_sum\n"
            "  --save-grads FILE    write every parameter gradient (f32, HF names) to a safetensors file\n"
            "  --profile-ops        after the step, one more with the device synchronized at every node:\n"
            "                       forward and backward ms per (op, backend), largest first (to stderr\n"
            "                       with --json); for finding the slow op, not for timings\n"
            "  --json               print one JSON object\n"
            "  --parallel LAYOUT    run the step over MPI ranks (CPU), the result the whole batch's:\n"
            "                       dp=D   data parallel, each rank its B / D rows, gradients all-reduced\n"
            "                       sp=S   Ulysses sequence parallel, each rank T / S columns; all-to-all to\n"
            "                              head shards around attention and back (heads must split by S)\n"
            "                       ep=E   expert parallel (MoE models): experts cut in E shards, tokens\n"
            "                              dispatched and combined by all-to-all; E divides D * S\n"
            "                       fsdp   parameters and gradients sharded over the copies, all-gathered at\n"
            "                              use, reduce-scattered after (fsdp=N: N ranks of data parallel)\n"
            "                       e.g. dp=2,sp=2 (4 ranks), sp=2,ep=2 (2 ranks), fsdp=4. Ranks = D * S;\n"
            "                       sums in rank order, so a layout is reproducible. Started by mpirun -np N,\n"
            "                       or it starts itself under mpirun when launched alone. Rank 0 prints.\n"
            "                       Test-only faults (they must fail): test_wrong_group (one rank left out of\n"
            "                       the gradient sum), test_skip_all_to_all (SP attention on local columns),\n"
            "                       test_stall_rank=R / test_kill_rank=R (rank R hangs, or dies by SIGKILL,\n"
            "                       before its first collective: every rank stops with exit 3)\n"
            "\n"
            "exit status: 0 ok; 1 NaN/Inf in the loss or a gradient; 2 usage or config error (unknown or\n"
            "             unavailable backend, a malformed --ops-file); 3 unreadable or malformed checkpoint,\n"
            "             config or batch, an unreadable --ops-file; under --parallel a rank that died or hangs\n"
            "             (a collective waited PARITY_COMM_TIMEOUT_S, default 40 s)\n");
}

typedef struct eval_arguments {
    parity_evaluation_options options;
    const char *ops[16];
    int ops_count;
    const char *ops_file;
    const char *save_gradients;
    bool json;
} eval_arguments;

static int parse_arguments(int argc, char **argv, eval_arguments *arguments) {
    parity_evaluation_options *options = &arguments->options;
    options->dtype = PARITY_F64;
    options->device = PARITY_CPU;
    options->eager_baseline = true;
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--checkpoint")) options->checkpoint = value;
        else if (OPTION("--config")) options->config_path = value;
        else if (OPTION("--batch")) options->batch_path = value;
        else if (OPTION("--ops-file")) arguments->ops_file = value;
        else if (OPTION("--save-grads")) {
            arguments->save_gradients = value;
            options->keep_gradients = true;
        }
        else if (OPTION("--seed")) {
            char *end = NULL;
            if (value) options->seed = strtoull(value, &end, 10);
            if (value && (*end || !*value)) {
                fprintf(stderr, "parity eval: --seed '%s' is not a non-negative integer\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--dtype")) {
            if (value && (!parity_dtype_parse(value, &options->dtype) || !parity_dtype_is_float(options->dtype) ||
                          options->dtype == PARITY_F16)) {
                fprintf(stderr, "parity eval: --dtype '%s' (use fp64, fp32 or bf16)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--device")) {
            if (value && (!parity_device_parse(value, &options->device) || options->device.type == PARITY_DEVICE_NPU)) {
                fprintf(stderr, "parity eval: --device '%s' (use cpu or cuda)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--parallel")) {
            if (value && parity_cli_parse_parallel("eval", value, &options->layout) != PARITY_EXIT_OK) return PARITY_EXIT_CONFIG;
        } else if (OPTION("--ops")) {
            if (value && arguments->ops_count < 16) arguments->ops[arguments->ops_count++] = value;
        } else if (strcmp(argv[i], "--json") == 0) arguments->json = true;
        else if (strcmp(argv[i], "--logits") == 0) options->want_logits = true;
        else if (strcmp(argv[i], "--profile-ops") == 0) options->profile_ops = true;
        else {
            fprintf(stderr, "parity eval: unknown argument '%s' (see parity eval --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (!!options->checkpoint == !!options->config_path) {
        fprintf(stderr, "parity eval: give exactly one of --checkpoint DIR and --config config.json\n");
        return PARITY_EXIT_CONFIG;
    }
    if (!options->batch_path) {
        fprintf(stderr, "parity eval: --batch FILE.safetensors is required\n");
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}

static cJSON *number_or_null(double value, bool present) {
    return present && isfinite(value) ? cJSON_CreateNumber(value) : present ? cJSON_CreateString(isnan(value) ? "nan" : "inf")
                                                                            : cJSON_CreateNull();
}

static void print_json(const eval_arguments *arguments, const parity_evaluation *evaluation) {
    const parity_step_result *step = &evaluation->step;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model_type", evaluation->model_config.model_type);
    cJSON_AddStringToObject(root, "dtype", parity_dtype_name(arguments->options.dtype));
    char device[32];
    cJSON_AddStringToObject(root, "device", parity_device_format(arguments->options.device, device, sizeof device));
    cJSON_AddItemToObject(root, "loss", number_or_null(step->loss, true));
    cJSON_AddItemToObject(root, "aux_loss", number_or_null(step->aux_loss, step->has_aux_loss));
    cJSON_AddItemToObject(root, "grad_norm", number_or_null(step->grad_norm, true));
    cJSON *norms = cJSON_AddObjectToObject(root, "param_grad_norms");
    for (size_t i = 0; i < step->parameter_count; i++)
        cJSON_AddItemToObject(norms, step->parameter_names[i], number_or_null(step->parameter_grad_norms[i], true));
    cJSON_AddItemToObject(root, "logits_sum", number_or_null(step->logits_sum, !isnan(step->logits_sum)));
    cJSON_AddNumberToObject(root, "tokens", (double)evaluation->token_count);
    cJSON_AddNumberToObject(root, "valid_targets", (double)evaluation->valid_target_count);
    cJSON_AddNumberToObject(root, "documents", (double)evaluation->document_count);
    cJSON *ops = cJSON_AddObjectToObject(root, "ops");
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        const parity_ops_selection *selection = &evaluation->ops_config.selections[i];
        if (selection->field && selection->status == PARITY_OPS_AVAILABLE)
            cJSON_AddStringToObject(ops, selection->field->name, selection->resolved);
    }
    char *text = cJSON_PrintUnformatted(root);
    if (text) puts(text);
    free(text);
    cJSON_Delete(root);
}

static void print_summary(const eval_arguments *arguments, const parity_evaluation *evaluation) {
    const parity_step_result *step = &evaluation->step;
    printf("model        %s (%s, %s)\n", evaluation->model_config.model_type, parity_dtype_name(arguments->options.dtype),
           arguments->options.checkpoint ? arguments->options.checkpoint : arguments->options.config_path);
    printf("batch        %lld tokens, %lld documents, %lld targets\n", (long long)evaluation->token_count,
           (long long)evaluation->document_count, (long long)evaluation->valid_target_count);
    printf("loss         %.17g\n", step->loss);
    if (step->has_aux_loss) printf("aux_loss     %.17g\n", step->aux_loss);
    printf("grad_norm    %.17g\n", step->grad_norm);
    if (!isnan(step->logits_sum)) printf("logits_sum   %.17g\n", step->logits_sum);
    printf("parameters   %zu (gradient norms with --json)\n", step->parameter_count);
    if (step->first_non_finite[0]) printf("non-finite   first in %s\n", step->first_non_finite);
}

// Every gradient as f32 (the precision of the upstream grads.safetensors), atomically.
static parity_error *save_gradients(const char *path, const parity_parameters *gradients) {
    parity_tensor *converted = calloc(gradients->count ? gradients->count : 1, sizeof *converted);
    parity_safetensors_item *items = calloc(gradients->count ? gradients->count : 1, sizeof *items);
    parity_error *error = converted && items ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "saving gradients");
    for (size_t i = 0; !error && i < gradients->count; i++) {
        error = parity_tensor_to(&converted[i], &gradients->items[i].value, PARITY_CPU, PARITY_F32);
        items[i] = (parity_safetensors_item){gradients->items[i].name, &converted[i]};
    }
    if (!error) error = parity_safetensors_write(path, items, gradients->count);
    for (size_t i = 0; converted && i < gradients->count; i++) parity_tensor_release(&converted[i]);
    free(converted);
    free(items);
    return error;
}

static int eval_on_this_rank(eval_arguments *arguments);

int parity_command_eval(int argc, char **argv) {
    eval_arguments arguments;
    memset(&arguments, 0, sizeof arguments);
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;
    const int ranks = parity_layout_ranks(&arguments.options.layout);
    if (ranks > 1 && parity_comm_launched_size() == 1) return parity_cli_relaunch_ranks("eval", ranks, argc, argv, NULL);
    status = eval_on_this_rank(&arguments);
    if (ranks > 1 || parity_comm_launched_size() > 1) return parity_cli_end_ranks(status);
    parity_comm_finalize();
    return status;
}

static int eval_on_this_rank(eval_arguments *arguments_in) {
    eval_arguments arguments = *arguments_in;
    int status;
    int rank = 0;
    if (parity_layout_is_parallel(&arguments.options.layout)) {
        parity_comm *world;
        parity_error *world_error = parity_comm_world(&world);
        if (world_error) return parity_cli_report_error("eval", world_error);
        rank = parity_comm_rank(world);
    }
    char command[32];
    snprintf(command, sizeof command, rank ? "eval (rank %d)" : "eval", rank);
    parity_ops_settings settings = {0};
    parity_error *error = NULL;
    if (arguments.ops_file) error = parity_yaml_ops_read_file(arguments.ops_file, &settings);
    if (error) {
        parity_ops_settings_free(&settings);
        return parity_cli_report_ops_file_error(command, error);
    }
    for (int i = 0; !error && i < arguments.ops_count; i++) error = parity_ops_override_parse(arguments.ops[i], &settings);
    if (error) {
        parity_ops_settings_free(&settings);
        return parity_cli_report_error(command, error);
    }
    arguments.options.settings = &settings;
    parity_evaluation evaluation;
    error = parity_evaluate(&arguments.options, &evaluation);
    parity_ops_settings_free(&settings);
    if (error) {
        parity_evaluation_release(&evaluation);
        return parity_cli_report_error(command, error);
    }
    if (rank != 0) { // the result is the same on every rank: rank 0 reports it
        status = evaluation.step.first_non_finite[0] ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK;
        parity_evaluation_release(&evaluation);
        return status;
    }
    if (arguments.save_gradients) {
        error = save_gradients(arguments.save_gradients, &evaluation.gradients);
        if (error) {
            parity_evaluation_release(&evaluation);
            return parity_cli_report_error(command, error);
        }
    }
    if (arguments.json) print_json(&arguments, &evaluation);
    else print_summary(&arguments, &evaluation);
    if (evaluation.has_op_profile) {
        FILE *out = arguments.json ? stderr : stdout;
        fprintf(out, "\nper-op times of one more step:\n");
        parity_tape_profile_print(&evaluation.op_profile, out);
    }
    status = evaluation.step.first_non_finite[0] ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK;
    if (status != PARITY_EXIT_OK) fprintf(stderr, "parity eval: NaN/Inf first appeared in %s\n", evaluation.step.first_non_finite);
    parity_evaluation_release(&evaluation);
    return status;
}
