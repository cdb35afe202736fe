// gather_blocks_cpu.c: blocks of weights moved onto other masks. CPU reference (CUDA twin:
// cuda/ops/gather_blocks.cu).
#include "ops/backend.h"
#include <string.h>

void gather_blocks_cpu(real *dst, const real *src, const int *from, int n, int bb) {
    for (long q = 0; q < n; q++)
        if (from[q] < 0) memset(dst + q * bb, 0, sizeof(real) * (size_t)bb);
        else memcpy(dst + q * bb, src + (long)from[q] * bb, sizeof(real) * (size_t)bb);
}
