// bsmm_tile.cuh: the pieces the block-sparse kernels (bsmm.cu) are made of: asynchronous
// 16-byte global->shared copies (cp.async) and one thread group's tile product
// acc[TM x BS] += A[TM x K] B[K x BS] from shared memory on the tensor cores: bf16 (mma.sync
// m16n8k16) or fp32 as 3xTF32 (m16n8k8), fp32 accumulation in both.
//
// A group is TM consecutive threads (TM/32 whole warps). Each thread ends up with BS
// accumulators; acc_coord says which output element acc[e] is.
// Shared layouts: "k-major" means stored [k][m] (or [k][n]), else [m][k] (or [n][k]).
#pragma once
#include <stdint.h>
#include "bsmm/bsmat_dev.cuh"

constexpr int cdiv_c(int a, int b) { return (a + b - 1) / b; }

// Shared-memory row stride (elements) for rows of L elements: bf16 rows an odd number of
// 16-byte units apart (ldmatrix reads 8 rows at once without bank conflicts); fp32 rows,
// read as single floats by tile_mma_tf32x3, 4 floats of padding where a lane group reads 8
// rows at 4 columns (m- or n-major: 4g + t), 8 where it reads 4 rows at 8 (k-major: 8t + g).
template <typename T, bool KMAJOR = false>
__host__ __device__ constexpr int sm_ld(int L) {
    return sizeof(T) == 2 ? ((L / 8) % 2 ? L : L + 8) : KMAJOR ? L + 8 : L + 4;
}

// ---- asynchronous global->shared copies: 16 bytes, zero-filled when !valid ----
__device__ inline void cp_async16(void *dst, const void *src, bool valid) {
    uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}
__device__ inline void cp_commit() { asm volatile("cp.async.commit_group;\n"); }
// Waits until at most N of this thread's groups are still in flight.
template <int N>
__device__ inline void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ---- bf16 tensor cores ----
template <bool TRANS>
__device__ inline void ldsm_x4(uint32_t (&r)[4], const bf16 *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
template <bool TRANS>
__device__ inline void ldsm_x2(uint32_t (&r)[2], const bf16 *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(a));
}
__device__ inline void mma_bf16(float *c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Element (row, col) of a shared bf16 operand, col a multiple of 8: rows ld apart, or (SW) the
// bulk tensor copy's 64-byte swizzle, rows of 32 unpadded with 16-byte chunk c of row r at
// c ^ (r / 2) % 4, which ldmatrix reads free of bank conflicts.
template <bool SW>
__device__ inline const bf16 *sm_at(const bf16 *M, int ld, int row, int col) {
    return SW ? M + row * 32 + ((col >> 3) ^ ((row >> 1) & 3)) * 8 : M + row * ld + col;
}

// Each warp owns 32 rows (two m16 tiles) and all BS columns (BS/8 n8 tiles) of each of NB
// products that share A (B operand q starts at B + q * bstep): A's fragments are read once.
// acc[q][(mt*NT + nt)*4 + c] is row 16mt + g + 8(c/2), column 8nt + 2t + c%2 of the warp's rows
// (g = lane/4, t = lane%4). SW: both operands in sm_at's swizzled layout (32 wide, lda and ldb unused).
template <int BS, int K, bool AK, bool BK, int NB, bool SW = false>
__device__ inline void tile_mma(float (&acc)[NB][BS], const bf16 *A, int lda, const bf16 *B, int ldb, int bstep, int lt) {
    constexpr int NT = BS / 8;
    const int m_base = (lt / 32) * 32, lane = lt % 32, mat = lane >> 3, r = lane & 7;
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 16) {
        uint32_t a[2][4];
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
            int m0 = m_base + mt * 16;
            const bf16 *p = AK ? sm_at<SW>(A, lda, k0 + r + (mat >> 1) * 8, m0 + (mat & 1) * 8)
                               : sm_at<SW>(A, lda, m0 + r + (mat & 1) * 8, k0 + (mat >> 1) * 8);
            ldsm_x4<AK>(a[mt], p);
        }
#pragma unroll
        for (int q = 0; q < NB; q++) {
            const bf16 *Bq = B + q * bstep;
            uint32_t b[NT][2];
            if constexpr (NT == 1) {
                uint32_t t2[2];
                const int m2 = mat & 1;
                ldsm_x2<BK>(t2, BK ? sm_at<SW>(Bq, ldb, k0 + r + m2 * 8, 0) : sm_at<SW>(Bq, ldb, r, k0 + m2 * 8));
                b[0][0] = t2[0];
                b[0][1] = t2[1];
            } else {
#pragma unroll
                for (int np = 0; np < NT / 2; np++) {
                    uint32_t t4[4];
                    const int n0 = np * 16;
                    ldsm_x4<BK>(t4, BK ? sm_at<SW>(Bq, ldb, k0 + r + (mat & 1) * 8, n0 + (mat >> 1) * 8)
                                       : sm_at<SW>(Bq, ldb, n0 + r + (mat >> 1) * 8, k0 + (mat & 1) * 8));
                    b[2 * np][0] = t4[0];
                    b[2 * np][1] = t4[1];
                    b[2 * np + 1][0] = t4[2];
                    b[2 * np + 1][1] = t4[3];
                }
            }
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++) mma_bf16(acc[q] + (mt * NT + nt) * 4, a[mt], b[nt][0], b[nt][1]);
        }
    }
}

