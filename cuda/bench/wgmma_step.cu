// wgmma_step.cu: `swlstm bench --wgmma`'s timing (bench_cuda.h): the wgmma forward step
// (cuda/wgmma/wg_fwd.h) and backward data step (wg_bwd.h) chained over a window of steps on
// random operands or a checkpoint's weights, each step's outputs in planes of their own as the
// engine keeps them; the window's weight gradient (wg_dw.h) beside bsmm_bwd_weight's.
#include <vector>
#include "bench/bench_cuda.h"
#include "base/lowp.cuh"
#include "bsmm/bsmat_dev.cuh"
#include "wgmma/wg_bwd.h"
#include "wgmma/wg_dw.h"
#include "wgmma/wg_fwd.h"

namespace {

struct Window {
    WgFwd *f;
    int B, H, steps;
    bf16 *hpk, *hb, *actb;
    float *c, *h1;
    int *tok;  // [steps][B]
    WgStep base;
};

void step_once(void *arg, int iter) {
    Window *w = (Window *)arg;
    const int t = iter % w->steps;
    const long BH = (long)w->B * w->H;
    WgStep s = w->base;
    s.hpk = w->hpk + t * BH, s.hpk1 = w->hpk + (t + 1) * BH;
    s.c0 = w->c + t * BH, s.c1 = w->c + (t + 1) * BH, s.h1 = w->h1 + t * BH;
    s.hb1 = w->hb + t * BH, s.actb = w->actb + 4 * t * BH, s.tok = w->tok + t * w->B;
    wg_fwd_step(w->f, &s, NULL);
}

// The backward walks the window down: dz_{t+1}'s packed plane in, dz_t's out; dc runs in place.
struct BwdWindow {
    WgBwd *b;
    int B, H, steps;
    bf16 *dzpk, *dzb, *actb;
    float *dh, *dc, *c, *db;
};

void bwd_once(void *arg, int iter) {
    BwdWindow *w = (BwdWindow *)arg;
    const int t = w->steps - 1 - iter % w->steps;
    const long BH = (long)w->B * w->H, BG = 4 * BH;
    WgBwdStep s = {};
    s.dzpk = w->dzpk + (t + 1) * BG, s.dzpk1 = w->dzpk + t * BG;
    s.dh = w->dh + t * BH, s.dc = w->dc, s.actb = w->actb + t * BG;
    s.c0 = w->c + t * BH, s.c1 = w->c + (t + 1) * BH, s.dzb = w->dzb + t * BG, s.dbpart = w->db + t * (BG / 64);
    wg_bwd_step(w->b, &s, NULL);
}

__global__ void fill_kernel(float *p, long n, float scale, unsigned seed) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 15, x *= 2246822519u, x ^= x >> 13;
        p[i] = scale * ((x >> 8) * (2.f / 16777216.f) - 1.f);
    }
}

float *random_floats(long n, float scale, unsigned seed) {
    float *p;
    CUDA_CHECK(cudaMalloc(&p, sizeof(float) * n));
    fill_kernel<<<1024, 256>>>(p, n, scale, seed);
    LAUNCH_CHECK();
    return p;
}

float *device_floats(const float *host, long n) {
    float *p;
    CUDA_CHECK(cudaMalloc(&p, sizeof(float) * n));
    CUDA_CHECK(cudaMemcpy(p, host, sizeof(float) * n, cudaMemcpyHostToDevice));
    return p;
}

}  // namespace

// W_h's 4 nnz blocks in bf16: wt's, or random.
bf16 *step_weights(long nnz, const CbStepWeights *wt) {
    float *wf = wt ? device_floats(wt->w, 4 * nnz * 1024) : random_floats(4 * nnz * 1024, 0.06f, 1);
    bf16 *w;
    CUDA_CHECK(cudaMalloc(&w, 2 * 4 * nnz * 1024));
    to_bf16(w, wf, 4 * nnz * 1024);
    CUDA_CHECK(cudaFree(wf));
    return w;
}

