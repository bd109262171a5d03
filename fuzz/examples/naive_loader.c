/* naive_loader.c: the safetensors loader many C projects start with.
 *
 * It opens the file, reads the 8-byte little-endian header length N, checks
 * N against the file's length and checks that the header starts with '{'.
 * Nothing else: the JSON, the dtypes, the shapes and the data offsets are
 * trusted.  It is here to be fuzzed (`stcheck fuzz loader-under-test`), not
 * to load files.
 *
 * Built with -DSTCHECK_PLANTED it also carries a planted bug: a branch
 * reachable only through one tensor layout (dtype "F16" with shape [3,2],
 * written compactly as the first tensor) that calls abort().
 * A fuzzer guided by the loader's own coverage reaches it one condition at a
 * time; one guided by stcheck's coverage has to guess all of it at once.
 *
 * Built with -DSTCHECK_PLANTED_EMPTY it refuses every file holding an
 * empty tensor ("empty tensors are not supported"), valid ones included.
 *
 * Standalone (no STCHECK_HARNESS): `naive_loader FILE` follows the exit
 * protocol of validator/harness/rejection.py: exit 0 accepts, exit 1
 * rejects (a reason on stderr); a signal is a crash.  Inside
 * fuzz/harness/loader_harness.c, naive_load() is the default loader.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STCHECK_PLANTED
/* The planted bug: a "fast path" for one layout, matched piece by piece as
 * hand-written parsers do.  Each piece is its own branch, so each one
 * matched is new coverage of this file. */
static void planted_layout(const char *header) {
    const char *p = strstr(header, "\"dtype\":");
    if (p == NULL) return;
    if (strncmp(p, "\"dtype\":\"F16\"", 13) != 0) return;
    p += 13;
    if (strncmp(p, ",\"shape\":[3,2]", 14) != 0) return;
    abort(); /* the F16 [3,2] fast path */
}
#endif

/* 0: accepted; 1: rejected, with *reason set.  Never frees what it does not
 * allocate; leaks nothing. */
int naive_load(const char *path, const char **reason) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        *reason = "cannot open the file";
        return 1;
    }
    unsigned char prefix[8];
    if (fread(prefix, 1, 8, f) != 8) {
        fclose(f);
        *reason = "shorter than 8 bytes";
        return 1;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | prefix[i];
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        *reason = "cannot seek";
        return 1;
    }
    long size = ftell(f);
    if (n > (uint64_t)size - 8) {
        fclose(f);
        *reason = "header length exceeds the file";
        return 1;
    }
    if (fseek(f, 8, SEEK_SET) != 0 || n == 0 || fgetc(f) != '{') {
        fclose(f);
        *reason = "the header does not start with '{'";
        return 1;
    }
#ifdef STCHECK_PLANTED_EMPTY
    /* A second planted bug, for triage by cause: a backwards rule that
     * refuses every file holding an empty tensor, valid ones included.  The
     * rejects-valid class then has two causes, this reason and the one above,
     * and only the shorter one is the class's reproducer. */
    char *text = malloc(n + 1);
    if (text != NULL) {
        size_t read = fseek(f, 8, SEEK_SET) == 0 ? fread(text, 1, n, f) : 0;
        text[read] = '\0';
        int empty = strstr(text, "\"shape\":[0") != NULL;
        free(text);
        if (empty) {
            fclose(f);
            *reason = "empty tensors are not supported";
            return 1;
        }
    }
    fseek(f, 9, SEEK_SET);
#endif
#ifdef STCHECK_PLANTED
    char *header = malloc(n + 1);
    if (header != NULL) {
        header[0] = '{';
        size_t got = fread(header + 1, 1, n - 1, f);
        header[got + 1] = '\0';
        planted_layout(header);
        free(header);
    }
#endif
    fclose(f);
    return 0;
}

#ifndef STCHECK_HARNESS
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const char *reason = "";
    if (naive_load(argv[1], &reason) == 0) return 0;
    fprintf(stderr, "rejected: %s\n", reason);
    return 1;
}
#endif
