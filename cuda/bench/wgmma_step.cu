// wgmma_step.cu: `swlstm bench --wgmma`'s timing (bench_cuda.h): the wgmma forward step
// (cuda/wgmma/wg_fwd.h) chained over a window of steps on random operands or a checkpoint's
// weights, each step's outputs in planes of their own as the engine keeps them.
#include <vector>
#include "bench/bench_cuda.h"
#include "base/lowp.cuh"
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

extern "C" double cb_wgmma_fwd_us(const int *rowptr, const int *col, int H, int B, int steps, const int *tok,
                                   const CbStepWeights *wt) {
    const long nnz = rowptr[H / 32], BH = (long)B * H;
    std::vector<int> blk(nnz);
    for (long p = 0; p < nnz; p++) blk[p] = (int)p;
    float *wf = wt ? device_floats(wt->w, 4 * nnz * 1024) : random_floats(4 * nnz * 1024, 0.06f, 1), *hf = random_floats(BH, 1.f, 2);
    bf16 *w, *h0;
    CUDA_CHECK(cudaMalloc(&w, 2 * 4 * nnz * 1024));
    CUDA_CHECK(cudaMalloc(&h0, 2 * BH));
    to_bf16(w, wf, 4 * nnz * 1024);
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
    void *bufs[] = {wf, hf, w, h0, win.tok, win.hpk, win.hb, win.actb, win.h1, win.c, xtab};
    for (void *p : bufs) CUDA_CHECK(cudaFree(p));
    return ms * 1e3;
}
