// test_model_traits.c: model types as data (models/model_traits.c). config.json's model_type is
// looked up once into its traits row; an unknown type names the file, the field and every known
// type; a type reads only the config fields of its kinds (a field its HF config class does not
// have is ignored, as transformers ignores it); absent fields take the defaults of HF's config
// class; a layer kind the type does not have is an error, not a silent reinterpretation.
#include <criterion/criterion.h>
#include <string.h>

#include "models/checkpoint/model_config.h"
#include "models/model.h"

static const char *const supported[] = {"llama", "qwen2", "qwen3", "seed_oss", "qwen3_moe", "deepseek_v3",
                                        "qwen3_5_text", "qwen3_5_moe_text", "qwen3_next"};

#define SIZES "\"vocab_size\":7,\"hidden_size\":8,\"intermediate_size\":4,\"num_hidden_layers\":2,\"num_attention_heads\":2"
#define LINEAR "\"linear_num_key_heads\":1,\"linear_num_value_heads\":2,\"linear_key_head_dim\":4,\"linear_value_head_dim\":2"
#define MLA "\"kv_lora_rank\":4,\"qk_nope_head_dim\":2,\"qk_rope_head_dim\":2,\"v_head_dim\":2"

static char *error_text(parity_error *error) {
    static char buffer[2048];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    return buffer;
}

static parity_model_config parsed(const char *json) {
    parity_model_config config;
    parity_error *error = parity_model_config_parse(json, "dir/config.json", &config);
    cr_assert_null(error, "%s: %s", json, error ? error_text(error) : "");
    return config;
}

Test(model_traits, every_supported_type_has_one_row_with_a_family_and_unknown_types_list_them) {
    for (size_t i = 0; i < sizeof supported / sizeof supported[0]; i++) {
        const parity_model_traits *traits = parity_model_traits_find(supported[i]);
        cr_assert_not_null(traits, "%s has no row", supported[i]);
        cr_expect_str_eq(traits->model_type, supported[i]);
        cr_expect_not_null(traits->family, "%s has no family", supported[i]);
    }
    cr_expect_null(parity_model_traits_find("gpt2"));
    parity_model_config config;
    parity_error *error = parity_model_config_parse("{\"model_type\":\"gpt2\"," SIZES "}", "dir/config.json", &config);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
    const char *text = error_text(error);
    cr_expect(strstr(text, "dir/config.json") && strstr(text, "'model_type'") && strstr(text, "'gpt2'"), "%s", text);
    for (size_t i = 0; i < sizeof supported / sizeof supported[0]; i++)
        cr_expect(strstr(text, supported[i]), "the message does not list %s: %s", supported[i], text);
}

Test(model_traits, the_config_carries_its_row_and_the_row_decides_the_fields_read) {
    parity_model_config config = parsed("{\"model_type\":\"qwen3\"," SIZES "}");
    cr_expect_eq(config.traits, parity_model_traits_find("qwen3"));
    cr_expect_eq(parity_model_family_of(&config), config.traits->family);
    // llama has no MoE, layer_types or rope_interleave: transformers ignores them, so does parity
    config = parsed("{\"model_type\":\"llama\"," SIZES ",\"num_experts\":4,\"num_experts_per_tok\":2,\"moe_intermediate_size\":2,"
                    "\"layer_types\":[\"sliding_attention\",\"full_attention\"],\"rope_interleave\":true}");
    cr_expect_eq(config.num_experts, 0);
    cr_expect_eq(config.layer_kinds[0], PARITY_LAYER_FULL_ATTENTION);
    cr_expect_eq(config.rope.layout, PARITY_ROTARY_HALF_SPLIT);
    // qwen2's q/k/v always have a bias, its o_proj never; seed_oss has its own o_proj field
    config = parsed("{\"model_type\":\"qwen2\"," SIZES ",\"attention_bias\":false,\"attention_out_bias\":true}");
    cr_expect(config.attention_bias && !config.attention_out_bias);
    config = parsed("{\"model_type\":\"seed_oss\"," SIZES ",\"attention_bias\":true,\"attention_out_bias\":false}");
    cr_expect(config.attention_bias && !config.attention_out_bias);
    config = parsed("{\"model_type\":\"llama\"," SIZES ",\"attention_bias\":true}");
    cr_expect(config.attention_bias && config.attention_out_bias);
}

Test(model_traits, absent_fields_take_the_defaults_of_the_types_hf_config_class) {
    parity_model_config config = parsed("{\"model_type\":\"qwen3_5_text\"," SIZES "," LINEAR "}");
    cr_expect_eq(config.rope.partial_rotary_factor, 0.25);
    cr_expect_eq(config.layer_kinds[0], PARITY_LAYER_LINEAR_ATTENTION); // full_attention_interval 4
    config = parsed("{\"model_type\":\"deepseek_v3\"," SIZES "," MLA "}");
    cr_expect_eq(config.rope.layout, PARITY_ROTARY_INTERLEAVED);
    config = parsed("{\"model_type\":\"qwen3_moe\"," SIZES ",\"num_experts\":2,\"num_experts_per_tok\":1,\"moe_intermediate_size\":2}");
    cr_expect_not(config.norm_topk_prob);
    cr_expect(parity_model_config_is_moe_layer(&config, 0));
}

Test(model_traits, a_layer_kind_or_variant_the_type_does_not_have_is_an_error) {
    static const struct {
        const char *json, *expected;
    } cases[] = {
        {"{\"model_type\":\"qwen3\"," SIZES ",\"layer_types\":[\"linear_attention\",\"full_attention\"]}",
         "layer_types[0] is 'linear_attention'"},
        {"{\"model_type\":\"qwen3_next\"," SIZES "," LINEAR ",\"num_experts\":0,\"layer_types\":[\"sliding_attention\",\"full_attention\"]}",
         "layer_types[0] is 'sliding_attention'"},
        {"{\"model_type\":\"qwen3\"," SIZES ",\"use_sliding_window\":true,\"sliding_window\":2}", "use_sliding_window without layer_types"},
        {"{\"model_type\":\"deepseek_v3\"," SIZES "," MLA ",\"attention_bias\":true}", "attention_bias true"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parity_model_config config;
        parity_error *error = parity_model_config_parse(cases[i].json, "dir/config.json", &config);
        cr_assert_not_null(error, "accepted %s", cases[i].json);
        const char *text = error_text(error);
        cr_expect(strstr(text, cases[i].expected) && strstr(text, "dir/config.json"), "'%s' lacks '%s'", text, cases[i].expected);
    }
}
