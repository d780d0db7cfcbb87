// test_cli.c: the `parity` command as a user meets it: run through popen from the test binary's own
// folder (build/parity next to build/parity-tests), checking exit codes and what the output names.
// Each row is a command line, its exit status and a piece of its output.
#include <criterion/criterion.h>

#include "cli_runner.h"
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/config/fields.h"
#include "ops/core/device.h"
#include "ops/registry.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// seeds/000, "Full Config Example".
static const char full_config_example[] =
    "model:\n"
    "  ops_implementation:\n"
    "    attn_implementation: flash_attention_2\n"
    "    moe_implementation: fused_triton\n"
    "    cross_entropy_loss_implementation: liger_kernel\n"
    "    rms_norm_implementation: liger_kernel\n"
    "    swiglu_mlp_implementation: eager           # disable Liger for MLP only\n"
    "    rotary_pos_emb_implementation: liger_kernel\n"
    "    load_balancing_loss_implementation: triton\n";

static void write_temporary(const char *text, char *path) {
    strcpy(path, "/tmp/parity-test-cli-XXXXXX");
    int descriptor = mkstemp(path);
    cr_assert(descriptor >= 0);
    size_t length = strlen(text);
    cr_assert_eq(write(descriptor, text, length), (ssize_t)length);
    close(descriptor);
}

// True when some line's first two words are `first` and `second` (and the third, when given).
static bool has_row(const char *output, const char *first, const char *second, const char *third) {
    for (const char *line = output; line && *line;) {
        char a[128], b[128], c[128];
        int words = sscanf(line, "%127s %127s %127s", a, b, c);
        if (words >= 2 && strcmp(a, first) == 0 && strcmp(b, second) == 0 &&
            (!third || (words == 3 && strcmp(c, third) == 0)))
            return true;
        line = strchr(line, '\n');
        if (line) line++;
    }
    return false;
}

Test(cli, usage_and_errors_have_documented_exit_codes) {
    static const struct {
        const char *arguments;
        int exit_code;
        const char *expected;
    } rows[] = {
        {"--version", 0, "parity 0.1.0"},
        {"--help", 0, "commands:"},
        {"help", 0, "config "},
        {"help config", 0, "usage: parity config check"},
        {"config --help", 0, "usage: parity config check"},
        {"config check --help", 0, "3 FILE cannot be read"},
        {"list --help", 0, "usage: parity list ops"},
        {"help list", 0, "parity list backends"},
        {"list ops", 0, "moe_implementation"},
        {"", 2, "usage: parity COMMAND"},
        {"frobnicate", 2, "unknown command 'frobnicate'"},
        {"--frobnicate", 2, "unknown option '--frobnicate'"},
        {"help frobnicate", 2, "unknown command 'frobnicate'"},
        {"list", 2, "ops or backends"},
        {"list things", 2, "unknown list 'things'"},
        {"list backends --device tpu", 2, "unknown device 'tpu'"},
        {"list ops --device all", 2, "unknown device 'all'"},
        {"list backends --frobnicate", 2, "unknown argument '--frobnicate'"},
        {"config", 2, "say what to do: check"},
        {"config fix", 2, "unknown action 'fix'"},
        {"config check --device", 2, "option --device needs a value"},
        {"config check --device tpu", 2, "unknown device 'tpu'"},
        {"config check --sp 0", 2, "--sp needs a positive integer, got '0'"},
        {"config check --sp two", 2, "--sp needs a positive integer"},
        {"config check --modeling-backend torch", 2, "unknown modeling backend 'torch'"},
        {"config check --bogus", 2, "unknown option '--bogus'"},
        {"config check a.yaml b.yaml", 2, "one config file at most"},
        {"config check /nonexistent/parity/run.yaml", 3, "cannot read /nonexistent/parity/run.yaml"},
        {"config check --ops attn", 2, "'attn' (expected field=value)"},
        {"config check --ops foo=bar", 2, "'foo' is not a kernel selection knob"},
        {"config check --ops attn=eager --sp 2", 2, "'eager' does not support sequence parallel (sp=2)"},
        {"config check --ops attn=flash_attention_2 --sp 2 --modeling-backend hf", 2,
         "needs MODELING_BACKEND=veomni"},
        {"config check --ops=attn=sdpa --device=cpu", 2, "sdpa"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        command_result result = run_parity(rows[row].arguments);
        cr_expect_eq(result.exit_code, rows[row].exit_code, "parity %s: exit %d, expected %d\n%s", rows[row].arguments,
                     result.exit_code, rows[row].exit_code, result.output);
        cr_expect(strstr(result.output, rows[row].expected) != NULL, "parity %s: output lacks \"%s\":\n%s",
                  rows[row].arguments, rows[row].expected, result.output);
        free(result.output);
    }
}

Test(cli, config_check_of_the_full_config_example) {
    char path[64], arguments[128];
    write_temporary(full_config_example, path);
    snprintf(arguments, sizeof arguments, "config check %s", path);
    command_result result = run_parity(arguments);
    static const struct {
        const char *field, *value;
    } example[] = {
        {"attn_implementation", "flash_attention_2"},
        {"moe_implementation", "fused_triton"},
        {"cross_entropy_loss_implementation", "liger_kernel"},
        {"rms_norm_implementation", "liger_kernel"},
        {"swiglu_mlp_implementation", "eager"},
        {"rotary_pos_emb_implementation", "liger_kernel"},
        {"load_balancing_loss_implementation", "triton"},
    };
    for (size_t row = 0; row < ROWS(example); row++)
        cr_expect(has_row(result.output, example[row].field, example[row].value, NULL), "no row %s %s:\n%s",
                  example[row].field, example[row].value, result.output);
    cr_expect(strstr(result.output, "veomni_flash_attention_2_with_sp") != NULL, "the SP rewrite is shown");

    parity_error_free(parity_registry_register_builtins());
    bool no_gpu = parity_cuda_device_count(NULL, 0) == 0;
    if (no_gpu) {
        cr_expect_eq(result.exit_code, 2, "no CUDA device: exit 2\n%s", result.output);
        for (size_t row = 0; row < ROWS(example); row++) {
            char expected[256];
            snprintf(expected, sizeof expected, "%s: '%s' is not available on cuda: ", example[row].field,
                     example[row].value);
            cr_expect(strstr(result.output, expected) != NULL, "output lacks \"%s\":\n%s", expected, result.output);
        }
    } else {
        cr_expect(result.exit_code == 0 || result.exit_code == 2, "exit %d", result.exit_code);
    }
    if (!parity_registry_find(PARITY_OP_ATTENTION, "flash_attention_2", PARITY_DEVICE_CUDA)) {
        cr_expect_eq(result.exit_code, 2);
        cr_expect(strstr(result.output, "attn_implementation: 'flash_attention_2' is not available on cuda: not built "
                                        "yet") != NULL,
                  "%s", result.output);
    }
    free(result.output);
    unlink(path);
}

Test(cli, config_check_rejects_fused_quack_on_npu) {
    command_result result = run_parity("config check --ops moe=fused_quack --device npu");
    cr_expect_eq(result.exit_code, 2);
    cr_expect(strstr(result.output,
                     "moe_implementation: 'fused_quack' is not supported on npu (allowed on npu: eager, fused_npu)") !=
                  NULL,
              "%s", result.output);
    cr_expect(strstr(result.output, "rejected (") != NULL, "rejections are listed apart:\n%s", result.output);
    cr_expect(strstr(result.output, "unavailable on this machine (") != NULL, "%s", result.output);
    free(result.output);
}

Test(cli, config_check_names_yaml_errors_with_file_and_line) {
    char path[64], arguments[128], expected[128];
    write_temporary("model:\n  ops_implementation:\n    attn_implementation: eager\n    attn_implementation: sdpa\n",
                    path);
    snprintf(arguments, sizeof arguments, "config check %s", path);
    snprintf(expected, sizeof expected, "%s:4: duplicate key 'attn_implementation'", path);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 2);
    cr_expect(strstr(result.output, expected) != NULL, "%s", result.output);
    free(result.output);
    unlink(path);

    write_temporary("model:\n  ops_implementation:\n    attn_implementation: [eager\n", path);
    snprintf(arguments, sizeof arguments, "config check %s", path);
    snprintf(expected, sizeof expected, "started at %s:3:", path);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 2, "malformed YAML is a config error here");
    cr_expect(strstr(result.output, expected) != NULL, "%s", result.output);
    free(result.output);
    unlink(path);
}

