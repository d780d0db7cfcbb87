// ops_rules.h: internal to harness/config. The per-field rules of the seed (vocabulary, NPU
// normalization, SP rewrite and SP support, availability) applied to one selection, and the
// problem list they report into. ops_config.c drives them; tests go through ops_config.h.
#ifndef PARITY_CONFIG_OPS_RULES_H
#define PARITY_CONFIG_OPS_RULES_H

#include <stdbool.h>

#include "harness/config/ops_config.h"

// Appends a problem (message printf-style). Returns false only when memory ran out.
bool parity_ops_config_add_problem(parity_ops_config *config, parity_ops_problem_kind kind,
                                   const parity_kernel_field *field, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

// Appends "; text" (or "text") to a selection's notes.
void parity_ops_selection_add_note(parity_ops_selection *selection, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

// The vocabulary rule alone: a known value of the field (and not too long). On success backend and
// resolved are the requested value and the status is AVAILABLE; otherwise the selection is rejected.
bool parity_ops_check_vocabulary(parity_ops_config *config, parity_ops_selection *selection);

// Resolves selection (requested value and source already set) under config's device, SP degree
// and modeling backend: fills backend, resolved, notes, status and reason, and reports problems.
// `needed`: the caller runs this op (availability and model-time rules apply).
void parity_ops_resolve_selection(parity_ops_config *config, parity_ops_selection *selection, bool needed,
                                  bool check_availability);

#endif
