// yaml_limits.h: what keeps the YAML readers (the suite reader, harness/suite.c, and the
// kernel-selection reader, harness/config/yaml_ops.c) fast on any input.
//   - Nesting depth, checked before libyaml builds the document: libyaml 0.2.5 has no nesting limit
//     and its scanner rechecks every open flow level at each token, so a file of 100k nested '['
//     (200 KB) takes minutes to load. No parity file needs more than a few levels (a suite's deepest
//     item, a packed document length, is 7 levels down). The walk reads events and stops at the
//     first collection past the bound, so it costs the bound, not the file's depth.
//   - Duplicate keys, which libyaml accepts: found by sorting a mapping's keys (n log n), not by
//     comparing every pair (a 30k-key mapping took seconds).
// The readers report what these find in their own words.
#ifndef PARITY_YAML_LIMITS_H
#define PARITY_YAML_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "ops/core/error.h"

enum { PARITY_YAML_MAX_DEPTH = 64 };

// True when a mapping or sequence of `text` opens more than PARITY_YAML_MAX_DEPTH levels deep;
// *line and *column (1-based) are where it starts. Malformed YAML ends the walk with false: the
// loader reports it as before.
bool parity_yaml_too_deep(const char *text, size_t length, size_t *line, size_t *column);

// For each pair i of `mapping` (a mapping node of `document`), (*first)[i] = the index of the first
// pair whose key is the same scalar (i itself when no earlier pair has it, and for a non-scalar
// key). Free *first with free().
parity_error *parity_yaml_first_keys(yaml_document_t *document, const yaml_node_t *mapping, size_t **first);

#endif
