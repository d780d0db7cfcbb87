// commands.h: the `parity` subcommands main.c dispatches to. Each takes the arguments after
// `parity` (argv[0] is the command name), returns an exit code (cli_support.h) and never exits;
// each has a usage printer for `parity help CMD` and `parity CMD --help`.
#ifndef PARITY_CLI_COMMANDS_H
#define PARITY_CLI_COMMANDS_H

#include <stdio.h>

// parity list ops|backends: the kernel-selection vocabulary and the backends behind it.
int parity_command_list(int argc, char **argv);
void parity_command_list_usage(FILE *stream);

// parity config check: validate and resolve a VeOmni kernel-selection config.
int parity_command_config(int argc, char **argv);
void parity_command_config_usage(FILE *stream);

// parity eval: one forward + backward of a model on a batch (loss, grad norms, logits sum).
int parity_command_eval(int argc, char **argv);
void parity_command_eval_usage(FILE *stream);

// parity report DIR: re-render junit.xml, summary.md and report.html from DIR/results.json.
int parity_command_report(int argc, char **argv);
void parity_command_report_usage(FILE *stream);

// parity history add|list|show: the results history (reports/history/history.h).
int parity_command_history(int argc, char **argv);
void parity_command_history_usage(FILE *stream);
// parity compare BASE NEW: run-to-run comparison (status changes, tolerance drift, noise-aware time).
int parity_command_compare(int argc, char **argv);
void parity_command_compare_usage(FILE *stream);
// parity dashboard --out DIR: the history as a static site (trends, grids, regressions).
int parity_command_dashboard(int argc, char **argv);
void parity_command_dashboard_usage(FILE *stream);

// parity run: every combo of a suite against its goldens, with a report.
int parity_command_run(int argc, char **argv);
void parity_command_run_usage(FILE *stream);

// parity golden generate|verify|show: the suite goldens (HDF5).
int parity_command_golden(int argc, char **argv);
void parity_command_golden_usage(FILE *stream);

// parity check op: an op's backends against eager fp64 on every row of its table (ggml test-backend-ops).
int parity_command_check(int argc, char **argv);
void parity_command_check_usage(FILE *stream);

// parity bench op: CUDA backends of an op side by side, against the device's ceilings and PyTorch.
int parity_command_bench(int argc, char **argv);
void parity_command_bench_usage(FILE *stream);
// parity bench comm: the collectives over MPI, nccl-tests style (command_bench_comm.c).
int parity_command_bench_comm(int argc, char **argv);
void parity_command_bench_comm_usage(FILE *stream);

#endif
