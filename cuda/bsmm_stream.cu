// bsmm_stream.cu: the bf16 forward y (=|+=) x W^T of a block-32 matrix for few rows of x
// (N <= ST_MAX_N). Each stored block is read once and meets at most ST_ROWS rows, so the op
// is a stream of weights from DRAM and the kernel's one job is to keep DRAM busy. CPU twin:
// src/bsmm_cpu.c; bsmm.cu's general kernel takes every other shape.
//   - Every copy is one instruction of the bulk copy engine (bulk.cuh), where cp.async takes
//     128 per 2 KB: a stored block is one contiguous run; the fp32 activations it meets (32
//     rows x 32 columns of x) are one box of a tensor map, rounded to bf16 as fragments are
//     read, so no conversion pass runs before the product.
//   - A CTA is ST_WARPS warps on one piece of a block row's list (common.cuh); warp w takes
//     entries w, w + ST_WARPS, ... through its own ring of ST_S stages, so no warp waits for
//     another until the end, where their tiles are summed in warp order (same bits every run).
//   - Bank conflicts: a thread reads 16 or 32 bytes of a row (k = 8t..8t+7, t = lane % 4) and
//     the mma's k order is permuted alike for both operands. The blocks' 64-byte rows arrive
//     unpadded, and 8 lanes then read 128 contiguous bytes; the activations' 128-byte rows
//     arrive swizzled (16-byte chunk c of row r at c ^ r % 8), which spreads each read too.
#include <cudaTypedefs.h>
#include "bsmm_tile.cuh"
#include "bulk.cuh"

#define ST_WARPS 4
#ifndef ST_S
#define ST_S 3          // ring depth per warp (3 CTAs per SM; the grid is then about one round)
#endif
#define ST_ROWS 32      // rows of x per CTA (gridDim.y covers N)
#define ST_X 4096       // bytes of a stage's activations: 32 rows x 32 fp32
#define ST_W 2048       // bytes of a 32 x 32 bf16 block
#ifndef ST_MAX_N
#define ST_MAX_N 32
#endif

constexpr size_t ST_STAGE = ST_X + ST_W;  // a multiple of the swizzle's 1024-byte period
constexpr size_t ST_RING = (size_t)ST_WARPS * ST_S * ST_STAGE;
constexpr size_t ST_SMEM = 1024 + ST_RING + ST_WARPS * ST_S * sizeof(uint64_t);  // 1024: alignment
static_assert(ST_STAGE % 1024 == 0, "swizzled boxes start on 1024-byte boundaries");
static_assert(ST_RING >= (size_t)ST_WARPS * ST_ROWS * 32 * sizeof(float), "the warps' tiles fit in the ring");

typedef struct {
    real *out;
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

// acc[mt][nt] += rows 16 mt.. of the activations' box times columns 8 nt.. of the block's
// transpose, over the block's 32 k: thread (g, t) holds k = 8t..8t+7 of its rows, words 2s
// and 2s+1 of them standing for the mma's k = 2t and 2t+8 of k-step s (alike for A and B).
__device__ inline void stream_product(float (&acc)[2][4][4], const float4 *X, const uint4 *W, int g, int t) {
    uint32_t a[2][2][4], b[4][4];
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = mt * 16 + h * 8 + g;
            const float4 u = X[r * 8 + ((2 * t) ^ (r & 7))], v = X[r * 8 + ((2 * t + 1) ^ (r & 7))];
            a[mt][h][0] = bf2(u.x, u.y), a[mt][h][1] = bf2(u.z, u.w);
            a[mt][h][2] = bf2(v.x, v.y), a[mt][h][3] = bf2(v.z, v.w);
        }
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

__global__ void __launch_bounds__(ST_WARPS * 32) bsmm_stream_kernel(const __grid_constant__ CUtensorMap xmap, StArgs p) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ int s_last;
    unsigned char *smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
    uint64_t *bars = (uint64_t *)(smem + ST_RING);
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

    unsigned char *ring = smem + (size_t)wp * ST_S * ST_STAGE;
    uint64_t *bar = bars + wp * ST_S;
    const uint64_t pol = l2_evict_first();
    auto slot = [&](int k) { return ring + k % ST_S * ST_STAGE; };  // activations, then block
    auto load = [&](int k) {  // all lanes call it (the column comes from lane k)
        const int col = __shfl_sync(0xffffffffu, my_col, k);
        if (lane) return;
        mbar_expect(bar + k % ST_S, ST_X + ST_W);
        bulk_load_hint(slot(k) + ST_X, p.w + (long)(pc.beg + wp + k * ST_WARPS) * 1024, ST_W, bar + k % ST_S, pol);
        tensor_load_2d(slot(k), &xmap, col * 32, n0, bar + k % ST_S);
    };
    for (int k = 0; k < nk && k < ST_S; k++) load(k);

    float acc[2][4][4] = {};
    for (int k = 0; k < nk; k++) {
        mbar_wait(bar + k % ST_S, (k / ST_S) & 1);
        stream_product(acc, (const float4 *)slot(k), (const uint4 *)(slot(k) + ST_X), g, t);
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

// The driver's tensor-map encoder, looked up once (the program links only the runtime).
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    if (!fn) {
        void *f = NULL;
        cudaDriverEntryPointQueryResult q;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !f)
            die("cuTensorMapEncodeTiled not found in the CUDA driver (needs driver 12.0 or newer)");
        fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    return fn;
}

// x [N, K] fp32, row-major, in boxes of 32 x 32 whose 128-byte rows land swizzled.
static CUtensorMap x_boxes(const real *x, int N, int K) {
    CUtensorMap m;
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)N}, strides[1] = {(cuuint64_t)K * sizeof(real)};
    const cuuint32_t box[2] = {32, ST_ROWS}, estride[2] = {1, 1};
    CUresult r = tensor_map_encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)x, dims, strides, box, estride,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) die("internal: cuTensorMapEncodeTiled failed (%d) for x [%d, %d] at %p", (int)r, N, K, x);
    return m;
}

bool bsmm_stream_takes(const BsMat *w, int N) { return w->bs == 32 && N <= ST_MAX_N; }

void bsmm_stream_fwd(real *y, const real *x, const BsMat *w, const bf16 *wb, int N, int acc) {
    const DevBsMat *d = (const DevBsMat *)w->dev;
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) {
        CUDA_CHECK(cudaFuncSetAttribute(bsmm_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ST_SMEM));
        ready = true;
    }
    const int gy = cdiv(N, ST_ROWS);
    StArgs a = {y, wb, (const MmPiece *)d->fwd_pieces, d->col_idx,
                (float *)cuda_scratch(SCRATCH_PART, sizeof(float) * (size_t)d->fwd_npieces * gy * ST_ROWS * 32),
                (int *)cuda_scratch(SCRATCH_COUNT, sizeof(int) * (size_t)w->nbr * gy), N, w->rows, acc};
    // Programmatically dependent on the kernel before: this one's CTAs are placed while that
    // one's last ones finish (pdl_wait holds them until its results are visible).
    launch_attr(attr_pdl(true), bsmm_stream_kernel, dim3(d->fwd_npieces, gy), dim3(ST_WARPS * 32), ST_SMEM, g_cuda.stream, x_boxes(x, N, w->cols), a);
}
