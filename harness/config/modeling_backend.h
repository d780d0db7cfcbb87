// modeling_backend.h: VeOmni's MODELING_BACKEND switch. With "veomni" (the default) VeOmni's ops
// patches are applied, which includes rewriting flash_attention_2/3/4 and flex_attention to the
// sequence-parallel-aware facade names; with "hf" the upstream Transformers modeling runs as is.
// Read from the environment variable MODELING_BACKEND, or set through the API / --modeling-backend.
#ifndef PARITY_CONFIG_MODELING_BACKEND_H
#define PARITY_CONFIG_MODELING_BACKEND_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_modeling_backend {
    PARITY_MODELING_FROM_ENVIRONMENT = 0, // read MODELING_BACKEND when the config is built (unset = veomni)
    PARITY_MODELING_VEOMNI,
    PARITY_MODELING_HF,
} parity_modeling_backend;

#define PARITY_MODELING_BACKEND_VARIABLE "MODELING_BACKEND"

// "veomni", "hf" ("environment" for PARITY_MODELING_FROM_ENVIRONMENT).
const char *parity_modeling_backend_name(parity_modeling_backend backend);
// Accepts "veomni" and "hf"; false for anything else.
bool parity_modeling_backend_parse(const char *text, parity_modeling_backend *out);

#ifdef __cplusplus
}
#endif
#endif
