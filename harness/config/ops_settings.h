// ops_settings.h: kernel-selection settings as the user wrote them, before validation: a list of
// (key, value, where it came from). The YAML reader and the --ops parser append to it; the config
// builder (ops_config.h) validates every entry at once, so one run reports every mistake.
#ifndef PARITY_CONFIG_OPS_SETTINGS_H
#define PARITY_CONFIG_OPS_SETTINGS_H

#include <stddef.h>

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_ops_source_kind {
    PARITY_OPS_FROM_DEFAULT = 0, // the field's default (OpsImplementationConfig dataclass)
    PARITY_OPS_FROM_YAML,        // model.ops_implementation in a YAML file
    PARITY_OPS_FROM_COMMAND_LINE // --ops field=value
} parity_ops_source_kind;

typedef struct parity_ops_source {
    parity_ops_source_kind kind;
    char file[512]; // YAML path (kind YAML)
    int line;       // 1-based line in `file` (kind YAML)
} parity_ops_source;

// "default", "run.yaml:7" or "--ops".
const char *parity_ops_source_format(const parity_ops_source *source, char *buffer, size_t size);

typedef struct parity_ops_setting {
    char *key;   // a field name, or (from --ops) a field alias; unknown keys are kept for the builder
    char *value;
    parity_ops_source source;
} parity_ops_setting;

// Zero-initialize ({0}) before use; release with parity_ops_settings_free.
typedef struct parity_ops_settings {
    parity_ops_setting *items;
    size_t count, capacity;
} parity_ops_settings;

parity_error *parity_ops_settings_add(parity_ops_settings *settings, const char *key, const char *value,
                                      const parity_ops_source *source);
void parity_ops_settings_free(parity_ops_settings *settings);

#ifdef __cplusplus
}
#endif
#endif
