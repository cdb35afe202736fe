// suggest.c: the closest known name to a mistyped one, by Levenshtein distance.
#include "base/suggest.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"

static int levenshtein(const char *a, const char *b) {
    size_t nb = strlen(b);
    int *row = xmalloc((nb + 1) * sizeof *row);
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; a[i - 1]; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    int d = row[nb];
    free(row);
    return d;
}

const char *suggest_name(const char *name, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; i < n; i++) {
        int d = levenshtein(name, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    // A far-off "closest" name is noise.
    return best_d <= 2 || best_d <= (int)strlen(name) / 3 ? best : NULL;
}
