// gen_loop.cu: the sampling loop (backend.h gen_*) as one cooperative launch: each time step
// is a product phase (every warp's pieces of [W_h; W_o] h), a grid barrier, a phase where every
// CTA sums the logits and draws the next byte itself (the same bits in each: no second
// barrier to hand the byte round) and the CTAs owning units run the cell, and a grid barrier.
// The mLSTM puts its internal products between the draw and the cell. Each product's block
// rows are finished within its phase: the warp whose piece completes a row sums the row and
// its share of the norm's sums (finish_row). After a barrier every CTA combines the rows'
// shares in one fixed order (so all CTAs, and all runs, see the same statistics), normalizes
// the input columns its blocks read into its shared memory and runs its pieces of the next
// product: D + 2 barriers a byte.
// CPU twin: infer_step and sample_byte (src/model/infer.c, sampler.c), one step at a time.
#include "engine/gen_loop.cuh"
#include "ops/reduce.cuh"
#include "base/rng.h"

// The draw's shared scratch: logits, then the candidates in the CPU's order (probability
// descending, ties in byte order: the sort's exchange, each place's byte) and their running sums.
struct GenScratch {
    __align__(16) float logit[256];
    unsigned long long key[256];
    double cp[256], wsum[GEN_WARPS];
    double wst[GEN_WARPS][8], tot[8];  // the layer norms' sums: each warp's, then the grid's
    int sid[256], first, pick;
    float wmax[GEN_WARPS];
    int warg[GEN_WARPS];
};

size_t gen_head_bytes(int H, int nrows0, int npieces0) {
    return ((size_t)H * sizeof(float) + sizeof(GenScratch) + sizeof(int) * (size_t)(nrows0 + 1 + npieces0) + 15) / 16 * 16;
}

// Every CTA arrives, then waits until all have: a monotone counter (reset per launch), so
// no sense to flip. The release/acquire pair orders each CTA's writes before every other's reads.
__device__ inline void grid_barrier(unsigned long long *bar, unsigned long long target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(bar) : "memory");
        unsigned long long v;
        do asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(bar) : "memory");
        while (v < target);
    }
    __syncthreads();
}

// 16 bytes of weights (8 bf16 or 4 floats) dotted with h[0..V).
__device__ inline float dot16(const bf16 *w, const float *h) {
    uint4 u = *(const uint4 *)w;
    const __nv_bfloat162 *p = (const __nv_bfloat162 *)&u;
    float s = 0;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        float2 f = __bfloat1622float2(p[q]);
        s = fmaf(f.x, h[2 * q], s);
        s = fmaf(f.y, h[2 * q + 1], s);
    }
    return s;
}
__device__ inline float dot16(const float *w, const float *h) {
    float4 f = *(const float4 *)w;
    return f.x * h[0] + f.y * h[1] + f.z * h[2] + f.w * h[3];
}

// One piece: its blocks times h (shared), summed into 32 partial sums. A lane reads 16 bytes
// of a block per load: V values of row (it*32 + lane) / LPR, LPR lanes a row.
template <typename W>
__device__ void piece_dot(const W *blk, const int *cols, int nb, const float *hs, float *part) {
    constexpr int V = 16 / sizeof(W), LPR = 32 / V, NL = GEN_BLOCK / V / 32;
    const int lane = threadIdx.x % 32;
    float acc[NL] = {};
#pragma unroll 2
    for (int b = 0; b < nb; b++) {
        const W *w = blk + (size_t)b * GEN_BLOCK;
        const float *h = hs + cols[b] * 32 + (lane % LPR) * V;
#pragma unroll
        for (int it = 0; it < NL; it++) acc[it] += dot16(w + (it * 32 + lane) * V, h);
    }
#pragma unroll
    for (int it = 0; it < NL; it++) {
        float s = acc[it];
        for (int o = 1; o < LPR; o <<= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane % LPR == 0) part[it * V + lane / LPR] = s;
    }
}

