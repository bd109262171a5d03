/* loader_harness.c: a persistent harness around a C loader function.
 *
 * The loader is `int STCHECK_LOADER(const char *path, const char **reason)`:
 * 0 accepts; non-zero rejects (with *reason set); a crash is a crash.  By
 * default it is naive_load() from fuzz/examples/naive_loader.c; to wrap
 * yours, build with
 *     -DSTCHECK_LOADER_SOURCE='"/path/to/my_loader.c"' -DSTCHECK_LOADER=my_load
 *
 * Three ways to run the same binary:
 *   harness FILE          one input, the exit protocol of
 *                         validator/harness/rejection.py (0 accept, 1
 *                         reject, a signal is a crash).  Built with afl-cc
 *                         this is AFL++'s persistent mode: __AFL_LOOP runs
 *                         the loader up to 10000 inputs per process; the
 *                         input comes in AFL++'s shared memory (no file is
 *                         written per execution) and the loader reads it
 *                         from a memory file; a rejection returns
 *                         normally, so only a real crash is one to AFL++.
 *   harness --persistent  the frame protocol of fuzz/README.md on
 *                         stdin/stdout: each frame is a u32 little-endian
 *                         length and that many bytes; each answer is one
 *                         line, "accept" or "reject <reason>".  The loader
 *                         reads the frame from a private memory file.
 *                         Its own writes to stdout go to stderr, so that
 *                         they cannot break the protocol.
 *
 * Build (fuzz/harness/Makefile):  afl-cc -O2 -o harness loader_harness.c
 *
 * C or C++: this file compiles as either (g++ -x c++, afl-c++ -x c++), so
 * a C++ loader can be #included as its source (one C++ translation unit,
 * fuzz/examples/naive_loader.cpp) or, built elsewhere, linked in with
 *     -DSTCHECK_LOADER_LINKED -DSTCHECK_LOADER=my_load  my_loader.o
 * where the loader is declared here with C linkage (`extern "C"` under
 * C++), so the C++ loader defines it `extern "C"` too.  fuzz/README.md,
 * "C++ loaders", has the build lines.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STCHECK_HARNESS 1
#ifndef STCHECK_LOADER
#define STCHECK_LOADER naive_load
#endif
#ifdef STCHECK_LOADER_LINKED
/* The loader comes from another object file, with C linkage. */
#ifdef __cplusplus
extern "C" int STCHECK_LOADER(const char *path, const char **reason);
#else
int STCHECK_LOADER(const char *path, const char **reason);
#endif
#else
#ifndef STCHECK_LOADER_SOURCE
#define STCHECK_LOADER_SOURCE "../examples/naive_loader.c"
#endif
#include STCHECK_LOADER_SOURCE
#endif

#ifndef __AFL_LOOP
/* Not built by afl-cc: the loop body runs once. */
static int stcheck_once_;
#define __AFL_LOOP(n) (stcheck_once_++ == 0)
#endif

static int read_all(FILE *in, unsigned char *buf, size_t len) {
    return fread(buf, 1, len, in) == len;
}

/* One line: the reason with line breaks and control characters replaced. */
static void answer_reject(FILE *out, const char *reason) {
    fputs("reject ", out);
    for (const char *p = reason; *p != '\0' && p - reason < 200; p++) {
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, out);
    }
    fputc('\n', out);
}

/* A file for the loader to open by path, in memory where the OS allows it:
 * a write and a read of a file on disk cost 15 times the naive loader's
 * whole run (224 against 13 microseconds per input on ext4 here).  Linux: a
 * memfd, opened again through /proc/self/fd; elsewhere a temporary file in
 * TMPDIR.  The path is removed (memfd: never named) by the caller. */
static int memory_file(char *path, size_t size) {
#ifdef __linux__
    int fd = memfd_create("stcheck-input", MFD_CLOEXEC);
    if (fd >= 0) {
        snprintf(path, size, "/proc/self/fd/%d", fd);
        return fd;
    }
#endif
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/stcheck-harness-XXXXXX", dir != NULL && *dir != '\0' ? dir : "/tmp");
    return mkstemp(path);
}

static int serve(void) {
    int proto = dup(STDOUT_FILENO); /* the protocol's stdout ...          */
    dup2(STDERR_FILENO, STDOUT_FILENO); /* ... and the loader's, to stderr */
    FILE *out = fdopen(proto, "w");
    char path[4096];
    int fd = memory_file(path, sizeof path);
    if (out == NULL || fd < 0) {
        perror("loader_harness");
        return 2;
    }
    unsigned char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        unsigned char prefix[4];
        size_t got = fread(prefix, 1, 4, stdin);
        if (got == 0 && feof(stdin)) break; /* the end of the session */
        if (got != 4) {
            fprintf(stderr, "loader_harness: truncated frame length\n");
            break;
        }
        size_t len = (size_t)prefix[0] | (size_t)prefix[1] << 8 | (size_t)prefix[2] << 16 | (size_t)prefix[3] << 24;
        if (len > cap) {
            unsigned char *grown = (unsigned char *)realloc(buf, len);
            if (grown == NULL) {
                fprintf(stderr, "loader_harness: cannot hold a frame of %zu bytes\n", len);
                break;
            }
            buf = grown;
            cap = len;
        }
        if (len > 0 && !read_all(stdin, buf, len)) {
            fprintf(stderr, "loader_harness: truncated frame\n");
            break;
        }
        if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, len, 0) != (ssize_t)len) {
            perror("loader_harness: temporary file");
            break;
        }
        const char *reason = "no reason given";
        if (STCHECK_LOADER(path, &reason) == 0) {
            fputs("accept\n", out);
        } else {
            answer_reject(out, reason);
        }
        fflush(out);
    }
    if (strncmp(path, "/proc/self/fd/", 14) != 0) unlink(path);
    free(buf);
    return 0;
}

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--persistent") == 0) return serve();
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE | --persistent\n", argv[0]);
        return 2;
    }
    int verdict = 1;
    const char *reason = "";
    const char *path = argv[1];
#ifdef __AFL_FUZZ_TESTCASE_LEN
    /* Under afl-fuzz the input comes in shared memory (no file written per
     * execution); the loader reads it back from a memory file. */
    char shm_path[4096];
    int shm_fd = -1;
    if (__afl_fuzz_ptr != NULL) {
        shm_fd = memory_file(shm_path, sizeof shm_path);
        if (shm_fd >= 0) path = shm_path;
    }
#endif
    while (__AFL_LOOP(10000)) {
#ifdef __AFL_FUZZ_TESTCASE_LEN
        if (shm_fd >= 0) {
            size_t len = __AFL_FUZZ_TESTCASE_LEN;
            if (ftruncate(shm_fd, 0) != 0 || pwrite(shm_fd, __AFL_FUZZ_TESTCASE_BUF, len, 0) != (ssize_t)len) abort();
        }
#endif
        reason = "no reason given";
        verdict = STCHECK_LOADER(path, &reason);
    }
    if (verdict == 0) return 0;
    fprintf(stderr, "rejected: %s\n", reason);
    return 1;
}
