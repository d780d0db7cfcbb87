// test_config_override.c: the --ops "field=value,field=value" syntax: pieces, spaces, aliases
// kept as written for the builder, and every malformed piece named in one usage error.
#include <criterion/criterion.h>
#include <string.h>

#include "harness/config/ops_override.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

Test(config_override, well_formed_pieces_become_settings) {
    static const struct {
        const char *text;
        size_t count;
        const char *keys[3], *values[3];
    } rows[] = {
        {"attn=sdpa", 1, {"attn"}, {"sdpa"}},
        {"attn=eager,ce=npu", 2, {"attn", "ce"}, {"eager", "npu"}},
        {" attn = sdpa , moe=eager ", 2, {"attn", "moe"}, {"sdpa", "eager"}},
        {"moe_implementation=fused_quack,rope=triton,gdr=npu_ascendc", 3,
         {"moe_implementation", "rope", "gdr"}, {"fused_quack", "triton", "npu_ascendc"}},
        {"attn=native-sparse", 1, {"attn"}, {"native-sparse"}},
        {"foo=bar", 1, {"foo"}, {"bar"}}, // unknown keys are the builder's to report
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_ops_settings settings = {0};
        parity_error *error = parity_ops_override_parse(rows[row].text, &settings);
        cr_expect_null(error, "\"%s\": %s", rows[row].text, error ? parity_error_message(error) : "");
        cr_assert_eq(settings.count, rows[row].count, "\"%s\"", rows[row].text);
        for (size_t i = 0; i < rows[row].count; i++) {
            cr_expect_str_eq(settings.items[i].key, rows[row].keys[i], "\"%s\" piece %zu", rows[row].text, i);
            cr_expect_str_eq(settings.items[i].value, rows[row].values[i], "\"%s\" piece %zu", rows[row].text, i);
            cr_expect_eq(settings.items[i].source.kind, PARITY_OPS_FROM_COMMAND_LINE);
        }
        parity_error_free(error);
        parity_ops_settings_free(&settings);
    }
}

Test(config_override, malformed_pieces_are_named) {
    static const struct {
        const char *text;
        const char *expected[3]; // substrings of the message
    } rows[] = {
        {"attn", {"'attn' (expected field=value)", NULL, NULL}},
        {"attn=", {"'attn=' (missing value after '=')", NULL, NULL}},
        {"=eager", {"'=eager' (missing field name before '=')", NULL, NULL}},
        {"attn=eager,,moe=eager", {"'' (empty piece)", NULL, NULL}},
        {"attn=eager,", {"'' (empty piece)", NULL, NULL}},
        {"", {"'' (empty piece)", NULL, NULL}},
        {"attn=a=b", {"'attn=a=b' (more than one '=')", NULL, NULL}},
        {"a,b=,=c", {"3 malformed pieces", "'a' (expected field=value)", "'=c' (missing field name before '=')"}},
        {"ce=eager,attn sdpa", {"1 malformed piece", "'attn sdpa'", "expected field=value[,field=value...]"}},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_ops_settings settings = {0};
        parity_error *error = parity_ops_override_parse(rows[row].text, &settings);
        cr_assert_not_null(error, "\"%s\" must be rejected", rows[row].text);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
        for (int i = 0; i < 3; i++)
            if (rows[row].expected[i])
                cr_expect(strstr(parity_error_message(error), rows[row].expected[i]) != NULL,
                          "\"%s\": \"%s\" lacks \"%s\"", rows[row].text, parity_error_message(error),
                          rows[row].expected[i]);
        cr_expect_eq(settings.count, 0, "\"%s\": nothing added", rows[row].text);
        parity_error_free(error);
        parity_ops_settings_free(&settings);
    }
}

Test(config_override, a_failed_parse_leaves_earlier_settings_alone) {
    parity_ops_settings settings = {0};
    cr_assert_null(parity_ops_override_parse("attn=sdpa", &settings));
    parity_error *error = parity_ops_override_parse("moe=eager,oops", &settings);
    cr_expect_not_null(error);
    cr_expect_eq(settings.count, 1);
    parity_error_free(error);
    parity_ops_settings_free(&settings);
}