// ---- fp32 on the tensor cores: 3xTF32 ----
// Each fp32 operand x is split into big = x rounded to TF32 and small = x - big truncated to
// TF32; the product is big*big + big*small + small*big (mma.sync m16n8k8 .tf32, fp32
// accumulate). The dropped small*small term and small's truncation are below 2^-21 of the
// product, so the result keeps fp32-level error (not TF32's 2^-11) at tensor-core speed, well
// above the FFMA tile it replaced. The split is integer arithmetic on the bits (round: add
// half an ulp, clear the 13 low bits), as cvt.rna.tf32.f32 is slow; small is truncated (an
// and, not an add and an and), faster and with the same error against the CPU.
__device__ inline void tf32_split(float x, uint32_t &big, uint32_t &small) {
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = __float_as_uint(x - __uint_as_float(big)) & 0xffffe000u;
}
__device__ inline void mma_tf32(float *c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The warp tile of tile_mma (32 rows, all BS columns, NB products sharing A, the same
// accumulator layout), k in steps of 8. Fragments are read as single floats: A's a0..a3 are
// (g, t), (g+8, t), (g, t+4), (g+8, t+4) of the m16 x k8 tile, B's b0, b1 are (k t, n g), (k t+4, n g).
template <int BS, int K, bool AK, bool BK, int NB>
__device__ inline void tile_mma_tf32x3(float (&acc)[NB][BS], const float *A, int lda, const float *B, int ldb, int bstep, int lt) {
    constexpr int NT = BS / 8;
    const int m_base = (lt / 32) * 32, lane = lt % 32, g = lane >> 2, t = lane & 3;
    auto at = [](const float *M, int ld, bool kmajor, int row, int k) { return kmajor ? M[k * ld + row] : M[row * ld + k]; };
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 8) {
        uint32_t ab[2][4], as[2][4];
#pragma unroll
        for (int mt = 0; mt < 2; mt++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                tf32_split(at(A, lda, AK, m_base + mt * 16 + g + (c & 1) * 8, k0 + t + (c >> 1) * 4), ab[mt][c], as[mt][c]);
#pragma unroll
        for (int q = 0; q < NB; q++) {
            uint32_t bb[NT][2], bsm[NT][2];
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int c = 0; c < 2; c++) tf32_split(at(B + q * bstep, ldb, BK, nt * 8 + g, k0 + t + c * 4), bb[nt][c], bsm[nt][c]);
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    float *c = acc[q] + (mt * NT + nt) * 4;
                    mma_tf32(c, as[mt], bb[nt][0], bb[nt][1]);  // the small terms first
                    mma_tf32(c, ab[mt], bsm[nt][0], bsm[nt][1]);
                    mma_tf32(c, ab[mt], bb[nt][0], bb[nt][1]);
                }
        }
    }
}

