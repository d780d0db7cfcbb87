// yaml_ops.h: reads the kernel-selection block of a VeOmni YAML file, model.ops_implementation.
// Everything else in the file (data, train, model paths...) is ignored, as VeOmni ignores it for
// kernel selection; a file without model.ops_implementation means "all defaults". Only the first
// YAML document of a stream is read.
#ifndef PARITY_CONFIG_YAML_OPS_H
#define PARITY_CONFIG_YAML_OPS_H

#include <stddef.h>

#include "harness/config/ops_settings.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

// Appends every model.ops_implementation entry of the YAML file `path` to `settings`, each with
// its file:line. Errors: IO when the file cannot be read; DATA for malformed YAML
// ("run.yaml:4:3: found character that cannot start any token") and for YAML nested deeper than
// PARITY_YAML_MAX_DEPTH (harness/yaml_depth.h); CONFIG naming file:line and the
// key for a non-mapping block, a non-scalar or empty value, or a duplicate key (all such problems
// in one error). On error nothing is appended.
parity_error *parity_yaml_ops_read_file(const char *path, parity_ops_settings *settings);
// The same for YAML text in memory; `name` stands for the file name in messages and sources.
parity_error *parity_yaml_ops_read_text(const char *text, size_t length, const char *name,
                                        parity_ops_settings *settings);

#ifdef __cplusplus
}
#endif
#endif