extern "C" double cb_wgmma_fwd_us(const int *rowptr, const int *col, int H, int B, int steps, const int *tok,
                                   const CbStepWeights *wt) {
    const long nnz = rowptr[H / 32], BH = (long)B * H;
    std::vector<int> blk(nnz);
    for (long p = 0; p < nnz; p++) blk[p] = (int)p;
    float *hf = random_floats(BH, 1.f, 2);
    bf16 *w = step_weights(nnz, wt), *h0;
    CUDA_CHECK(cudaMalloc(&h0, 2 * BH));
    to_bf16(h0, hf, BH);
    Window win = {wg_fwd_create(rowptr, col, blk.data(), nnz, w, H, B), B, H, steps};
    if (!win.f) return -1;
    std::vector<int> htok((size_t)steps * B);
    for (size_t i = 0; i < htok.size(); i++) htok[i] = tok ? tok[i] : ((int)(i % B) * 37 + 11) % 256;
    CUDA_CHECK(cudaMalloc(&win.tok, sizeof(int) * htok.size()));
    CUDA_CHECK(cudaMemcpy(win.tok, htok.data(), sizeof(int) * htok.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&win.hpk, 2 * BH * (steps + 1)));
    CUDA_CHECK(cudaMalloc(&win.hb, 2 * BH * steps));
    CUDA_CHECK(cudaMalloc(&win.actb, 8 * BH * steps));
    CUDA_CHECK(cudaMalloc(&win.h1, 4 * BH * steps));
    win.c = random_floats(BH * (steps + 1), 1.f, 3);
    wg_fwd_pack_h(win.f, h0, win.hpk, NULL);
    float *xtab = wt ? device_floats(wt->xtab, 256L * 4 * H) : random_floats(256L * 4 * H, 0.5f, 4);
    win.base = WgStep{};
    win.base.xtab = xtab;
    double ms = cb_time_ms(step_once, &win, steps, 10 * steps);
    wg_fwd_free(win.f);
    void *bufs[] = {hf, w, h0, win.tok, win.hpk, win.hb, win.actb, win.h1, win.c, xtab};
    for (void *p : bufs) CUDA_CHECK(cudaFree(p));
    return ms * 1e3;
}

extern "C" double cb_wgmma_bwd_us(const int *colptr, const int *row, const int *blk, int H, int B, int steps,
                                   const CbStepWeights *wt) {
    const long nnz = colptr[H / 32], BH = (long)B * H, BG = 4 * BH;
    bf16 *w = step_weights(nnz, wt);
    BwdWindow win = {wg_bwd_create(colptr, row, blk, nnz, w, H, B), B, H, steps};
    if (!win.b) {
        CUDA_CHECK(cudaFree(w));
        return -1;
    }
    float *dzf = random_floats(BG, 0.1f, 5), *actf = random_floats(BG * steps, 0.5f, 6);
    CUDA_CHECK(cudaMalloc(&win.dzpk, 2 * BG * (steps + 1)));
    CUDA_CHECK(cudaMalloc(&win.dzb, 2 * BG * steps));
    CUDA_CHECK(cudaMalloc(&win.actb, 2 * BG * steps));
    CUDA_CHECK(cudaMalloc(&win.db, sizeof(float) * (BG / 64) * steps));
    to_bf16(win.dzpk + steps * BG, dzf, BG);  // the window's last dz, in any layout
    to_bf16(win.actb, actf, BG * steps);
    win.dh = random_floats(BH * steps, 0.1f, 7), win.dc = random_floats(BH, 0.1f, 8), win.c = random_floats(BH * (steps + 1), 1.f, 9);
    double ms = cb_time_ms(bwd_once, &win, steps, 10 * steps);
    wg_bwd_free(win.b);
    void *bufs[] = {w, dzf, actf, win.dzpk, win.dzb, win.actb, win.db, win.dh, win.dc, win.c};
    for (void *p : bufs) CUDA_CHECK(cudaFree(p));
    return ms * 1e3;
}

namespace {

struct DwCall {
    real *dvals;
    const bf16 *dz, *h;
    const BsMat *w;
    int N, wgmma;
};

void dw_once(void *arg, int) {
    DwCall *c = (DwCall *)arg;
    if (c->wgmma) wg_dw(c->dvals, c->dz, c->h, c->w, c->N, NULL);
    else bsmm_bwd_weight_typed(c->dvals, c->dz, c->h, c->w, c->N, 1);
}

}  // namespace

extern "C" double cb_wgmma_dw_ms(const BsMat *w, int N, double *mma) {
    const long nz = (long)N * w->rows, nh = (long)N * w->cols;
    float *zf = random_floats(nz, 0.1f, 10), *hf = random_floats(nh, 1.f, 11);
    DwCall c = {NULL, NULL, NULL, w, N, 1};
    CUDA_CHECK(cudaMalloc(&c.dvals, sizeof(real) * bsmat_nvals(w)));
    CUDA_CHECK(cudaMalloc((void **)&c.dz, 2 * nz));
    CUDA_CHECK(cudaMalloc((void **)&c.h, 2 * nh));
    to_bf16((bf16 *)c.dz, zf, nz);
    to_bf16((bf16 *)c.h, hf, nh);
    double ms = -1;
    if (wg_dw(c.dvals, c.dz, c.h, w, N, NULL)) ms = cb_time_ms(dw_once, &c, 2, 10);
    c.wgmma = 0;
    *mma = cb_time_ms(dw_once, &c, 2, 10);
    void *bufs[] = {zf, hf, c.dvals, (void *)c.dz, (void *)c.h};
    for (void *p : bufs) CUDA_CHECK(cudaFree(p));
    return ms;
}
