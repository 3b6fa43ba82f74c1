/* A native backtrace at a fatal signal, for a machine without gdb: preloaded into a
 * process (LD_PRELOAD), it installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 * SIGABRT that print the faulting address and the stack's frames (shared object +
 * offset, and the symbol where the object exports one) to stderr, then re-raise the
 * signal with its default action, so the exit status is the one the process would have
 * had.
 *
 *   gcc -std=c11 -O1 -g -shared -fPIC -o /tmp/segv_backtrace.so dev/probes/segv_backtrace.c
 *   LD_PRELOAD=/tmp/segv_backtrace.so python3 script.py
 *
 * Python's faulthandler replaces these handlers if enabled later (-X faulthandler): use
 * one or the other. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char alt_stack[1 << 16];

static void on_fatal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    void *frames[64];
    char head[160];
    int n = snprintf(head, sizeof head, "\n[segv_backtrace] signal %d (%s) at address %p; frames:\n", sig,
                     strsignal(sig), info ? info->si_addr : NULL);
    if (n > 0)
        (void)!write(STDERR_FILENO, head, (size_t)n < sizeof head ? (size_t)n : sizeof head - 1);
    int depth = backtrace(frames, 64);
    backtrace_symbols_fd(frames, depth, STDERR_FILENO);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void)
{
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}
