/* The stop signal of the long commands (train, benchmark): the first SIGINT/SIGTERM only sets cli_stop_signal,
 * which the step loop checks (finish the step, save, exit 128 + signal); a second one goes to the handler that was
 * there before (cmd/main.c's: clean up, exit). */
#include <signal.h>
#include <string.h>
#include "cli.h"

volatile sig_atomic_t cli_stop_signal;
static struct sigaction old_int, old_term;

static void on_stop(int sig)
{
    if (cli_stop_signal) {   /* a second signal: the ordinary handler (clean up, exit) */
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        raise(sig);
        return;
    }
    cli_stop_signal = sig;
}

void cli_catch_stop(int on)
{
    if (on) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigfillset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    } else {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
}
