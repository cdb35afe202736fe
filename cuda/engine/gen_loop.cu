// gen_loop.cu: the plain cell's sampling loop (backend.h gen_*; the mLSTM's is gen_mlstm.cu)
// as one cooperative launch: each time step is a product phase (every warp's pieces of
// [W_h; W_o] h), a grid barrier, a phase where every CTA sums the logits and draws the next
// byte itself (the same bits in each: no second barrier to hand the byte round) and the CTAs
// owning units run the cell, and a grid barrier.
// CPU twin: infer_step and sample_byte (src/model/infer.c, sampler.c), one step at a time.
#include "engine/gen_dev.cuh"

size_t gen_head_bytes(int H, int nrows0, int npieces0) {
    return ((size_t)H * sizeof(float) + sizeof(GenScratch) + sizeof(int) * (size_t)(nrows0 + 1 + npieces0) + 15) / 16 * 16;
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

// A warp's pieces lie one after another in wblk: piece p ends at block piece_blk[p + 1]
// (cut.e) and sums into part + 32 p (cut.dst).
struct PieceCut {
    const int *pb;
    float *dst;
    int p, p1, e;
};

// Blocks k0 .. k1-1 (block k at wb + (k - k0) * 1024, its column cols[k]) times hs, summed
// piece by piece as cut says. DEPTH blocks' loads are issued before any is used, so that the
// walk waits on one round trip per DEPTH blocks, not per block; the sums keep block order.
template <typename W, int DEPTH>
__device__ void walk_pieces(const W *wb, const int *cols, int k0, int k1, const float *hs, PieceCut cut) {
    using L = Lanes<W>;
    const int lane = threadIdx.x % 32;
    float acc[L::NL] = {};
    for (int k = k0; k < k1; k += DEPTH) {
        uint4 u[DEPTH][L::NL];
        int c[DEPTH];
#pragma unroll
        for (int d = 0; d < DEPTH; d++) {
            const bool in = k + d < k1;
            c[d] = in ? cols[k + d] : 0;
            const uint4 *w = (const uint4 *)(wb + (size_t)(k + d - k0) * GEN_BLOCK) + lane;
#pragma unroll
            for (int it = 0; it < L::NL; it++) u[d][it] = in ? w[it * 32] : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int d = 0; d < DEPTH; d++) {
            if (k + d >= k1) break;
            const float *h = hs + c[d] * 32 + (lane % L::LPR) * L::V;
#pragma unroll
            for (int it = 0; it < L::NL; it++) acc[it] += dot16<W>(u[d][it], h);
            if (k + d + 1 == cut.e) {
                put_sums<W>(acc, cut.dst);
                cut.dst += 32;
                cut.e = ++cut.p < cut.p1 ? cut.pb[cut.p + 1] : k1;
            }
        }
    }
}

// Every warp's pieces of stage st times hs, into st.part: one walk over the warp's blocks, 2
// blocks deep from shared memory, 8 KB from L2 (the depths measured best: docs/PERF.md, Sampling).
template <typename W>
__device__ void stage_product(const GenStage &st, const unsigned char *smem, const float *hs) {
    const int warp = blockIdx.x * GEN_WARPS + threadIdx.x / 32, b0 = st.cta_blk[blockIdx.x];
    const int p0 = st.worker_ptr[warp], p1 = st.worker_ptr[warp + 1];
    if (p0 == p1) return;
    const int k0 = st.piece_blk[p0], k1 = st.piece_blk[p1];
    const W *wb = st.resident ? (const W *)(smem + st.smem_off) + (size_t)(k0 - b0) * GEN_BLOCK
                              : (const W *)st.wblk + (size_t)k0 * GEN_BLOCK;
    const PieceCut cut = {st.piece_blk, st.part + (size_t)p0 * 32, p0, p1, st.piece_blk[p0 + 1]};
    if (st.resident) walk_pieces<W, 2>(wb, st.cols, k0, k1, hs, cut);
    else walk_pieces<W, 8192 / (GEN_BLOCK * (int)sizeof(W))>(wb, st.cols, k0, k1, hs, cut);
}

// Stage 0's piece lists into shared memory (read every step); its span too where resident, once.
template <typename W>
__device__ void gen_load(const GenLaunch &a, unsigned char *smem, int *rp, int *rpc) {
    const GenStage &s0 = a.st[0];
    for (int q = threadIdx.x; q <= s0.rows; q += blockDim.x) rp[q] = s0.row_ptr[q];
    for (int q = threadIdx.x; q < s0.npieces; q += blockDim.x) rpc[q] = s0.row_piece[q];
    if (s0.resident) {
        const int b0 = s0.cta_blk[blockIdx.x];
        const size_t n16 = (size_t)(s0.cta_blk[blockIdx.x + 1] - b0) * GEN_BLOCK * sizeof(W) / 16;
        copy16(smem + s0.smem_off, (const W *)s0.wblk + (size_t)b0 * GEN_BLOCK, n16);
    }
    __syncthreads();
}

template <typename W>
__global__ void __launch_bounds__(GEN_THREADS, 1) gen_loop(GenLaunch a) {
    extern __shared__ __align__(16) unsigned char smem[];
    float *hs = (float *)smem;
    GenScratch *sc = (GenScratch *)(hs + a.H);
    const GenStage &s0 = a.st[0];
    const int head_row = s0.rows - 8;
    int *rp = (int *)(sc + 1), *rpc = rp + s0.rows + 1;
    gen_load<W>(a, smem, rp, rpc);
    const int j = cell_unit(a.H), r = (threadIdx.x % 32 / 8) * a.H + j;
    const float bias = j >= 0 ? a.bias[r] : 0.f;
    uint64_t rs[4] = {a.rng[0], a.rng[1], a.rng[2], a.rng[3]};
    unsigned long long nbar = 0;
    int tok = a.feed[0];
    for (int it = 0; it <= a.steps; it++) {
        const float *hg = a.h + (size_t)((it + a.par) & 1) * a.H;
        copy16(hs, hg, a.H / 4);
        __syncthreads();
        stage_product<W>(s0, smem, hs);
        grid_sync(a, nbar);
        // The plain cell's gate sums first: their loads overlap the logits' and the draw.
        float pre = 0;
        if (it < a.steps && j >= 0) pre = bias + row_sum(s0.part, rp, rpc, r / 32, r % 32);
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
        lstm_units(a, j, j >= 0 ? a.xtab[(size_t)tok * 4 * a.H + r] + pre : 0.f, h_out);
        grid_sync(a, nbar);
    }
    if (blockIdx.x == 0 && threadIdx.x < 4) a.rng_out[threadIdx.x] = rs[threadIdx.x];
}

template <typename W>
void gen_loop_launch(const GenLaunch &a, int grid, size_t smem) { loop_launch(gen_loop<W>, a, grid, smem); }
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
int gen_loop_ctas_per_sm(size_t smem) { return loop_ctas_per_sm(gen_loop<W>, smem); }
template int gen_loop_ctas_per_sm<float>(size_t);
template int gen_loop_ctas_per_sm<bf16>(size_t);
