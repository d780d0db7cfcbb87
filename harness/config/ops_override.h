// ops_override.h: the --ops command-line override, "field=value,field=value". Keys may be full
// field names or their short aliases (attn, ce, moe, ...); whether a key is a real field is decided
// by the config builder, which reports every unknown key at once. This parser only checks syntax.
#ifndef PARITY_CONFIG_OPS_OVERRIDE_H
#define PARITY_CONFIG_OPS_OVERRIDE_H

#include "harness/config/ops_settings.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

// Appends each "key=value" piece of `text` to `settings` (source: --ops). Spaces around keys and
// values are ignored. Every malformed piece (empty, no '=', empty key or value, a second '=') is
// named in one USAGE error; on error nothing is appended.
parity_error *parity_ops_override_parse(const char *text, parity_ops_settings *settings);

#ifdef __cplusplus
}
#endif
#endif
