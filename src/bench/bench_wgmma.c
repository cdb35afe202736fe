// bench_wgmma.c: `swlstm bench --wgmma`: the floors of a plain LSTM layer's forward time step
// at the shipped configs' shapes (math, HBM and L2 bytes over the ceilings measured in the same
// call) beside the wgmma step (cuda/wgmma/wg_fwd.h, issue 57). GPU only.
#include <stdio.h>
#include <stdlib.h>
#include "base/common.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/table.h"
#include "ops/backend.h"
#include "sparse/bsmat.h"
#include "sparse/mask.h"

#define STEPS 64  // a window's time steps, each step's outputs in planes of their own

typedef struct {
    const char *name, *mask;
    int hidden, batch;
} StepShape;

static const StepShape step_shapes[] = {
    {.name = "lstm_3min", .mask = "ba_8", .hidden = 8192, .batch = 256},
    {.name = "enwik8_smallworld's gates", .mask = "ba_7", .hidden = 8192, .batch = 128},
    {.name = "mlstm_3min's gates", .mask = "ba_14", .hidden = 5120, .batch = 128},
};

static void read_sweep(void) {
    static const int mb[] = {8, 16, 32, 48, 64, 128, 1024};
    table_head("read_sweep", "| working set MB | read TB/s |");
    for (size_t i = 0; i < sizeof mb / sizeof *mb; i++) table_row("| %d | %.2f |\n", mb[i], cb_read_gbps((size_t)mb[i] << 20) / 1e3);
}

// The step's bytes: weights and state through HBM (each read or written once), and what the
// SMs read from L2 (each list entry's h slab and gate blocks once per 128-row tile, the
// epilogue's input-table rows and c).
static void step_row(const StepShape *s, double tflops, double hbm_gbps, double l2_gbps) {
    const int nb = s->hidden / 32;
    Mask mk = mask_make(s->mask, nb, nb, 1);
    BsMat w;  // the mask's lists by block row
    bsmat_from_mask(&w, &mk, 32, 1);
    const int p = w.nnzb;
    const double BH = (double)s->batch * s->hidden, flop = 2.0 * 4 * p * 1024 * s->batch;
    const double hbm = p * 8192.0 + BH * (4 + 8 + 4 + 4 + 2 + 2), l2 = p * (s->batch / 128) * 16384.0 + BH * (16 + 4);
    const double tm = flop / (tflops * 1e12) * 1e6, th = hbm / (hbm_gbps * 1e9) * 1e6, tl = l2 / (l2_gbps * 1e9) * 1e6;
    const double floor = tm > th ? (tm > tl ? tm : tl) : (th > tl ? th : tl);
    const double us = cb_wgmma_fwd_us(w.row_ptr, w.col_idx, s->hidden, s->batch, STEPS);
    table_row("| %s | %d | %s | %d | %d | %.2f | %.1f | %.0f | %.1f | %.0f | %.1f | %.1f | %.1f | %.0f | %.2f |\n", s->name, s->hidden,
              s->mask, s->batch, p, flop / 1e9, tm, hbm / 1e6, th, l2 / 1e6, tl, floor, us, flop / (us * 1e-6) / 1e12, us / floor);
    bsmat_free(&w);
    mask_free(&mk);
}

void bench_wgmma(void) {
    backend_cuda(PREC_BF16);  // the device and its cuBLAS handle, for the dense product's rate
    char dev[256];
    size_t l2b;
    cb_device(dev, sizeof dev, &l2b);
    const double hbm = cb_copy_gbps(), l2 = cb_read_gbps(32 << 20);
    const double tflops = 2.0 * 8192 * 8192 * 8192 / (cb_dense_ms(8192, 8192, 8192, 1, 20) * 1e-3) / 1e12;
    table_note("%s; dense bf16 product %.0f TFLOP/s (cuBLAS, 8192^3), HBM %.2f TB/s (a large copy's reads and writes), "
               "L2 read %.2f TB/s (32 MB read again and again)\n\n",
               dev, tflops, hbm / 1e3, l2 / 1e3);
    read_sweep();
    table_note("\n");
    table_head("wgmma", "| shape | H | mask | B | blocks | GFLOP | math us | HBM MB | HBM us | L2 MB | L2 us | floor us | wgmma us | TFLOP/s "
                        "| x floor |");
    for (size_t i = 0; i < sizeof step_shapes / sizeof *step_shapes; i++) step_row(&step_shapes[i], tflops, hbm, l2);
    table_note("\nfloor: the largest of math, HBM and L2 alone; wgmma: us a time step, the median over groups of 10 of a %d-step "
               "window\n", STEPS);
}