// One call for both precisions: T = bf16 runs tile_mma, T = float tile_mma_tf32x3. The NB form
// multiplies one A by NB operands B, bstep elements apart, into acc[NB].
template <int BS, int K, bool AK, bool BK, int NB>
__device__ inline void tile_product(float (&acc)[NB][BS], const bf16 *A, int lda, const bf16 *B, int ldb, int bstep, int lt) {
    tile_mma<BS, K, AK, BK, NB>(acc, A, lda, B, ldb, bstep, lt);
}
template <int BS, int K, bool AK, bool BK, int NB>
__device__ inline void tile_product(float (&acc)[NB][BS], const float *A, int lda, const float *B, int ldb, int bstep, int lt) {
    tile_mma_tf32x3<BS, K, AK, BK, NB>(acc, A, lda, B, ldb, bstep, lt);
}
template <int BS, int K, bool AK, bool BK, typename T>
__device__ inline void tile_product(float (&acc)[BS], const T *A, int lda, const T *B, int ldb, int lt) {
    tile_product<BS, K, AK, BK, 1>(reinterpret_cast<float (&)[1][BS]>(acc), A, lda, B, ldb, 0, lt);
}

// Row and column (within the group's TM x BS tile) of accumulator e: both tile products
// share mma.sync's accumulator layout.
template <int BS>
__device__ inline void acc_coord(int e, int lt, int &row, int &col) {
    constexpr int NT = BS / 8;
    int lane = lt % 32, mt = e / (NT * 4), nt = (e / 4) % NT, c = e % 4;
    row = (lt / 32) * 32 + mt * 16 + (lane >> 2) + (c >> 1) * 8;
    col = nt * 8 + 2 * (lane & 3) + (c & 1);
}

// Where a CTA's tile lies: piece `piece` of the work list, row tile `ty` of `ntiles`, taken
// from its grid (tile_here).
struct TileAt {
    int piece, ty, ntiles;
};
__device__ inline TileAt tile_here() { return {(int)blockIdx.x, (int)blockIdx.y, (int)gridDim.y}; }

// Group g's accumulators into its TM x BS tile of red ([group][row][column]).
template <int BS>
__device__ inline void acc_store(float *red, const float (&acc)[BS], int g, int TM, int lt) {
#pragma unroll
    for (int e = 0; e < BS; e++) {
        int row, col;
        acc_coord<BS>(e, lt, row, col);
        red[(g * TM + row) * BS + col] = acc[e];
    }
}

// A list cut into several pieces (MmPiece) is finished by the CTA that completes last: each
// piece publishes its partial tile (R floats of shared `red`, complete before the call), and
// the last adds all of them in piece order into red, so the result does not depend on which
// CTA ran when. Returns whether this CTA goes on to the epilogue (red is then the sum).
__device__ inline bool pieces_done(float *red, int R, const MmPiece &pc, TileAt at, float *part, int *count, int *s_last) {
    if (pc.nparts == 1) return true;
    const int R4 = R / 4;  // R is a multiple of 4: float4 copies, unrolled so several loads fly at once
    const long stride4 = (long)at.ntiles * R4;
    float4 *mine = (float4 *)part + ((long)at.piece * at.ntiles + at.ty) * R4, *red4 = (float4 *)red;
#pragma unroll 4
    for (int i = threadIdx.x; i < R4; i += blockDim.x) __stcg(mine + i, red4[i]);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        int *c = count + (long)pc.ob * at.ntiles + at.ty;
        *s_last = atomicAdd(c, 1) == pc.nparts - 1;
        if (*s_last) *c = 0;  // ready for the next call
    }
    __syncthreads();
    if (!*s_last) return false;
    __threadfence();
    const float4 *first = (const float4 *)part + ((long)(at.piece - pc.rank) * at.ntiles + at.ty) * R4;
