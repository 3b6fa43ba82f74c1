/* test_kernel_table.c: the CPU kernel table - lookup by name, the messages of an unknown
 * name and of a wrong argument count, a launch through the table of a kernel registered
 * here, and the remembered registration errors (each in a forked child, because one of
 * them poisons every later lookup of the process that made it). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tileops/kernel_table.h"
#include "tileops/status.h"
#include "check.h"

/* Adds its int64 and float arguments into *out: shows every member arrived where the
 * format says. */
static tileops_status_t add_kernel(const tileops_arg_t *a) {
    double *out = (double *)a[0].p;
    if (out == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "test_add: out is NULL");
    *out = (double)a[1].q + (double)a[2].i + (double)a[3].f;
    return TILEOPS_OK;
}

static tileops_cpu_kernel_t test_add = {"test_add", "pqif", add_kernel};
TILEOPS_CPU_KERNEL(test_add)

static tileops_status_t nop_kernel(const tileops_arg_t *a) {
    (void)a;
    return TILEOPS_OK;
}

static void test_lookup_and_launch(void) {
    int h = -1;
    tileops_status_t st = tileops_cpu_kernel_lookup("test_add", &h);
    CHECK(st == TILEOPS_OK && h >= 0, "lookup test_add: %s %s", tileops_status_name(st),
          tileops_last_error());
    const tileops_cpu_kernel_t *k = tileops_cpu_kernel_get(h);
    CHECK(k && strcmp(k->name, "test_add") == 0 && strcmp(k->arg_format, "pqif") == 0,
          "get(%d) returns the registered entry", h);
    CHECK(tileops_cpu_kernel_count() >= 1, "count %d", tileops_cpu_kernel_count());
    CHECK(tileops_cpu_kernel_get(-1) == NULL, "get(-1) is NULL");
    CHECK(tileops_cpu_kernel_get(tileops_cpu_kernel_count()) == NULL, "get(count) is NULL");

    double out = 0.0;
    tileops_arg_t args[4];
    args[0].p = (uintptr_t)&out;
    args[1].q = (int64_t)1 << 40;
    args[2].i = -7;
    args[3].f = 0.5f;
    st = tileops_cpu_kernel_launch(h, args, 4);
    CHECK(st == TILEOPS_OK && out == (double)((int64_t)1 << 40) - 7 + 0.5,
          "launch test_add: %s, out %f", tileops_status_name(st), out);

    /* the kernel's own failure comes back with its message */
    args[0].p = 0;
    st = tileops_cpu_kernel_launch(h, args, 4);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "out is NULL"),
          "kernel failure: %s '%s'", tileops_status_name(st), tileops_last_error());
}

static void test_errors(void) {
    int h = 123;
    tileops_status_t st = tileops_cpu_kernel_lookup("no_such_kernel", &h);
    const char *msg = tileops_last_error();
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && h == -1, "unknown name: %s, handle %d",
          tileops_status_name(st), h);
    /* the list is cut at the message buffer: which names it shows depends on link order */
    CHECK(strstr(msg, "no CPU kernel named 'no_such_kernel'") && strstr(msg, "(registered: ") &&
              !strstr(msg, "(registered: none)"),
          "unknown-name message names it and the registered kernels: '%s'", msg);

    st = tileops_cpu_kernel_lookup(NULL, &h);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT, "NULL name: %s", tileops_status_name(st));

    CHECK(tileops_cpu_kernel_lookup("test_add", &h) == TILEOPS_OK, "lookup");
    tileops_arg_t args[TILEOPS_MAX_KERNEL_ARGS];
    memset(args, 0, sizeof args);
    st = tileops_cpu_kernel_launch(h, args, 3);
    msg = tileops_last_error();
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(msg, "'test_add' takes 4 arguments") &&
              strstr(msg, "got 3"),
          "arg count mismatch: %s '%s'", tileops_status_name(st), msg);
    st = tileops_cpu_kernel_launch(h, NULL, 4);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT, "NULL args: %s", tileops_status_name(st));
    st = tileops_cpu_kernel_launch(-1, args, 4);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "handle -1"),
          "bad handle: '%s'", tileops_last_error());
    st = tileops_cpu_kernel_launch(tileops_cpu_kernel_count(), args, 4);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT, "handle past the end: %s", tileops_status_name(st));
}

