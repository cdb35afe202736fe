// bsmm_stream.cu: the bf16 forward y (=|+=) x W^T of a block-32 matrix for few rows of x
// (N <= ST_MAX_N). Each stored block is read once and meets at most ST_ROWS rows, so the op
// is a stream of weights from DRAM and the kernel's one job is to keep DRAM busy. CPU twin:
// src/ops/bsmm_cpu.c; bsmm.cu's general kernel takes every other shape.
//   - Every copy is one instruction of the bulk copy engine (bulk.cuh), where cp.async takes
//     128 per 2 KB: a stored block is one contiguous run; the activations it meets (32 rows x
//     32 columns of x) are one box of a tensor map. Where x has a bf16 twin (twins.cu: the
//     mlstm keeps one of each product's input) the boxes are bf16, 2 KB; else fp32, rounded to
//     bf16 as fragments are read, so no conversion pass runs before the product.
//   - A CTA is ST_WARPS warps on one piece of a block row's list (bsmat_dev.cuh); warp w takes
//     entries w, w + ST_WARPS, ... through its own ring of ST_S stages, so no warp waits for
//     another until the end, where their tiles are summed in warp order (same bits every run).
//   - Bank conflicts: a thread reads 16 or 32 bytes of a row (k = 8t..8t+7, t = lane % 4) and
//     the mma's k order is permuted alike for both operands. The blocks' 64-byte rows arrive
//     unpadded, and 8 lanes then read 128 contiguous bytes; the activations' 128-byte rows
//     arrive swizzled (16-byte chunk c of row r at c ^ r % 8), which spreads each read too.
#include <type_traits>
#include "bsmm/bsmm_tile.cuh"
#include "bsmm/bulk.cuh"

#define ST_WARPS 4
#ifndef ST_S
#define ST_S 3          // ring depth per warp (3 CTAs per SM; the grid is then about one round)
#endif
#define ST_ROWS 32      // rows of x per CTA (gridDim.y covers N)
#define ST_W 2048       // bytes of a 32 x 32 bf16 block
#ifndef ST_MAX_N
#define ST_MAX_N 32
#endif

// XB: x's boxes in bf16 (64-byte rows, unswizzled like the blocks) or fp32 (128-byte rows, swizzled).
template <bool XB>
struct St {
    static constexpr size_t X = XB ? 2048 : 4096;  // bytes of a stage's activations: 32 rows x 32
    static constexpr size_t STAGE = X + ST_W;      // a multiple of the swizzle's 1024-byte period
    static constexpr size_t RING = (size_t)ST_WARPS * ST_S * STAGE;
    static constexpr size_t SMEM = 1024 + RING + ST_WARPS * ST_S * sizeof(uint64_t);  // 1024: alignment
    static_assert(STAGE % 1024 == 0, "swizzled boxes start on 1024-byte boundaries");
    static_assert(RING >= (size_t)ST_WARPS * ST_ROWS * 32 * sizeof(float), "the warps' tiles fit in the ring");
};

typedef struct {
    MmOut out;
    const bf16 *w;  // the stored blocks
    const MmPiece *pieces;
    const int *col_idx;
    float *part;    // pieces_done's partial tiles and counters
    int *count;
    int N, ld_out, acc;
} StArgs;

// bf16 pair (lo, hi) of two floats, round to nearest even.
__device__ inline uint32_t bf2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}

// Thread (g, t)'s k = 8t..8t+7 of row r of the activations' box, as 4 bf16 pairs.
__device__ inline void box_row(uint32_t (&a)[4], const unsigned char *X, int r, int t, std::true_type) {
    const uint4 q = ((const uint4 *)X)[r * 4 + t];
    a[0] = q.x, a[1] = q.y, a[2] = q.z, a[3] = q.w;
}
__device__ inline void box_row(uint32_t (&a)[4], const unsigned char *X, int r, int t, std::false_type) {
    const float4 *f = (const float4 *)X;
    const float4 u = f[r * 8 + ((2 * t) ^ (r & 7))], v = f[r * 8 + ((2 * t + 1) ^ (r & 7))];
    a[0] = bf2(u.x, u.y), a[1] = bf2(u.z, u.w), a[2] = bf2(v.x, v.y), a[3] = bf2(v.z, v.w);
}

// acc[mt][nt] += rows 16 mt.. of the activations' box times columns 8 nt.. of the block's
// transpose, over the block's 32 k: thread (g, t) holds k = 8t..8t+7 of its rows, words 2s
// and 2s+1 of them standing for the mma's k = 2t and 2t+8 of k-step s (alike for A and B).
template <bool XB>
__device__ inline void stream_product(float (&acc)[2][4][4], const unsigned char *X, const uint4 *W, int g, int t) {
    uint32_t a[2][2][4], b[4][4];
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) box_row(a[mt][h], X, mt * 16 + h * 8 + g, t, std::integral_constant<bool, XB>());
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
        const uint4 q = W[(nt * 8 + g) * 4 + t];
        b[nt][0] = q.x, b[nt][1] = q.y, b[nt][2] = q.z, b[nt][3] = q.w;
    }
#pragma unroll
    for (int s = 0; s < 2; s++)
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
            const uint32_t af[4] = {a[mt][0][2 * s], a[mt][1][2 * s], a[mt][0][2 * s + 1], a[mt][1][2 * s + 1]};
