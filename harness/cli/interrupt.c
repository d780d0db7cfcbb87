// interrupt.c: the SIGINT/SIGTERM handler of the `parity` command (interrupt.h). Only
// async-signal-safe calls in the handler: pthread_self/pthread_equal/pthread_kill, getpid,
// clock_gettime, write, unlink and rmdir (through parity_temporaries_remove), signal, raise.
#include "harness/cli/interrupt.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ops/core/temporaries.h"

static volatile sig_atomic_t received;  // the first signal, 0 before
static struct timespec received_at;      // when it came (CLOCK_MONOTONIC)
static pid_t received_from;              // and who sent it (0: the kernel, e.g. a terminal's Ctrl-C)
static volatile pid_t forwarded_from;    // the sender of a signal another thread passed on
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

// The same signal from the same sender within PARITY_INTERRUPT_DUPLICATE_MS of the first is that
// signal delivered twice, not a second request: timeout(1) sends its signal to the command and then
// to its whole process group.
static bool is_duplicate(int signal_number, pid_t sender) {
    if (signal_number != received || sender != received_from) return false;
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) return false;
    long long elapsed_ms = (long long)(now.tv_sec - received_at.tv_sec) * 1000 + (now.tv_nsec - received_at.tv_nsec) / 1000000;
    return elapsed_ms < PARITY_INTERRUPT_DUPLICATE_MS;
}

static void handle(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    pid_t sender = info ? info->si_pid : 0;
    if (!pthread_equal(pthread_self(), handler_thread)) {
        forwarded_from = sender;
        pthread_kill(handler_thread, signal_number); // runs there once that thread lets it in
        return;
    }
    if (info && info->si_code == SI_TKILL && sender == getpid()) sender = forwarded_from; // passed on to us
    if (notice && !received) {
        received = signal_number;
        received_from = sender;
        clock_gettime(CLOCK_MONOTONIC, &received_at);
        int which = signal_number == SIGTERM;
        write_all(notice_line[which], notice_length[which]);
        return;
    }
    if (notice && is_duplicate(signal_number, sender)) return; // one signal delivered twice
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
    action.sa_sigaction = handle;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT); // one handler at a time
    sigaddset(&action.sa_mask, SIGTERM);
    action.sa_flags = SA_RESTART | SA_SIGINFO;
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
