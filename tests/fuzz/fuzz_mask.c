// fuzz_mask.c: mask descriptors ("ba_3", "ws_4_0.1", ...) for small layouts. Byte 0 gives the
// rows, byte 1 the columns, byte 2 the seed, the rest is the descriptor. A built mask must
// have every block row and column non-empty (mask.h's promise).
#include <stdlib.h>
#include "harness.h"
#include "sparse/mask.h"

static void check_rows_cols(const Mask *m) {
    for (int r = 0; r < m->nr; r++) {
        int any = 0;
        for (int c = 0; c < m->nc; c++) any |= m->m[r * m->nc + c];
        if (!any) abort();
    }
    for (int c = 0; c < m->nc; c++) {
        int any = 0;
        for (int r = 0; r < m->nr; r++) any |= m->m[r * m->nc + c];
        if (!any) abort();
    }
}

FUZZ_TARGET(mask) {
    if (size < 3) return 0;
    int nr = 1 + data[0] % 48, nc = data[1] & 0x80 ? nr : 1 + data[1] % 48;
    char *desc = fuzz_str(data + 3, size - 3), err[512];
    FUZZ_RUN {
        if (!mask_check_desc(desc, nr, nc, err, sizeof err)) {
            Mask m = mask_make(desc, nr, nc, data[2]);
            check_rows_cols(&m);
            MaskStats st = mask_stats(&m);
            if (st.blocks != mask_count(&m)) abort();
            mask_free(&m);
        }
    }
    free(desc);
    return 0;
}
