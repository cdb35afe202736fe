// lstm_seq_bulk.cuh: the backward step tile of lstm_seq_tile.cuh in bf16 with every copy on
// the bulk tensor copy engine (the bf16 backward step kernel, lstm_seq.cu). Per list entry one
// thread issues the 4 gates' dz_{t+1} boxes and the 4 gate blocks of W_h onto one mbarrier of
// the stage, in the copy engine's 64-byte swizzle (bsmm_tile.cuh sm_at): no padding, so a
// stage is a fifth smaller than the cp.async ring's and the ring one deeper in about the same
// shared memory, and no thread spends instructions on copies. The same products in the same order
// as seq_tile, so the same bits; faster than the cp.async ring, most at small batches. The
// forward has one slab an entry and was slower this way, as was a refill by the last warp
// done with a slot in place of the stage's barrier: it keeps cp.async.
#pragma once
#include "bsmm/bulk.cuh"
#include "engine/lstm_seq_tile.cuh"

// Ring shape: a stage is the 4 gates' slabs (TM rows x 32) and the 4 gate blocks; 4 deep
// (128 rows: 160 KB, one CTA an SM like the cp.async ring; 64 rows two, 32 rows three).
template <int TM>
struct Sb {
    static constexpr int NT = 4 * TM, S = 4;
    static constexpr int A_ELEMS = 4 * TM * SQ_BS, W_ELEMS = 4 * SQ_BS * SQ_BS;
    static constexpr size_t STAGE = (size_t)(A_ELEMS + W_ELEMS) * sizeof(bf16);
    static constexpr size_t RING = S * STAGE, RED = (size_t)4 * TM * SQ_BS * sizeof(float);
    static constexpr size_t TAIL = S * sizeof(uint64_t) + 2 * SQ_PIECE * sizeof(int);
    static constexpr size_t SMEM = 1024 + (RING > RED ? RING : RED) + TAIL;  // 1024: the ring's alignment
    static constexpr int MINB = seq_ctas_per_sm(SMEM, NT);
    static_assert(STAGE % 1024 == 0 && (TM * SQ_BS * sizeof(bf16)) % 512 == 0, "swizzled boxes on 512-byte boundaries");
};

template <int TM>
__device__ void seq_tile_bulk_bwd(const SeqStep &a, TileAt at, unsigned char *smem_raw, const CUtensorMap *dzmap,
                                  const CUtensorMap *wmap) {
    using C = Sb<TM>;
    __shared__ int s_last;
    unsigned char *smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
    uint64_t *full = (uint64_t *)(smem + (C::RING > C::RED ? C::RING : C::RED));
    int *s_idx = (int *)(full + C::S), *s_blk = s_idx + SQ_PIECE;
    const int tid = threadIdx.x, grp = tid / TM, lt = tid % TM;
    MmPiece pc;
    const int total = seq_tile_begin<false>(a, at, TM, pc, s_idx, s_blk, NULL);
    if (total < 0) return;
    mbar_init_all(full, C::S);
    const int n0 = at.ty * TM;
    auto a_at = [&](int st) { return (bf16 *)(smem + st % C::S * C::STAGE); };
    auto w_at = [&](int st) { return a_at(st) + C::A_ELEMS; };
    // Entry st's copies, by one thread: its weights (which no step writes), then its slabs.
    auto issue_w = [&](int st) {
        uint64_t *b = full + st % C::S;
        mbar_expect(b, (uint32_t)C::STAGE);
        for (int g = 0; g < 4; g++)
            tensor_load_2d(w_at(st) + g * SQ_BS * SQ_BS, wmap, 0, (int)((s_blk[st] + g * a.gstride) * SQ_BS), b);
    };
    auto issue_a = [&](int st) {
        for (int g = 0; g < 4; g++)
            tensor_load_3d(a_at(st) + g * TM * SQ_BS, dzmap, g * a.H + s_idx[st] * SQ_BS, n0, a.plane, full + st % C::S);
    };
    constexpr int AHEAD = C::S - 1;  // entries in flight beyond the one being multiplied
    if (tid == 0)
        for (int st = 0; st < AHEAD && st < total; st++) issue_w(st);
    seq_step_wait();
    if (tid == 0)
        for (int st = 0; st < AHEAD && st < total; st++) issue_a(st);
    float acc[SQ_BS] = {};
    ring_walk<C::S>(full, total, [&](int st) { issue_w(st), issue_a(st); }, [&](int st) {
        tile_mma<SQ_BS, SQ_BS, false, true, 1, true>(reinterpret_cast<float (&)[1][SQ_BS]>(acc), a_at(st) + grp * TM * SQ_BS,
                                                     SQ_BS, w_at(st) + grp * SQ_BS * SQ_BS, SQ_BS, 0, lt);
    });
    __syncthreads();  // every copy has landed and been read: the ring becomes red
    seq_tile_end<false>(a, at, pc, acc, (float *)smem, NULL, TM, &s_last);
}