// The block's threads' inclusive prefix sums of v (thread order).
__device__ double block_scan(double v, GenScratch *sc) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 1; o < 32; o <<= 1) {
        double u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    if (lane == 31) sc->wsum[warp] = v;
    __syncthreads();
    for (int w = 0; w < warp; w++) v += sc->wsum[w];
    return v;
}

// The first index of the largest logit (sampler.c argmax), in every thread.
__device__ int block_argmax(float l, GenScratch *sc) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int i = threadIdx.x;
    for (int o = 16; o; o >>= 1) {
        float l2 = __shfl_xor_sync(0xffffffffu, l, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (l2 > l || (l2 == l && i2 < i)) l = l2, i = i2;
    }
    if (lane == 0) sc->wmax[warp] = l, sc->warg[warp] = i;
    __syncthreads();
    int best = sc->warg[0];
    for (int w = 1; w < GEN_WARPS; w++)
        if (sc->wmax[w] > sc->logit[best] || (sc->wmax[w] == sc->logit[best] && sc->warg[w] < best)) best = sc->warg[w];
    return best;
}

// Sorts the 256 candidates as sample_byte does (logit descending, as exp keeps their order;
// ties in byte order; logits whose p underflows to 0 may order otherwise, and add nothing to
// any sum): thread i ends holding the key of place i. Bitonic, on unique 40-bit keys
// (the logit's bits made orderable, then 255 - byte); strides under 32 within a warp by shuffle.
__device__ unsigned long long sort_candidates(float l, GenScratch *sc) {
    const int i = threadIdx.x;
    const unsigned b = __float_as_uint(l + 0.f);  // -0 as +0: they tie on the CPU
    unsigned long long k = ((unsigned long long)(b & 0x80000000u ? ~b : b | 0x80000000u) << 8) | (unsigned)(255 - i);
    for (int size = 2; size <= 256; size <<= 1)
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            unsigned long long o;
            if (stride < 32) o = __shfl_xor_sync(0xffffffffu, k, stride);
            else {
                sc->key[i] = k;
                __syncthreads();
                o = sc->key[i ^ stride];
                __syncthreads();
            }
            // Descending within blocks whose bit `size` is clear: the lower place keeps the larger.
            const bool lower = (i & stride) == 0, desc = (i & size) == 0;
            k = lower == desc ? (k > o ? k : o) : (k < o ? k : o);
        }
    return k;
}

// sample_byte over sc->logit (thread i: byte i, then place i of the sorted candidates); every
// thread draws from its own copy of the generator, so all copies (in every CTA) stay equal. The sums run in another order
// than the CPU's: a draw can differ only where u falls within rounding of a boundary.
__device__ int gen_draw(GenScratch *sc, const GenLaunch &a, uint64_t *rs) {
    const int i = threadIdx.x;
    if (a.temperature <= 0) return block_argmax(sc->logit[i], sc);
    const int id = 255 - (int)(sort_candidates(sc->logit[i], sc) & 0xff);  // place i's byte
    sc->sid[i] = id;
    if (i == 0) sc->first = 256, sc->pick = 256;
    __syncthreads();
    const double p = exp(((double)sc->logit[id] - (double)sc->logit[sc->sid[0]]) / a.temperature);
    const double cp = block_scan(p, sc);
    sc->cp[i] = cp;
    __syncthreads();
    const double sum = sc->cp[255];
    int keep = a.top_k > 0 && a.top_k < 256 ? a.top_k : 256;
    if (a.top_p < 1 && i < keep && cp / sum >= a.top_p) atomicMin(&sc->first, i);
    __syncthreads();
    if (sc->first < keep) keep = sc->first + 1;
    const double u = xoshiro_uniform(rs) * sc->cp[keep - 1];
    if (i < keep && cp > u) atomicMin(&sc->pick, i);
    __syncthreads();
    return sc->sid[sc->pick < keep ? sc->pick : keep - 1];
}

