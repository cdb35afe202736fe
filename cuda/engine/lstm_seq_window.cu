// lstm_seq_window.cu: the recurrent engine's persistent kernel (engine = persistent): one
// cooperative launch runs a whole window in one direction, one CTA per SM walking its share
// of every step's tiles (lstm_seq_tile.cuh) with their weights resident in shared memory,
// the steps ordered by per-list flags rather than kernel boundaries.
#include "engine/lstm_seq_tile.cuh"

// The persistent form's order: per-list flags. flags[list][row tile] counts the steps whose
// epilogue that list has finished. A tile of step s (0-based in the window's order) waits
// for step s-1 of the lists its entries read (their h or dz slabs) and of its own list (whose
// partial tiles, counter, and in bwd dc, the step before still uses), so steps overlap:
// a list starts step s as soon as its inputs are ready, not when the whole step is.
struct FlagSync {
    int *flags;
    int step, ntiles;
    __device__ static int load_acquire(const int *p) {
        int v;
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
        return v;
    }
    __device__ void wait(int own, const int *idx, int cnt, int ty) const {
        for (int i = threadIdx.x; i <= cnt; i += blockDim.x) {
            const int *f = flags + (long)(i < cnt ? idx[i] : own) * ntiles + ty;
            while (load_acquire(f) < step) {}
        }
        __syncthreads();
    }
    __device__ void done(int own, int ty) const {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flags + (long)own * ntiles + ty), "r"(step + 1) : "memory");
        }
    }
};

// The persistent form: the window's steps in order, each CTA taking its tiles of each step,
// one CTA per SM with its tiles' weights resident after the ring (loaded by the first step
// that has a product: bwd's first, t = T-1, has none). Launched cooperatively, so every CTA
// is resident and no flag waits on a CTA that has not started; a CTA finishes step s before
// it starts s+1, and step s waits only on step s-1.
template <typename T, int TM, bool FWD>
__global__ void __launch_bounds__(Sq<T, TM, FWD, RING_RESIDENT>::NT, 1) seq_window_kernel(SeqStep w, SeqWork k) {
    using C = Sq<T, TM, FWD, RING_RESIDENT>;
    extern __shared__ __align__(16) unsigned char smem[];
    T *wres = (T *)(smem + C::SMEM);
    const int ntiles = (w.B + TM - 1) / TM, nsteps = FWD ? k.T : k.T + 1, load_step = FWD ? 0 : 1;
    for (int s = 0; s < nsteps; s++) {
        const SeqStep a = seq_at(w, FWD ? s : k.T - 1 - s, FWD, k.T, sizeof(T), ntiles);
        for (int i = k.ptr[blockIdx.x]; i < k.ptr[blockIdx.x + 1]; i++) {
            const int item = k.items[i], ty = item % ntiles;  // a piece's row tiles come in order, ty = 0 first
            seq_tile<T, TM, FWD, RING_RESIDENT>(a, {item / ntiles, ty, ntiles}, smem, FlagSync{k.flags, s, ntiles},
                                                wres + (long)k.roff[i] * C::W_ELEMS, s == load_step && ty == 0);
            __syncthreads();  // the next tile's copies reuse the shared memory
        }
    }
}

// The most dynamic shared memory the persistent kernel for T, TM, FWD may have: what a CTA
// may opt in to, less the kernel's static shared memory.
template <typename T, int TM, bool FWD>
static size_t window_most() {
    int dev, optin;
    cudaFuncAttributes fa;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    CUDA_CHECK(cudaFuncGetAttributes(&fa, seq_window_kernel<T, TM, FWD>));
    return (size_t)optin - fa.sharedSizeBytes;
}

// The persistent kernel for T, TM, FWD, allowed all of that.
template <typename T, int TM, bool FWD>
static void (*window_kernel())(SeqStep, SeqWork) {
    static thread_local bool ready;
    if (!ready) allow_smem(seq_window_kernel<T, TM, FWD>, window_most<T, TM, FWD>()), ready = true;
    return seq_window_kernel<T, TM, FWD>;
}

template <typename T, int TM, bool FWD>
static void launch_window(const SeqStep &w, const SeqWork &k, cudaStream_t stream) {
    using C = Sq<T, TM, FWD, RING_RESIDENT>;
    size_t smem = C::SMEM + (size_t)k.wres * C::W_BYTES;
    launch_attr(attr_cooperative(), window_kernel<T, TM, FWD>(), dim3(k.ctas), dim3(C::NT), smem, stream, w, k);
}

template <bool BF, bool FWD>
void seq_window_launch(const SeqStep &w, const SeqWork &k, cudaStream_t stream) {
    typedef typename std::conditional<BF, bf16, float>::type T;
    with_tm(w.B, [&](auto tm) { launch_window<T, decltype(tm)::value, FWD>(w, k, stream); });
}

template <typename T, int TM, bool FWD>
static SeqShape window_shape() {
    using C = Sq<T, TM, FWD, RING_RESIDENT>;
    return SeqShape{C::SMEM, C::W_BYTES, window_most<T, TM, FWD>()};
}

SeqShape seq_window_shape(bool bf, bool fwd, int B) {
    return with_tm(B, [&](auto tm) {
        constexpr int TM = decltype(tm)::value;
        return bf ? (fwd ? window_shape<bf16, TM, true>() : window_shape<bf16, TM, false>())
                  : (fwd ? window_shape<float, TM, true>() : window_shape<float, TM, false>());
    });
}

template void seq_window_launch<false, false>(const SeqStep &, const SeqWork &, cudaStream_t);
template void seq_window_launch<false, true>(const SeqStep &, const SeqWork &, cudaStream_t);
template void seq_window_launch<true, false>(const SeqStep &, const SeqWork &, cudaStream_t);
template void seq_window_launch<true, true>(const SeqStep &, const SeqWork &, cudaStream_t);