#pragma unroll 4
    for (int i = threadIdx.x; i < R4; i += blockDim.x) {
        float4 s = __ldcg(first + i);
        for (int r = 1; r < pc.nparts; r++) {
            float4 v = __ldcg(first + r * stride4 + i);
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
        red4[i] = s;
    }
    return true;
}

// A product's output: fp32, or bf16 (bf: the binding's, for callers that hold their
// activations in bf16, so that no conversion pass follows the product). A bf16 element is the
// fp32 sum rounded once; += adds the sum to the stored value widened to fp32, then rounds.
struct MmOut {
    void *p;
    int bf;
};
__device__ inline void out_put(MmOut o, long i, float v, int acc) {
    if (o.bf) {
        bf16 *b = (bf16 *)o.p + i;
        *b = __float2bfloat16_rn(acc ? __bfloat162float(*b) + v : v);
    } else {
        real *f = (real *)o.p + i;
        *f = acc ? *f + v : v;
    }
}

// The end of a block-sparse product's CTA (bsmm.cu's and bsmm_stream.cu's kernels): red holds
// G partial tiles of rows x BS (one per thread group or warp, written before a barrier); they
// are summed in group order, a cut list is finished by its last piece (pieces_done), and the
// tile's rows below N go to out (=|+=) along rows, coalesced.
template <int BS, int G>
__device__ inline void tile_finish(float *red, int rows, const MmPiece &pc, float *part, int *count, int *s_last, MmOut out,
                                   long ld_out, int n0, int N, int acc) {
    const int R = rows * BS;
    for (int i = threadIdx.x; i < R; i += blockDim.x) {
        float s = red[i];
#pragma unroll
        for (int g = 1; g < G; g++) s += red[g * R + i];
        red[i] = s;  // only this thread reads element i of every group
    }
    __syncthreads();  // pieces_done reads red in another thread order
    if (!pieces_done(red, R, pc, tile_here(), part, count, s_last)) return;
    __syncthreads();
    const int valid = min(rows, N - n0);
    for (int i = threadIdx.x; i < valid * BS; i += blockDim.x)
        out_put(out, (long)(n0 + i / BS) * ld_out + (long)pc.ob * BS + i % BS, red[i], acc);
}

// ---- bsmm.cu's products (fwd, bwd_data): their arguments, for both copy forms ----
#define MM_LIST 256
static_assert(MM_LIST >= 2048 / 8, "a piece's indices (mm_piece_len) fit in shared memory");
typedef struct {
    MmOut out;
    const void *in;               // activations: bf16 or float, like the blocks
    const void *w;
    const MmPiece *pieces;        // one per blockIdx.x
    const int *idx, *blk;         // entry p: input slab idx[p], block blk[p] (NULL: p)
    float *part;                  // [piece][gridDim.y][TM * BS] partial tiles of cut columns
    int *count;                   // [ob][gridDim.y] pieces finished (back to 0 when done)
    int N, ld_in, ld_out, acc;
} MmArgs;
// bf16 block 32 on the bulk copy engine (bsmm_bulk.cu).
void bsmm_bulk_launch(const MmArgs &a, int npieces, int nob, long nnzb, int tm, bool fwd);
// The products on operands already in the kernel's type (bf16 when bf), into an fp32 or
// bf16 output (the binding, src/api).
void bsmm_fwd_typed(MmOut y, const void *x, const BsMat *w, const void *vals, int N, int acc, int bf);
void bsmm_bwd_data_typed(MmOut dx, const void *dy, const BsMat *w, const void *vals, int N, int acc, int bf);
// bsmm_stream_fwd with x already in bf16.
void bsmm_stream_fwd_bf16(MmOut y, const bf16 *xb, const BsMat *w, const bf16 *wb, int N, int acc);

// ---- host: the launchers' checks ----
static inline const DevBsMat *dev_of(const BsMat *w) {
    if (!w->dev) die("internal: block-sparse matrix used on cuda before bsmat_upload");
    return (const DevBsMat *)w->dev;
}

static inline void check_aligned(const void *p, const char *what) {
    if ((uintptr_t)p % 16) die("internal: bsmm %s pointer %p is not 16-byte aligned", what, p);
}