// The partial sums of block row `row` at offset o, in block order; loads 16 at a time, so
// that a row's pieces cost about one L2 round trip rather than one each.
__device__ inline float row_sum(const float *part, const int *rp, const int *rpc, int row, int o) {
    float s = 0;
    for (int q = rp[row]; q < rp[row + 1]; q += 16) {
        float v[16];
#pragma unroll
        for (int u = 0; u < 16; u++) v[u] = q + u < rp[row + 1] ? __ldcg(part + rpc[q + u] * 32 + o) : 0.f;
#pragma unroll
        for (int u = 0; u < 16; u++) s += v[u];
    }
    return s;
}

// A warp runs 8 units, lane g*8 + u holding gate g of unit u; j < 0: none (gen_max_units).
__device__ inline int cell_unit(int H) {
    const int j = (blockIdx.x * GEN_WARPS + threadIdx.x / 32) * 8 + threadIdx.x % 8;
    return j < H ? j : -1;
}

// The cell from each lane's gate pre-activation z: the gates meet in lanes u; c and h as
// lstm_fwd (its fast activations).
__device__ void lstm_units(const GenLaunch &a, int j, float z, float *h_out) {
    const int lane = threadIdx.x % 32, u = lane % 8;
    const float zi = __shfl_sync(0xffffffffu, z, u), zf = __shfl_sync(0xffffffffu, z, 8 + u);
    const float zg = __shfl_sync(0xffffffffu, z, 16 + u), zo = __shfl_sync(0xffffffffu, z, 24 + u);
    if (j < 0 || lane >= 8) return;
    const float c = sigm(zf) * a.c[j] + sigm(zi) * tnh(zg);
    a.c[j] = c;
    h_out[j] = sigm(zo) * tnh(c);
}

// The block's sums of v[0..n) (n <= 8), in a fixed order (a shuffle tree, then the warps in
// turn), written by thread 0 to out. Every thread takes part.
__device__ void block_sums(double *v, int n, GenScratch *sc, double *out) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (k >= n) break;
        v[k] = warp_sum(v[k]);
        if (lane == 0) sc->wst[warp][k] = v[k];
    }
    __syncthreads();
    if (threadIdx.x < n) {
        double t = 0;
        for (int w = 0; w < GEN_WARPS; w++) t += sc->wst[w][threadIdx.x];
        out[threadIdx.x] = t;
    }
}

// The norm sums of G runs of R block rows each (stage.stat; G = 1: an internal norm, 4: the
// gates'): thread b loads row b of each run (one round trip for all); grid_sums adds them in
// block_sums' fixed order, the same in every CTA, into sc->tot (run g: tot[2g], tot[2g + 1]).
// Split in two so that other loads can fly between.
__device__ inline void row_stat_loads(const double2 *stat, int R, int G, double *v) {
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = 0;
    for (int b = threadIdx.x; b < R; b += blockDim.x)
#pragma unroll
        for (int g = 0; g < 4; g++)
            if (g < G) {
                const double2 t = __ldcg(stat + (size_t)g * R + b);
                v[2 * g] += t.x, v[2 * g + 1] += t.y;
            }
}
__device__ void grid_sums(double *v, int n, GenScratch *sc) {
    block_sums(v, n, sc, sc->tot);
    __syncthreads();
}

// Mean and 1 / sqrt(biased variance + eps) of H values from their sum and sum of squares
// (in double: the subtraction keeps float's accuracy for the rows a cell sees).
__device__ inline float2 norm_stats(double sum, double sq, int H) {
    const double mean = sum / H, var = fmax(sq / H - mean * mean, 0.0);
    return make_float2((float)mean, (float)(1 / sqrt(var + 1e-5)));
}

