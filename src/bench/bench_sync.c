// bench_sync.c: `swlstm bench --sync`: cuda/bench/sync.cu measures, table.h prints. GPU only.
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/table.h"

int bench_sync(void) {
    const TablePrint tp = {.head = table_head, .row = table_row, .note = table_note};
    return cb_sync(&tp);
}
