// bsmm_bulk.cu: bsmm.cu's products (fwd, bwd_data) for bf16 block-32 matrices with every copy
// on the bulk tensor copy engine: one thread issues a stage's activation boxes (from a tensor
// map over the input) and blocks onto one mbarrier, in the 64-byte swizzle tile_mma reads, so
// no thread spends instructions on copies and no row is padded. It beats bsmm.cu's cp.async
// kernel on the per-step path's products, the kernel table and the mlstm's step (PERF_HISTORY.md).
#include "bsmm/bsmm_tile.cuh"
#include "bsmm/bulk.cuh"

// The same groups, entries and order as bsmm_mm_kernel (so the same bits): group g of stage st
// takes entry st * KG + g. One thread issues a stage's KG activation boxes (TM rows x 32, from
// a tensor map over the input) and KG blocks onto one mbarrier, in the 64-byte swizzle.
// Ring 3 deep: 4 sped the dense mlstm but slowed the per-step path's products at 128 rows.
template <int TM>
struct Mb {
    static constexpr int NT = TM >= 64 ? 256 : 128, KG = NT / TM, S = 3;
    static constexpr int A_ELEMS = TM * 32, W_ELEMS = 32 * 32;
    static constexpr size_t STAGE = (size_t)KG * (A_ELEMS + W_ELEMS) * sizeof(bf16);
    static constexpr size_t RING = S * STAGE, RED = (size_t)NT * 32 * sizeof(float);
    static constexpr size_t SMEM = 1024 + (RING > RED ? RING : RED) + S * sizeof(uint64_t) + 2 * MM_LIST * sizeof(int);
    static_assert(STAGE % 1024 == 0, "swizzled boxes on 512-byte boundaries");
};

template <int TM, bool FWD>
__global__ void __launch_bounds__(Mb<TM>::NT) bsmm_bulk_kernel(const __grid_constant__ CUtensorMap amap,
                                                               const __grid_constant__ CUtensorMap wmap, MmArgs p) {
    using C = Mb<TM>;
    extern __shared__ unsigned char smem_raw[];
    __shared__ int s_last;
    unsigned char *smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
    uint64_t *full = (uint64_t *)(smem + (C::RING > C::RED ? C::RING : C::RED));
    int *s_idx = (int *)(full + C::S), *s_blk = s_idx + MM_LIST;
    const int tid = threadIdx.x, g = tid / TM, lt = tid % TM;
    const MmPiece pc = p.pieces[blockIdx.x];
    const int n0 = blockIdx.y * TM, cnt = pc.end - pc.beg, nst = (cnt + C::KG - 1) / C::KG;
    for (int i = tid; i < cnt; i += C::NT) {
        s_idx[i] = p.idx[pc.beg + i];
        s_blk[i] = p.blk ? p.blk[pc.beg + i] : pc.beg + i;
    }
    mbar_init_all(full, C::S);
    pdl_enter();  // the input and the weights may come from the op before
    auto a_at = [&](int st, int gg) { return (bf16 *)(smem + st % C::S * C::STAGE) + gg * C::A_ELEMS; };
    auto w_at = [&](int st, int gg) { return (bf16 *)(smem + st % C::S * C::STAGE) + C::KG * C::A_ELEMS + gg * C::W_ELEMS; };
    auto issue = [&](int st) {
        uint64_t *b = full + st % C::S;
        const int n = min(C::KG, cnt - st * C::KG);
        mbar_expect(b, (uint32_t)(n * (C::A_ELEMS + C::W_ELEMS) * sizeof(bf16)));
        for (int gg = 0; gg < n; gg++) {
            const int pos = st * C::KG + gg;
            tensor_load_2d(a_at(st, gg), &amap, s_idx[pos] * 32, n0, b);
            tensor_load_2d(w_at(st, gg), &wmap, 0, s_blk[pos] * 32, b);
        }
    };
    if (tid == 0)
        for (int st = 0; st < C::S - 1 && st < nst; st++) issue(st);
    float acc[32] = {};
    ring_walk<C::S>(full, nst, issue, [&](int st) {
        if (st * C::KG + g < cnt)  // nothing was copied for a group past the list's end
            tile_mma<32, 32, false, !FWD, 1, true>(reinterpret_cast<float (&)[1][32]>(acc), a_at(st, g), 32, w_at(st, g), 32, 0, lt);
    });
    __syncthreads();  // every copy has landed and been read: the ring becomes red
    float *red = (float *)smem;
    acc_store<32>(red, acc, g, TM, lt);
    __syncthreads();
    tile_finish<32, C::KG>(red, TM, pc, p.part, p.count, &s_last, p.out, p.ld_out, n0, p.N, p.acc);
}

template <int TM, bool FWD>
static void launch(MmArgs a, int npieces, int nob, long nnzb) {
    using C = Mb<TM>;
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(bsmm_bulk_kernel<TM, FWD>, C::SMEM), ready = true;
    int gy = cdiv(a.N, TM);
    a.part = (float *)cuda_scratch(SCRATCH_PART, sizeof(float) * (size_t)npieces * gy * TM * 32);
    a.count = (int *)cuda_scratch(SCRATCH_COUNT, sizeof(int) * (size_t)nob * gy);
    const CUtensorMap am = tensor_map_2d(a.in, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a.N, a.ld_in, a.ld_in, 32, TM,
                                         CU_TENSOR_MAP_SWIZZLE_64B);
    const CUtensorMap wm = tensor_map_blocks(a.w, nnzb);
    launch_pdl(bsmm_bulk_kernel<TM, FWD>, dim3(npieces, gy), C::NT, C::SMEM, am, wm, a);
}

void bsmm_bulk_launch(const MmArgs &a, int npieces, int nob, long nnzb, int tm, bool fwd) {
    switch (tm * 2 + fwd) {
    case 64: return launch<32, false>(a, npieces, nob, nnzb);
    case 65: return launch<32, true>(a, npieces, nob, nnzb);
    case 128: return launch<64, false>(a, npieces, nob, nnzb);
    case 129: return launch<64, true>(a, npieces, nob, nnzb);
    case 256: return launch<128, false>(a, npieces, nob, nnzb);
    default: return launch<128, true>(a, npieces, nob, nnzb);
    }
}