// A warp has written piece p's partial sums: if that completes a row of st.nfin (the last of
// the row's pieces to arrive, by its counter), the warp sums the row's pieces in block order
// into st.out, the row's (sum, sum of squares) into st.stat, and rearms the counter. So every
// row is final at the next barrier, with no phase of its own.
__device__ void finish_row(const GenStage &st, int p) {
    const int row = st.piece_row[p], lane = threadIdx.x % 32;
    if (row >= st.nfin) return;
    const int pieces = st.row_ptr[row + 1] - st.row_ptr[row];
    if (pieces > 1) {
        __threadfence();  // this warp's partial sums before its arrival
        __syncwarp();
        int last = 0;
        if (lane == 0) last = atomicAdd(st.cnt + row, 1) == pieces - 1;
        if (!__shfl_sync(0xffffffffu, last, 0)) return;
        __threadfence();  // every other piece's before the reads
        if (lane == 0) st.cnt[row] = 0;
    }
    const float v = row_sum(st.part, st.row_ptr, st.row_piece, row, lane);
    st.out[row * 32 + lane] = v;
    const double sum = warp_sum((double)v), sq = warp_sum((double)v * v);
    if (lane == 0) st.stat[row] = make_double2(sum, sq);
}

// After the barrier: u_j = LN(s_j) * gain + bias, then * m_t (j = 0), relu(. + a_t) (j = 1) or relu
// (norm_act_fwd), into hs: only the block columns the next stage's span in this CTA reads,
// so that a CTA reads a few KB of s, the norm and the table rather than all of them.
__device__ void inner_norm(const GenLaunch &a, int j, int tok, float *hs, GenScratch *sc) {
    enum { U = 8 };  // elements a thread has in flight: one round trip for up to U of them, not U
    const GenStage &st = a.st[j], &nx = a.st[j + 1];
    const int c0 = nx.cta_col_ptr[blockIdx.x], n = (nx.cta_col_ptr[blockIdx.x + 1] - c0) * 32;
    double v[8];
    row_stat_loads(st.stat, st.nfin, 1, v);  // in flight while s comes in
    for (int q0 = threadIdx.x; q0 < n; q0 += U * GEN_THREADS) {
        int e[U];
        float x[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int q = q0 + u * GEN_THREADS;
            e[u] = q < n ? nx.cta_col[c0 + q / 32] * 32 + q % 32 : -1;
        }
#pragma unroll
        for (int u = 0; u < U; u++) x[u] = e[u] >= 0 ? __ldcg(st.out + e[u]) : 0.f;
#pragma unroll
        for (int u = 0; u < U; u++)
            if (e[u] >= 0) hs[e[u]] = x[u];
    }
    grid_sums(v, 2, sc);
    const float2 ms = norm_stats(sc->tot[0], sc->tot[1], a.H);
    const float *g = a.sln + (size_t)j * 2 * a.H, *bi = g + a.H;
    const float *mt = a.mtab + (size_t)(j == 1 ? 256 + tok : tok) * a.H;  // m_t for j = 0, a_t for j = 1
    for (int q0 = threadIdx.x; q0 < n; q0 += U * GEN_THREADS) {  // each thread its own elements again
        int e[U];
        float gg[U], bb[U], tt[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int q = q0 + u * GEN_THREADS;
            e[u] = q < n ? nx.cta_col[c0 + q / 32] * 32 + q % 32 : -1;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const bool in = e[u] >= 0;
            gg[u] = in ? g[e[u]] : 0.f, bb[u] = in ? bi[e[u]] : 0.f, tt[u] = in && j < 2 ? mt[e[u]] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (e[u] < 0) continue;
            const float y = (hs[e[u]] - ms.x) * ms.y * gg[u] + bb[u];
            hs[e[u]] = j == 0 ? y * tt[u] : fmaxf(y + tt[u], 0.f);  // tt is 0 for j >= 2: relu(y)
        }
    }
    __syncthreads();
}

// Every warp's pieces of stage st times hs, into st.part; rows finished as they complete.
template <typename W>
__device__ void stage_product(const GenStage &st, const unsigned char *smem, const float *hs) {
    const int warp = blockIdx.x * GEN_WARPS + threadIdx.x / 32, b0 = st.cta_blk[blockIdx.x];
    const W *wb = st.resident ? (const W *)(smem + st.smem_off) : (const W *)st.wblk + (size_t)b0 * GEN_BLOCK;
    for (int p = st.worker_ptr[warp]; p < st.worker_ptr[warp + 1]; p++) {
        const int k = st.piece_blk[p];
        const W *w = wb + (size_t)(k - b0) * GEN_BLOCK;
        piece_dot(w, st.cols + k, st.piece_blk[p + 1] - k, hs, st.part + (size_t)p * 32);
        finish_row(st, p);
    }
}