/* Registers `bad` in a child and checks every later lookup there fails with TILEOPS_ERR_INTERNAL
 * and a message holding `expect`. Exit 0: as expected. */
static void registration_error_case(const char *what, const tileops_cpu_kernel_t *bad,
                                    int repeat, const char *expect) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < repeat; i++)
            tileops_cpu_kernel_register(bad);
        int h = 0;
        tileops_status_t st = tileops_cpu_kernel_lookup("test_add", &h);
        int ok = st == TILEOPS_ERR_INTERNAL && h == -1 && strstr(tileops_last_error(), expect);
        if (!ok)
            printf("  child (%s): %s '%s'\n", what, tileops_status_name(st), tileops_last_error());
        fflush(stdout);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "registration error (%s) is reported by lookups", what);
}

static void test_registration_errors(void) {
    static const tileops_cpu_kernel_t dup = {"test_add", "p", nop_kernel};
    registration_error_case("duplicate", &dup, 1, "'test_add' is registered twice");
    static const tileops_cpu_kernel_t bad_char = {"bad_char", "pqx", nop_kernel};
    registration_error_case("bad format char", &bad_char, 1, "'bad_char' has arg format 'pqx'");
    static const tileops_cpu_kernel_t too_long = {"too_long", "ppppppppppppppppppppppppp", nop_kernel};
    registration_error_case("format too long", &too_long, 1, "'too_long' has 25 arguments");
    static const tileops_cpu_kernel_t no_fn = {"no_fn", "p", NULL};
    registration_error_case("no function", &no_fn, 1, "'no_fn' has no function");
    registration_error_case("NULL kernel", NULL, 1, "NULL kernel");

    /* Filling the table needs distinct names; each registration copies the entry, so one
     * struct with a changing name is enough, as long as the names outlive the table. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        static char names[300][24];
        int ok = 1;
        for (int i = 0; i < 300; i++) {
            snprintf(names[i], sizeof names[i], "fill_%d", i);
            tileops_cpu_kernel_t k = {names[i], "", nop_kernel};
            tileops_cpu_kernel_register(&k);
        }
        int h;
        tileops_status_t st = tileops_cpu_kernel_lookup("fill_0", &h);
        ok = st == TILEOPS_ERR_INTERNAL && strstr(tileops_last_error(), "full (256 kernels)");
        if (!ok)
            printf("  child (full): %s '%s'\n", tileops_status_name(st), tileops_last_error());
        fflush(stdout);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "a full table is reported by lookups");

    /* the parent, which registered nothing bad, is unaffected */
    int h;
    CHECK(tileops_cpu_kernel_lookup("test_add", &h) == TILEOPS_OK, "parent still healthy: %s",
          tileops_last_error());
}

/* tileops_fail_arg records the argument beside the message; tileops_fail clears it; one
 * failure passed on with tileops_last_error_argument() keeps it; a name too long is cut */
static void test_error_argument(void) {
    tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "slot_mapping", "k: slot %d", 7);
    CHECK(!strcmp(tileops_last_error_argument(), "slot_mapping") && !strcmp(tileops_last_error(), "k: slot 7"),
          "argument recorded: '%s' '%s'", tileops_last_error_argument(), tileops_last_error());
    tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, tileops_last_error_argument(), "wrapped: %s", tileops_last_error());
    CHECK(!strcmp(tileops_last_error_argument(), "slot_mapping") && !strcmp(tileops_last_error(), "wrapped: k: slot 7"),
          "passed on: '%s' '%s'", tileops_last_error_argument(), tileops_last_error());
    tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "no argument");
    CHECK(!strcmp(tileops_last_error_argument(), ""), "cleared by tileops_fail: '%s'", tileops_last_error_argument());
    char long_name[3 * TILEOPS_ARGUMENT_MAX];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, long_name, "x");
    CHECK(strlen(tileops_last_error_argument()) == TILEOPS_ARGUMENT_MAX - 1, "cut to the buffer: %zu",
          strlen(tileops_last_error_argument()));
    tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, NULL, "x");
    CHECK(!strcmp(tileops_last_error_argument(), ""), "NULL names none");
    tileops_clear_error();
    CHECK(!strcmp(tileops_last_error_argument(), "") && !strcmp(tileops_last_error(), ""), "cleared");
}

int main(void) {
    test_lookup_and_launch();
    test_errors();
    test_error_argument();
    test_registration_errors();
    return check_summary();
}
