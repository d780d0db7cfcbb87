// junit.h: junit.xml for CI from results alone (our own writer: Criterion would give every
// parameterized instance the same name). One <testsuite> per suite.model, one <testcase> per combo.
#ifndef PARITY_REPORTS_JUNIT_H
#define PARITY_REPORTS_JUNIT_H

#include "reports/results.h"

// Writes `path` atomically.
parity_error *parity_report_write_junit(const char *path, const parity_results *results);

#endif
