// interrupt.h: SIGINT and SIGTERM in the `parity` command. Every command has a handler from the start
// (main.c): it removes the temporary files of writes in flight (ops/core/temporaries.h) and ends the
// process by the same signal, so no kill leaves a "<file>.tmp.XXXXXX" behind. A command that can stop
// cleanly between units of work (`run` between combos, `golden generate` between cases) asks for a
// graceful stop instead: the first signal only records itself and prints what will happen; the
// command checks parity_cli_interrupt_signal() between units, keeps what finished and returns
// parity_cli_interrupt_exit_code() (130 for SIGINT, 143 for SIGTERM). A second signal ends it at once,
// as above, unless it is the first delivered twice: the same signal from the same sender within
// PARITY_INTERRUPT_DUPLICATE_MS (`timeout 600 parity run ...` signals the command, then its process
// group), which is ignored. The handler does no other work: it records, writes one fixed line, removes files.
#ifndef PARITY_CLI_INTERRUPT_H
#define PARITY_CLI_INTERRUPT_H

#include <signal.h>

// A signal this soon after the first is a duplicate delivery, not a second request (interrupt.c).
#define PARITY_INTERRUPT_DUPLICATE_MS 200

// Installs the handler for SIGINT and SIGTERM, to run on the calling thread (a signal that another
// thread, a BLAS or CUDA worker, receives is passed on to it). `graceful_notice` NULL: every signal
// ends the process; otherwise the first one only sets the flag and prints
// "parity: <signal name> received: <graceful_notice>" (a static string) to stderr.
void parity_cli_interrupts_install(const char *graceful_notice);
// The first signal received (SIGINT, SIGTERM) since install, or 0. Set asynchronously.
const volatile sig_atomic_t *parity_cli_interrupt_flag(void);
int parity_cli_interrupt_signal(void);
// 128 + signal: 130 for SIGINT, 143 for SIGTERM.
int parity_cli_interrupt_exit_code(int signal_number);

#endif
