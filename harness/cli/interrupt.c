// interrupt.c: the SIGINT/SIGTERM handler of the `parity` command (interrupt.h). Only
// async-signal-safe calls in the handler: pthread_self/pthread_equal/pthread_kill, write, unlink and
// rmdir (through parity_temporaries_remove), signal, raise.
#include "harness/cli/interrupt.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "ops/core/temporaries.h"

static volatile sig_atomic_t received;  // the first signal, 0 before
static pthread_t handler_thread;         // where the handler runs (the writes are made there)
static const char *notice;               // NULL: every signal ends the process
static char notice_line[2][512];         // "\nparity: SIGINT received: <notice>\n", per signal
static size_t notice_length[2];

static void write_all(const char *text, size_t length) {
    while (length > 0) {
        ssize_t written = write(STDERR_FILENO, text, length);
        if (written <= 0) return;
        text += written, length -= (size_t)written;
    }
}

static void handle(int signal_number) {
    if (!pthread_equal(pthread_self(), handler_thread)) {
        pthread_kill(handler_thread, signal_number); // runs there once that thread lets it in
        return;
    }
    if (notice && !received) {
        received = signal_number;
        int which = signal_number == SIGTERM;
        write_all(notice_line[which], notice_length[which]);
        return;
    }
    if (!received) received = signal_number;
    parity_temporaries_remove();
    signal(signal_number, SIG_DFL);
    raise(signal_number); // delivered when the handler returns: the process ends by the signal
}

static void prepare_notice(int which, const char *name) {
    int length = 0;
    if (notice)
        length = snprintf(notice_line[which], sizeof notice_line[which], "\nparity: %s received: %s\n", name, notice);
    notice_length[which] = length > 0 ? strnlen(notice_line[which], sizeof notice_line[which]) : 0;
}

void parity_cli_interrupts_install(const char *graceful_notice) {
    notice = graceful_notice;
    prepare_notice(0, "SIGINT");
    prepare_notice(1, "SIGTERM");
    handler_thread = pthread_self();
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handle;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT); // one handler at a time
    sigaddset(&action.sa_mask, SIGTERM);
    action.sa_flags = SA_RESTART;
    static const int signals[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction old;
        // A signal the parent ignores (nohup, `cmd &` in a script) stays ignored, as the shell expects.
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(signals[i], &action, NULL);
    }
}

const volatile sig_atomic_t *parity_cli_interrupt_flag(void) { return &received; }

int parity_cli_interrupt_signal(void) { return received; }

int parity_cli_interrupt_exit_code(int signal_number) { return 128 + signal_number; }