#pragma unroll
            for (int nt = 0; nt < 4; nt++) mma_bf16(acc[mt][nt], af, b[nt][2 * s], b[nt][2 * s + 1]);
        }
}

template <bool XB>
__global__ void __launch_bounds__(ST_WARPS * 32) bsmm_stream_kernel(const __grid_constant__ CUtensorMap xmap, StArgs p) {
    using C = St<XB>;
    extern __shared__ unsigned char smem_raw[];
    __shared__ int s_last;
    unsigned char *smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
    uint64_t *bars = (uint64_t *)(smem + C::RING);
    const int tid = threadIdx.x, wp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    if (tid < ST_WARPS * ST_S) mbar_init(bars + tid, 1);
    mbar_init_fence();
    const MmPiece pc = p.pieces[blockIdx.x];
    const int n0 = blockIdx.y * ST_ROWS, cnt = pc.end - pc.beg;
    const int nk = cnt > wp ? (cnt - wp + ST_WARPS - 1) / ST_WARPS : 0;  // this warp's entries (<= 32)
    // Lane l holds the block column of the warp's entry l: no copy waits on a shared-memory round.
    const int my_col = lane < nk ? p.col_idx[pc.beg + wp + lane * ST_WARPS] : 0;
    __syncthreads();
    pdl_wait();  // x, and the weights, may come from the kernel before

    unsigned char *ring = smem + (size_t)wp * ST_S * C::STAGE;
    uint64_t *bar = bars + wp * ST_S;
    const uint64_t pol = l2_evict_first();
    auto slot = [&](int k) { return ring + k % ST_S * C::STAGE; };  // activations, then block
    auto load = [&](int k) {  // all lanes call it (the column comes from lane k)
        const int col = __shfl_sync(0xffffffffu, my_col, k);
        if (lane) return;
        mbar_expect(bar + k % ST_S, C::STAGE);
        bulk_load_hint(slot(k) + C::X, p.w + (long)(pc.beg + wp + k * ST_WARPS) * 1024, ST_W, bar + k % ST_S, pol);
        tensor_load_2d(slot(k), &xmap, col * 32, n0, bar + k % ST_S);
    };
    for (int k = 0; k < nk && k < ST_S; k++) load(k);

    float acc[2][4][4] = {};
    for (int k = 0; k < nk; k++) {
        mbar_wait(bar + k % ST_S, (k / ST_S) & 1);
        stream_product<XB>(acc, slot(k), (const uint4 *)(slot(k) + C::X), g, t);
        __syncwarp();  // the mmas have consumed every lane's reads of the slot: refill it
        if (k + ST_S < nk) load(k + ST_S);
    }

    __syncthreads();  // every copy has landed (each warp waited for all of its own)
    float *red = (float *)smem;  // [warp][row][32]
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                red[(wp * ST_ROWS + mt * 16 + g + c / 2 * 8) * 32 + nt * 8 + 2 * t + c % 2] = acc[mt][nt][c];
    __syncthreads();
    tile_finish<32, ST_WARPS>(red, ST_ROWS, pc, p.part, p.count, &s_last, p.out, p.ld_out, n0, p.N, p.acc);
}

// x [N, K] row-major, in boxes of 32 x 32: fp32 with the 128-byte rows swizzled, or bf16
// with the 64-byte rows as they are.
static CUtensorMap x_boxes(const void *x, bool xb, int N, int K) {
    return tensor_map_2d(x, xb ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, N, K, K, 32, ST_ROWS,
                         xb ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B);
}

bool bsmm_stream_takes(const BsMat *w, int N) { return w->bs == 32 && N <= ST_MAX_N; }

template <bool XB>
static void stream_launch(MmOut y, const void *x, const BsMat *w, const bf16 *wb, int N, int acc) {
    const DevBsMat *d = (const DevBsMat *)w->dev;
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(bsmm_stream_kernel<XB>, St<XB>::SMEM), ready = true;
    const int gy = cdiv(N, ST_ROWS);
    StArgs a = {y, wb, (const MmPiece *)d->fwd_pieces, d->col_idx,
                (float *)cuda_scratch(SCRATCH_PART, sizeof(float) * (size_t)d->fwd_npieces * gy * ST_ROWS * 32),
                (int *)cuda_scratch(SCRATCH_COUNT, sizeof(int) * (size_t)w->nbr * gy), N, w->rows, acc};
    // Programmatically dependent on the kernel before: this one's CTAs are placed while that
    // one's last ones finish (pdl_wait holds them until its results are visible).
    launch_attr(attr_pdl(true), bsmm_stream_kernel<XB>, dim3(d->fwd_npieces, gy), dim3(ST_WARPS * 32), St<XB>::SMEM,
                g_cuda.stream, x_boxes(x, XB, N, w->cols), a);
}

void bsmm_stream_fwd(real *y, const real *x, const BsMat *w, const bf16 *wb, int N, int acc) {
    if (const bf16 *xb = twin_in(x, (size_t)N * w->cols)) stream_launch<true>({y, 0}, xb, w, wb, N, acc);
    else stream_launch<false>({y, 0}, x, w, wb, N, acc);
}
void bsmm_stream_fwd_bf16(MmOut y, const bf16 *xb, const BsMat *w, const bf16 *wb, int N, int acc) {
    stream_launch<true>(y, xb, w, wb, N, acc);
}
