// table.c: the markdown tables `swlstm bench` prints.
#include <stdio.h>
#include <stdlib.h>
#include "bench/table.h"

void table_head(const char *head) {
    printf("%s\n", head);
    for (const char *p = head + 1; *p; p++)
        if (*p == '|') printf("|---");
    printf("|\n");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, int n) {
    qsort(v, n, sizeof(double), cmp_double);
    return v[n / 2];
}
