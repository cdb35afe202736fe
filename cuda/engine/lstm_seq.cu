// lstm_seq.cu: the recurrent engine's step kernel (lstm_seq.cuh): one launch runs one time
// step of a layer, a CTA per tile (lstm_seq_tile.cuh); a window's launches replay as a CUDA
// graph (lstm_seq_host.cu).
#include "engine/lstm_seq_bulk.cuh"

template <typename T, int TM, bool FWD, int RING>
__global__ void __launch_bounds__(Sq<T, TM, FWD, RING>::NT, Sq<T, TM, FWD, RING>::MINB) seq_step_kernel(SeqStep a) {
    extern __shared__ __align__(16) unsigned char smem[];
    seq_tile<T, TM, FWD, RING>(a, tile_here(), smem);
}

template <int TM>
__global__ void __launch_bounds__(Sb<TM>::NT, Sb<TM>::MINB)
    seq_step_bulk_kernel(const __grid_constant__ CUtensorMap dzmap, const __grid_constant__ CUtensorMap wmap, SeqStep a) {
    extern __shared__ unsigned char smem_raw[];
    seq_tile_bulk_bwd<TM>(a, tile_here(), smem_raw, &dzmap, &wmap);
}

SeqMaps seq_maps(const bf16 *dz, int T, int B, int H, const bf16 *w, long nnzb) {
    SeqMaps m;
    m.dz = tensor_map_3d_bf16(dz, T, B, 4 * H, SQ_BS, seq_tm(B), CU_TENSOR_MAP_SWIZZLE_64B);
    m.w = tensor_map_blocks(w, nnzb);
    return m;
}

// Rows per CTA: the batch in one row tile where it can. The backward at 128 rows holds 4 dz
// slabs per stage (a 153 KB ring, one CTA per SM), yet it is bound by L2 traffic, and one
// tile reads each W_h block once where two tiles of 64 read it twice.
int seq_tm(int B) { return B <= 32 ? 32 : B <= 64 ? 64 : 128; }

// With more than 64 rows each step is launched programmatically dependent on the one before
// (pdl_wait): its CTAs start on the SMs the previous step's CTAs leave and fetch their first
// W_h blocks meanwhile. It gains at 128 rows, nothing at 64, and costs at 32, where a step's
// small CTAs, placed early on whichever SMs are free, likely crowd some SMs and leave others
// idle.
template <typename T, int TM, bool FWD, int RING>
static void launch(const SeqStep &a, dim3 grid, cudaStream_t stream) {
    using C = Sq<T, TM, FWD, RING>;
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(seq_step_kernel<T, TM, FWD, RING>, C::SMEM), ready = true;
    launch_attr(attr_pdl(a.B > 64), seq_step_kernel<T, TM, FWD, RING>, grid, dim3(C::NT), C::SMEM, stream, a);
}

// The forward's ring (Sq): deep where it still runs two CTAs per SM, or where the shallow
// ring's grid fits in one round; else shallow. ring (SeqPlan.ring) overrides it, so the tests
// run either ring on any shape.
template <typename T, int TM>
static bool deep_ring(long ctas, int ring) {
    if (ring) return ring == RING_DEEP + 1;
    return Sq<T, TM, true, RING_DEEP>::MINB >= 2 || ctas <= (long)Sq<T, TM, true>::MINB * g_cuda.nsm;
}

template <int TM>
static void launch_bulk(const SeqStep &a, const SeqMaps &m, dim3 grid, cudaStream_t stream) {
    using C = Sb<TM>;
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(seq_step_bulk_kernel<TM>, C::SMEM), ready = true;
    launch_attr(attr_pdl(a.B > 64), seq_step_bulk_kernel<TM>, grid, dim3(C::NT), C::SMEM, stream, m.dz, m.w, a);
}

int seq_step_ctas_per_sm(bool bf, bool fwd, int B) {
    return with_tm(B, [&](auto tm) {
        constexpr int TM = decltype(tm)::value;
        if (!bf) return fwd ? Sq<float, TM, true>::MINB : Sq<float, TM, false>::MINB;
        return fwd ? Sq<bf16, TM, true>::MINB : Sb<TM>::MINB;
    });
}

template <bool BF, bool FWD>
void seq_step_launch(const SeqStep &a, int npieces, cudaStream_t stream, const SeqMaps *maps, int ring) {
    typedef typename std::conditional<BF, bf16, float>::type T;
    with_tm(a.B, [&](auto tm) {
        constexpr int TM = decltype(tm)::value;
        const dim3 grid(npieces, cdiv(a.B, TM));
        if constexpr (BF && !FWD) {
            launch_bulk<TM>(a, *maps, grid, stream);
        } else {
            if constexpr (FWD)
                if (deep_ring<T, TM>((long)grid.x * grid.y, ring)) return launch<T, TM, FWD, RING_DEEP>(a, grid, stream);
            launch<T, TM, FWD, RING_SHALLOW>(a, grid, stream);
        }
    });
}

template void seq_step_launch<false, false>(const SeqStep &, int, cudaStream_t, const SeqMaps *, int);
template void seq_step_launch<false, true>(const SeqStep &, int, cudaStream_t, const SeqMaps *, int);
template void seq_step_launch<true, false>(const SeqStep &, int, cudaStream_t, const SeqMaps *, int);
template void seq_step_launch<true, true>(const SeqStep &, int, cudaStream_t, const SeqMaps *, int);
