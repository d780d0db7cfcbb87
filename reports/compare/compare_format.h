// compare_format.h: the cells of a comparison row as people read them, shared by the terminal
// table (harness/cli/command_compare.c) and the Markdown writer so both say the same thing:
// "pass -> FAIL", "12.0 -> 14.4 ms", "+20.0%", "-9.1%..+10.0% (noise 2.0%, 2.0%)", "0.50 -> 0.93 loss",
// and the row's verdict words ("NEW FAILURE, SLOWER"). The band is the time change that still reads
// "same": up to +limit slower, down to 1/(1 + limit) - 1 faster (compare_time.h's rule in the same
// terms as the change column, so a reader can check a verdict by eye).
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
