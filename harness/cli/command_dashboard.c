// command_dashboard.c: `parity dashboard --db FILE --out DIR [--last N]`: the results history
// (reports/history/history.h) as a static site, written by reports/dashboard/dashboard.h: the
// latest run per suite and device with its verdict and grid, tokens/s trends, bench rows beside
// their peers, regressions against the previous run marked. docs/dashboard.md.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "reports/dashboard/dashboard.h"
#include "reports/history/history.h"

void parity_command_dashboard_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity dashboard --out DIR [--db FILE] [--last N] [--threshold 10%%] [--noise-factor 3]\n"
            "\n"
            "Writes the results history as a static site, DIR/index.html: it opens from the file system (no\n"
            "server, no network, no external file; SVG charts, inline CSS, one small sorting script).\n"
            "\n"
            "On it: the latest run of each suite on each device (its verdict against the run before, pass /\n"
            "fail / not supported counts, date, git sha); per suite and device the regressions and new\n"
            "failures of the latest run against the previous one (parity compare's rule), its model x field\n"
            "value grid, and the tokens/s of its %d fastest combos over the last N runs (regressed combos\n"
            "are always drawn, marked in the legend); per bench device its rows with %% of the device\n"
            "ceilings and the time change against the previous bench report, and each row's median ms over\n"
            "the last N reports beside its PyTorch peers.\n"
            "\n"
            "DIR is replaced whole: the site is written beside it and swapped into place, so a failure\n"
            "leaves the previous dashboard as it was. DIR must be missing, empty, or an earlier dashboard\n"
            "(it holds a %s file); anything else is refused. An empty history gives a page saying so.\n"
            "\n"
            "  --out DIR          the dashboard directory (required)\n"
            "  --db FILE          the history (default: $" PARITY_HISTORY_DB_ENV ", else " PARITY_HISTORY_DEFAULT_DB ");\n"
            "                     never created\n"
            "  --last N           runs drawn per trend, 1 to %d (default %d)\n"
            "  --threshold P      relative slowdown a regression must exceed: 10%% or 0.1 (default 10%%)\n"
            "  --noise-factor K   ... and K times the two runs' combined noise (default 3)\n"
            "\n"
            "exit status: 0 written (regressions are shown, not an exit status: parity compare gives that)\n"
            "             2 usage error\n"
            "             3 a database that is missing, unreadable, not a parity history or of a newer\n"
            "               schema; a --out that cannot be written or is not a dashboard directory\n",
            PARITY_DASHBOARD_TREND_COMBOS, PARITY_DASHBOARD_MARKER, PARITY_DASHBOARD_MAX_LAST, PARITY_DASHBOARD_DEFAULT_LAST);
}

// "10%" or "0.1" -> 0.1; false for anything else (negative included).
static bool parse_fraction(const char *text, double *out) {
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || errno) return false;
    if (*end == '%') {
        value /= 100;
        end++;
    }
    if (*end || !(value >= 0) || value > 1e6) return false;
    *out = value;
    return true;
}

int parity_command_dashboard(int argc, char **argv) {
    const char *db = getenv(PARITY_HISTORY_DB_ENV), *out = NULL;
    if (!db || !db[0]) db = PARITY_HISTORY_DEFAULT_DB;
    parity_dashboard_options options = parity_dashboard_default_options();
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--db")) db = value;
        else if (OPTION("--out")) out = value;
        else if (OPTION("--last")) {
            char *end;
            errno = 0;
            long last = value ? strtol(value, &end, 10) : 0;
            if (match == PARITY_CLI_OPTION_MATCHED && (errno || *end || end == value || last < 1 || last > PARITY_DASHBOARD_MAX_LAST)) {
                fprintf(stderr, "parity dashboard: --last '%s': a number of runs from 1 to %d\n", value, PARITY_DASHBOARD_MAX_LAST);
                return PARITY_EXIT_CONFIG;
            }
            options.last = (int)last;
        } else if (OPTION("--threshold")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_fraction(value, &options.compare.threshold)) {
                fprintf(stderr, "parity dashboard: --threshold '%s': a relative change such as 10%% or 0.1\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--noise-factor")) {
            char *end;
            double k = value ? strtod(value, &end) : 0;
            if (match == PARITY_CLI_OPTION_MATCHED && (*end || end == value || !(k >= 0) || k > 1e6)) {
                fprintf(stderr, "parity dashboard: --noise-factor '%s': a number >= 0\n", value);
                return PARITY_EXIT_CONFIG;
            }
            options.compare.noise_factor = k;
        } else {
            fprintf(stderr, "parity dashboard: unexpected argument '%s' (see parity dashboard --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (!out || !out[0]) {
        fprintf(stderr, "parity dashboard: --out DIR is required (see parity dashboard --help)\n");
        return PARITY_EXIT_CONFIG;
    }
    if (!db[0]) {
        fprintf(stderr, "parity dashboard: --db needs a file name\n");
        return PARITY_EXIT_CONFIG;
    }
    parity_dashboard_summary summary;
    parity_error *error = parity_dashboard_write(db, out, &options, &summary);
    if (error) return parity_cli_report_error("dashboard", error);
    if (!summary.sections) printf("%s has no runs yet: wrote an empty dashboard to %s/index.html\n", db, out);
    else
        printf("wrote %s/index.html (%zu KB): %zu section%s from %zu runs of %s; %zu regression%s, %zu new failure%s against the previous runs\n",
               out, (summary.bytes + 1023) / 1024, summary.sections, summary.sections == 1 ? "" : "s", summary.runs, db, summary.regressions,
               summary.regressions == 1 ? "" : "s", summary.new_failures, summary.new_failures == 1 ? "" : "s");
    return PARITY_EXIT_OK;
}