Test(cli, list_backends_lists_every_value_of_every_field) {
    command_result result = run_parity("list backends");
    cr_expect_eq(result.exit_code, 0);
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        const parity_kernel_field *field = &parity_kernel_fields[i];
        for (size_t v = 0; v < field->value_count; v++) {
            const parity_kernel_value *value = &field->values[v];
            for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++) {
                const char *device_name = parity_device_type_name((parity_device_type)device);
                bool listed = has_row(result.output, field->name, value->name, device_name);
                cr_expect_eq(listed, parity_kernel_value_targets(value, (parity_device_type)device),
                             "%s %s %s: listed=%d", field->name, value->name, device_name, listed);
            }
        }
    }
    free(result.output);
}

Test(cli, list_backends_for_one_device_marks_values_written_for_others) {
    command_result result = run_parity("list backends --device cpu");
    cr_expect_eq(result.exit_code, 0);
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        const parity_kernel_field *field = &parity_kernel_fields[i];
        for (size_t v = 0; v < field->value_count; v++) {
            const parity_kernel_value *value = &field->values[v];
            cr_expect(has_row(result.output, field->name, value->name, "cpu"), "%s %s", field->name, value->name);
            cr_expect(!has_row(result.output, field->name, value->name, "cuda") &&
                          !has_row(result.output, field->name, value->name, "npu"),
                      "%s %s: only cpu rows", field->name, value->name);
            if (!parity_kernel_value_targets(value, PARITY_DEVICE_CPU)) {
                char expected[256];
                snprintf(expected, sizeof expected, " %s ", value->name);
                bool marked = false;
                for (const char *line = result.output; line && *line && !marked;) {
                    const char *end = strchr(line, '\n');
                    size_t length = end ? (size_t)(end - line) : strlen(line);
                    char text[512];
                    snprintf(text, sizeof text, "%.*s", (int)length, line);
                    marked = strncmp(text, field->name, strlen(field->name)) == 0 && strstr(text, expected) &&
                             strstr(text, "not supported on cpu");
                    line = end ? end + 1 : NULL;
                }
                cr_expect(marked, "%s %s is not marked \"not supported on cpu\"", field->name, value->name);
            }
        }
    }
    free(result.output);
}