__device__ inline void grid_sync(const GenLaunch &a, unsigned long long &nbar) { grid_barrier(a.bar, ++nbar * gridDim.x); }

// The mLSTM's step after the draw, from stage 0's finished rows (W_h0 h): the internal norms
// and products, the gates' product, their per-gate norms (their rows' sums combined as the
// internal ones') and the cell, h into h_out.
template <typename W>
__device__ void mlstm_step(const GenLaunch &a, int tok, const unsigned char *smem, float *hs, float2 gb, GenScratch *sc,
                           unsigned long long &nbar, float *h_out) {
    for (int j = 0; j < a.D; j++) {
        inner_norm(a, j, tok, hs, sc);
        stage_product<W>(a.st[j + 1], smem, hs);
        grid_sync(a, nbar);
    }
    const GenStage &gs = a.st[a.D];
    const int u = cell_unit(a.H), g = threadIdx.x % 32 / 8;
    double t[8];
    row_stat_loads(gs.stat, a.H / 32, 4, t);
    const float z = u >= 0 ? __ldcg(gs.out + g * a.H + u) : 0.f;
    grid_sums(t, 8, sc);
    const float2 ms = norm_stats(sc->tot[2 * g], sc->tot[2 * g + 1], a.H);
    lstm_units(a, u, u >= 0 ? (z - ms.x) * ms.y * gb.x + gb.y : 0.f, h_out);
}

// Stage 0's piece lists into shared memory (read every step); each resident span too, once.
template <typename W>
__device__ void gen_load(const GenLaunch &a, unsigned char *smem, int *rp, int *rpc) {
    const GenStage &s0 = a.st[0];
    for (int q = threadIdx.x; q <= s0.rows; q += blockDim.x) rp[q] = s0.row_ptr[q];
    for (int q = threadIdx.x; q < s0.npieces; q += blockDim.x) rpc[q] = s0.row_piece[q];
    for (int i = 0; i <= a.D; i++) {
        const GenStage &st = a.st[i];
        if (!st.resident) continue;
        const int b0 = st.cta_blk[blockIdx.x];
        const size_t n16 = (size_t)(st.cta_blk[blockIdx.x + 1] - b0) * GEN_BLOCK * sizeof(W) / 16;
        const uint4 *src = (const uint4 *)((const W *)st.wblk + (size_t)b0 * GEN_BLOCK);
        for (size_t q = threadIdx.x; q < n16; q += blockDim.x) ((uint4 *)(smem + st.smem_off))[q] = src[q];
    }
    __syncthreads();
}

