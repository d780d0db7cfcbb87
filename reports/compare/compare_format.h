// compare_format.h: the cells of a comparison row as people read them, shared by the terminal
// table (harness/cli/command_compare.c) and the Markdown writer so both say the same thing:
// "pass -> FAIL", "12.0 -> 14.4 ms", "+20.0%", "10.0% (noise 2.0%, 2.0%)" (a change must leave the band), "0.50 -> 0.93 loss",
// and the row's verdict words ("NEW FAILURE, slower").
#ifndef PARITY_REPORTS_COMPARE_FORMAT_H
#define PARITY_REPORTS_COMPARE_FORMAT_H

#include <stddef.h>

#include "reports/compare/compare.h"

// Each writes into buffer and returns it; "-" where there is nothing to say.
const char *parity_compare_format_status(const parity_combo_comparison *combo, char *buffer, size_t size);
const char *parity_compare_format_time(const parity_combo_comparison *combo, char *buffer, size_t size);
const char *parity_compare_format_change(const parity_combo_comparison *combo, char *buffer, size_t size);
const char *parity_compare_format_band(const parity_combo_comparison *combo, char *buffer, size_t size);
const char *parity_compare_format_ratio(const parity_combo_comparison *combo, char *buffer, size_t size);
const char *parity_compare_format_verdict(const parity_combo_comparison *combo, char *buffer, size_t size);

#endif
