/* deep_loader.c: a loader with a planted stack overflow in deep nesting.
 *
 * It checks the 8-byte length N against the file, checks that the header
 * is an object, and scans it once, without recursion, to check that its
 * brackets balance and its strings close.  Then it walks the header with a
 * recursive descent parser, one C frame per level of nesting, on a thread
 * with an 8 MiB stack: past some tens of thousands of levels (about 65,000
 * at -O2 on x86-64) the walk runs off its stack and the loader dies with
 * SIGSEGV.  The 3,000 levels the ordinary mutations reach are safe; a
 * balanced header 100,000 levels deep is not, and byte mutations alone
 * almost never balance one.  It is here to be found by the big and deep
 * mutation family (fuzz/README.md, "Big and deep inputs"), not to load files.
 *
 * Standalone: `deep_loader FILE` follows the exit protocol of
 * validator/harness/rejection.py (0 accepts, 1 rejects, a signal is a
 * crash).  Inside fuzz/harness/loader_harness.c:
 *     -DSTCHECK_LOADER_SOURCE='"../examples/deep_loader.c"' -DSTCHECK_LOADER=deep_load -pthread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEEP_STACK (8u << 20)

struct deep_walk {
    const unsigned char *p;
    const unsigned char *end;
    unsigned long values;
};

static void deep_skip_string(struct deep_walk *w) {
    for (w->p++; w->p < w->end && *w->p != '"'; w->p++) {
        if (*w->p == '\\') w->p++;
    }
    w->p++;
}

/* One value, recursively: the planted bug.  The scratch buffer stands for
 * the locals a real parser keeps per level (a key, a number's digits). */
static void deep_value(struct deep_walk *w) {
    volatile unsigned char scratch[96];
    scratch[0] = w->p < w->end ? *w->p : 0;
    w->values++;
    while (w->p < w->end && (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r')) w->p++;
    if (w->p >= w->end) return;
    unsigned char open = *w->p;
    if (open == '"') {
        deep_skip_string(w);
        return;
    }
    if (open != '[' && open != '{') {
        while (w->p < w->end && strchr(",]}", *w->p) == NULL) w->p++;
        return;
    }
    unsigned char close = open == '[' ? ']' : '}';
    w->p++;
    while (w->p < w->end && *w->p != close) {
        if (*w->p == ',' || *w->p == ':' || *w->p == ' ') {
            w->p++;
            continue;
        }
        const unsigned char *before = w->p;
        deep_value(w);
        if (w->p == before) w->p++;
    }
    w->p++;
    scratch[1] = close;
    w->values += scratch[1] == scratch[0]; /* keeps the scratch in the frame */
}

static void *deep_thread(void *arg) {
    deep_value((struct deep_walk *)arg);
    return NULL;
}

/* The scan: brackets balance and strings close; no recursion. */
static int deep_balanced(const unsigned char *p, size_t n) {
    unsigned char *stack = (unsigned char *)malloc(n + 1);
    size_t top = 0;
    int ok = stack != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = p[i];
        if (c == '"') {
            for (i++; i < n && p[i] != '"'; i++) {
                if (p[i] == '\\') i++;
            }
            ok = i < n;
        } else if (c == '[' || c == '{') {
            stack[top++] = c == '[' ? ']' : '}';
        } else if (c == ']' || c == '}') {
            ok = top > 0 && stack[--top] == c;
        }
    }
    ok = ok && top == 0;
    free(stack);
    return ok;
}

/* 0: accepted; 1: rejected, with *reason set. */
int deep_load(const char *path, const char **reason) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        *reason = "cannot open the file";
        return 1;
    }
    unsigned char prefix[8];
    long size = -1;
    if (fread(prefix, 1, 8, f) != 8 || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 8) {
        fclose(f);
        *reason = "shorter than 8 bytes";
        return 1;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | prefix[i];
    if (n == 0 || n > (uint64_t)size - 8) {
        fclose(f);
        *reason = "the header length does not fit the file";
        return 1;
    }
    unsigned char *header = (unsigned char *)malloc((size_t)n);
    if (header == NULL || fseek(f, 8, SEEK_SET) != 0 || fread(header, 1, (size_t)n, f) != (size_t)n) {
        free(header);
        fclose(f);
        *reason = "cannot read the header";
        return 1;
    }
    fclose(f);
    int verdict = 1;
    if (header[0] != '{') {
        *reason = "the header does not start with '{'";
    } else if (!deep_balanced(header, (size_t)n)) {
        *reason = "unbalanced brackets";
    } else {
        struct deep_walk walk = {header, header + n, 0};
        pthread_attr_t attr;
        pthread_t thread;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, DEEP_STACK);
        if (pthread_create(&thread, &attr, deep_thread, &walk) != 0) {
            *reason = "cannot start the parser";
        } else {
            pthread_join(thread, NULL);
            verdict = 0;
        }
        pthread_attr_destroy(&attr);
    }
    free(header);
    return verdict;
}

#ifndef STCHECK_HARNESS
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const char *reason = "";
    if (deep_load(argv[1], &reason) == 0) return 0;
    fprintf(stderr, "rejected: %s\n", reason);
    return 1;
}
#endif