template <typename W>
__global__ void __launch_bounds__(GEN_THREADS) gen_loop(GenLaunch a) {
    extern __shared__ __align__(16) unsigned char smem[];
    float *hs = (float *)smem;
    GenScratch *sc = (GenScratch *)(hs + a.H);
    const GenStage &s0 = a.st[0];
    const int head_row = s0.rows - 8;
    int *rp = (int *)(sc + 1), *rpc = rp + s0.rows + 1;
    gen_load<W>(a, smem, rp, rpc);
    const int j = cell_unit(a.H), r = (threadIdx.x % 32 / 8) * a.H + j;
    const float bias = j >= 0 ? a.bias[r] : 0.f;
    const float2 gb = make_float2(j >= 0 && a.D ? a.gain[r] : 0.f, bias);  // the mLSTM's gate norm
    uint64_t rs[4] = {a.rng[0], a.rng[1], a.rng[2], a.rng[3]};
    unsigned long long nbar = 0;
    int tok = a.feed[0];
    for (int it = 0; it <= a.steps; it++) {
        const float *hg = a.h + (size_t)((it + a.par) & 1) * a.H;
        for (int q = threadIdx.x; q < a.H / 4; q += blockDim.x) ((float4 *)hs)[q] = __ldcg((const float4 *)hg + q);
        __syncthreads();
        stage_product<W>(s0, smem, hs);
        grid_sync(a, nbar);
        // The plain cell's gate sums first: their loads overlap the logits' and the draw.
        float pre = 0;
        if (it < a.steps && !a.D && j >= 0) pre = bias + row_sum(s0.part, rp, rpc, r / 32, r % 32);
        if (it > 0) {  // the logits after step it - 1, then maybe the draw
            const int i = threadIdx.x;
            const float l = a.bo[i] + row_sum(s0.part, rp, rpc, head_row + i / 32, i % 32);
            sc->logit[i] = l;
            if (a.logits && blockIdx.x == 0) a.logits[(size_t)(it - 1) * 256 + i] = l;
            __syncthreads();
            if (it >= a.nfeed && a.nsample > 0) {
                tok = gen_draw(sc, a, rs);
                if (blockIdx.x == 0 && threadIdx.x == 0) a.out[it - a.nfeed] = (unsigned char)tok;
            }
        }
        if (it == a.steps) break;
        if (it < a.nfeed) tok = a.feed[it];
        float *h_out = a.h + (size_t)((it + 1 + a.par) & 1) * a.H;
        if (a.D) mlstm_step<W>(a, tok, smem, hs, gb, sc, nbar, h_out);
        else lstm_units(a, j, j >= 0 ? a.xtab[(size_t)tok * 4 * a.H + r] + pre : 0.f, h_out);
        grid_sync(a, nbar);
    }
    if (blockIdx.x == 0 && threadIdx.x < 4) a.rng_out[threadIdx.x] = rs[threadIdx.x];
}

template <typename W>
void gen_loop_launch(const GenLaunch &a, int grid, size_t smem) {
    CUDA_CHECK(cudaFuncSetAttribute(gen_loop<W>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    launch_attr(attr_cooperative(), gen_loop<W>, dim3(grid), dim3(GEN_THREADS), smem, g_cuda.stream, a);
}
template void gen_loop_launch<float>(const GenLaunch &, int, size_t);
template void gen_loop_launch<bf16>(const GenLaunch &, int, size_t);

// dst block i = block src[i] of W_h (src >= 0) or block -src-1 of W_o cut row-major into
// 32 x 32 blocks; one CTA a block, converted to W.
template <typename W>
__global__ void gen_gather_kernel(W *dst, const int *src, const real *wh, const real *wo, int H) {
    const int s = src[blockIdx.x], nbc = H / 32;
    for (int e = threadIdx.x; e < GEN_BLOCK; e += blockDim.x) {
        float v;
        if (s >= 0) v = wh[(size_t)s * GEN_BLOCK + e];
        else {
            const int hb = -s - 1, r = (hb / nbc) * 32 + e / 32, col = (hb % nbc) * 32 + e % 32;
            v = wo[(size_t)r * H + col];
        }
        dst[(size_t)blockIdx.x * GEN_BLOCK + e] = W(v);  // bf16: round to nearest, as the shadow
    }
}

template <typename W>
void gen_gather(W *dst, const int *src, int nblk, const real *wh, const real *wo, int H) {
    gen_gather_kernel<W><<<nblk, 256, 0, g_cuda.stream>>>(dst, src, wh, wo, H);
    LAUNCH_CHECK();
}
template void gen_gather<float>(float *, const int *, int, const real *, const real *, int);
template void gen_gather<bf16>(bf16 *, const int *, int, const real *, const real *, int);

template <typename W>
int gen_loop_ctas_per_sm(size_t smem) {
    CUDA_CHECK(cudaFuncSetAttribute(gen_loop<W>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int n = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, gen_loop<W>, GEN_THREADS, smem));
    return n;
}
template int gen_loop_ctas_per_sm<float>(size_t);
template int gen_loop_ctas_per_sm<bf16>(size_t);
