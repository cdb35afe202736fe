// sync.cu: `swlstm bench --sync` (bench_cuda.h cb_sync): microseconds per dependent step of a
// chain of small dependent ops, each step reading what the one before wrote, under five ways
// of ordering them: kernels in a CUDA graph, the same programmatically dependent, one
// persistent kernel with a grid barrier, one persistent kernel whose CTAs wait only on the
// producers they read (readiness flags), and one thread-block cluster over distributed
// shared memory. The work of a step is the same in each: block row r of the state becomes a
// mix of the blocks of the columns that mlstm_3min's W_h layout stores in row r. The mix is
// integer arithmetic, so every variant's last state must equal the host's bit for bit.
#include <cooperative_groups.h>
#include <stdio.h>
#include <algorithm>
#include <vector>
#include "bench/bench_cuda.h"
#include "base/launch.cuh"
#include "sparse/mask.h"

namespace cg = cooperative_groups;

enum { BW = 32, MAX_WARPS = 32, STEPS = 1000, WARMUP = 3, REPS = 50, FLAG_STRIDE = 32 };
// Polls before a wait gives up and reports a broken sync instead of hanging the device.
#define SPIN_LIMIT (1u << 22)

struct Chain {
    const int *row_ptr, *col;   // the mask's block rows (CSR)
    const int *dep_ptr, *dep;   // per CTA, the block rows it waits on (mask_owner_columns)
    unsigned *x;                // [STEPS + 1][nb][BW]: the state before and after each step
    unsigned *flag;             // [nb][FLAG_STRIDE]: per block row (a line each), the epoch of its last step
    unsigned *bar;              // the grid barrier's arrivals (never reset)
    unsigned *salt;             // bumped once a run, so that a stale read gives a wrong answer
    int *err;                   // set when a wait timed out
    int nb, wpr;                // block rows; warps a row is split over
};

// One block's contribution to lane i of row r, and a row's value from its sum: the same on
// the host and the device.
__host__ __device__ inline unsigned mix(unsigned acc, unsigned v, int r, int c) { return acc + v * ((unsigned)(r * 7 + c * 13) | 1u); }
__host__ __device__ inline unsigned finish(unsigned acc, unsigned salt) { return (acc ^ (acc >> 7)) + salt; }
__host__ __device__ inline int lane_of(int c, int i) { return (i + c) & (BW - 1); }

// Rows r0..r1-1 of one step, by this CTA; row r0 + q holds blocks rp[q] .. rp[q+1]-1 of cols.
// wpr warps a row each take every wpr-th of its blocks, then the row's first warp sums their
// parts. load(c, i) reads lane i of block c of the step's input; store(r, i, v) writes lane i
// of row r of its output.
template <class Load, class Store>
__device__ inline void rows_step(const int *rp, const int *cols, int r0, int r1, int wpr, unsigned salt, Load load, Store store) {
    __shared__ unsigned part[MAX_WARPS][BW];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, rr = w / wpr, sub = w % wpr, r = r0 + rr;
    unsigned acc = 0;
    if (r < r1) {
#pragma unroll 8
        for (int j = rp[rr] + sub; j < rp[rr + 1]; j += wpr) {
            const int c = cols[j];
            acc = mix(acc, load(c, lane_of(c, lane)), r, c);
        }
    }
    part[w][lane] = acc;
    __syncthreads();
    if (r < r1 && sub == 0) {
        unsigned s = 0;
        for (int q = 0; q < wpr; q++) s += part[w + q][lane];
        store(r, lane, finish(s, salt));
    }
}

// A step through global memory: lane loads from L2 (never a stale L1 line).
__device__ inline void global_step(const Chain &k, const int *rp, const int *cols, int r0, int r1, unsigned salt, int s) {
    const unsigned *in = k.x + (size_t)s * k.nb * BW;
    unsigned *out = k.x + (size_t)(s + 1) * k.nb * BW;
    rows_step(rp, cols, r0, r1, k.wpr, salt, [&](int c, int i) { return __ldcg(in + c * BW + i); },
              [&](int r, int i, unsigned v) { __stcg(out + r * BW + i, v); });
}

// A CTA's rows r0..r1-1 of the mask copied into shared memory (rp relative to cols), once
// a launch: what a persistent kernel keeps resident.
__device__ inline void stage_rows(const Chain &k, int r0, int r1, int *rp, int *cols) {
    const int j0 = k.row_ptr[r0];
    for (int q = threadIdx.x; q <= r1 - r0; q += blockDim.x) rp[q] = k.row_ptr[r0 + q] - j0;
    for (int j = threadIdx.x; j < k.row_ptr[r1] - j0; j += blockDim.x) cols[j] = k.col[j0 + j];
    __syncthreads();
}

__device__ inline unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void st_release(unsigned *p, unsigned v) { asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
__device__ inline void red_release(unsigned *p, unsigned v) { asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }

// Spins until *p has reached target (epochs wrap: compared by difference). Gives up after
// SPIN_LIMIT polls, or soon after another wait gave up, and flags the run as failed.
__device__ inline void wait_reach(const unsigned *p, unsigned target, int *err) {
    for (unsigned n = 1; (int)(ld_acquire(p) - target) < 0; n++)
        if (n >= SPIN_LIMIT || ((n & 1023) == 0 && *(volatile int *)err)) {
            atomicExch(err, 1);
            return;
        }
}

__device__ inline int cta_row(const Chain &k, int o) { return (int)((long)o * k.nb / gridDim.x); }  // as mask_owner_row

__global__ void salt_kernel(unsigned *salt) { *salt += 1; }

// (a), (b): one kernel a step; with PDL it waits on its predecessor before reading anything
// and lets the next one launch at once. WORK = false: the ordering alone.
template <bool PDL, bool WORK>
__global__ void step_kernel(Chain k, int s) {
    if (PDL) pdl_enter();
    const int r0 = cta_row(k, blockIdx.x);
    if (WORK) global_step(k, k.row_ptr + r0, k.col, r0, cta_row(k, blockIdx.x + 1), __ldcg(k.salt), s);
}

// (c), (d): all steps in one cooperative launch. FLAGS: before step s a CTA waits until each
// row it reads carries epoch base + s, and after it stamps its own rows base + s + 1 (epochs
// only grow, so nothing is reset between runs). BARRIER: every CTA meets the others after
// each step; arrivals count up from `base`, never reset either. NONE: no ordering at all (the
// work's own time; its reads race). Dynamic shared memory: the CTA's rows (stage_rows).
enum { NONE, BARRIER, FLAGS };
template <int MODE, bool WORK>
__global__ void persistent_kernel(Chain k, unsigned base) {
    extern __shared__ int rows_smem[];
    const int r0 = cta_row(k, blockIdx.x), r1 = cta_row(k, blockIdx.x + 1);
    int *rp = rows_smem, *cols = rows_smem + (r1 - r0 + 1);
    stage_rows(k, r0, r1, rp, cols);
    const unsigned salt = __ldcg(k.salt);
    for (int s = 0; s < STEPS; s++) {
        if (MODE == FLAGS && s > 0) {
            for (int i = k.dep_ptr[blockIdx.x] + threadIdx.x; i < k.dep_ptr[blockIdx.x + 1]; i += blockDim.x)
                wait_reach(k.flag + k.dep[i] * FLAG_STRIDE, base + s, k.err);
            __syncthreads();  // this CTA's other threads read after the acquires
        }
        if (WORK) global_step(k, rp, cols, r0, r1, salt, s);
        __syncthreads();  // every thread's writes before thread 0's release
        if (threadIdx.x == 0 && MODE != NONE) {
            __threadfence();
            if (MODE == FLAGS)
                for (int r = r0; r < r1; r++) st_release(k.flag + r * FLAG_STRIDE, base + s + 1);
            else if (s + 1 < STEPS) {
                red_release(k.bar, 1);
                wait_reach(k.bar, base + (s + 1) * gridDim.x, k.err);
            }
        }
        if (MODE == BARRIER) __syncthreads();
    }
}

// (e): the whole chain in one cluster. Each CTA holds its rows of the state in shared memory
// (two copies: a step reads one and writes the other), reads the rows it needs from the
// other CTAs' shared memory, and the cluster barrier (arrive release, wait acquire) ends the
// step. The state meets global memory only before the first step and after the last.
template <bool WORK>
__global__ void __launch_bounds__(1024) cluster_kernel(Chain k, int rows_per) {
    extern __shared__ unsigned st[];  // [2][rows_per][BW], then the CTA's rows (stage_rows)
    cg::cluster_group cl = cg::this_cluster();
    const int rank = (int)cl.block_rank(), r0 = min(k.nb, rank * rows_per), r1 = min(k.nb, r0 + rows_per);
    int *rp = (int *)(st + 2 * rows_per * BW), *cols = rp + rows_per + 1;
    stage_rows(k, r0, r1, rp, cols);
    const unsigned salt = __ldcg(k.salt);
    for (int i = threadIdx.x; i < (r1 - r0) * BW; i += blockDim.x) st[i] = k.x[(size_t)r0 * BW + i];
    cl.sync();
    for (int s = 0; s < STEPS; s++) {
        unsigned *in = st + (s & 1) * rows_per * BW, *out = st + ((s + 1) & 1) * rows_per * BW;
        if (WORK)
            rows_step(rp, cols, r0, r1, k.wpr, salt,
                      [&](int c, int i) { return cl.map_shared_rank(in, c / rows_per)[(c % rows_per) * BW + i]; },
                      [&](int r, int i, unsigned v) { out[(r - r0) * BW + i] = v; });
        cl.sync();
    }
    const unsigned *last = st + (STEPS & 1) * rows_per * BW;
    for (int i = threadIdx.x; i < (r1 - r0) * BW; i += blockDim.x) k.x[((size_t)STEPS * k.nb + r0) * BW + i] = last[i];
}

// ---- host ----

// The chain on the host: the state after STEPS steps from x0 with this salt.
static std::vector<unsigned> host_chain(const std::vector<int> &rp, const std::vector<int> &col, const std::vector<unsigned> &x0,
                                        unsigned salt) {
    std::vector<unsigned> x = x0, y(x0.size());
    for (int s = 0; s < STEPS; s++) {
        for (int r = 0; r + 1 < (int)rp.size(); r++)
            for (int i = 0; i < BW; i++) {
                unsigned acc = 0;
                for (int j = rp[r]; j < rp[r + 1]; j++) acc = mix(acc, x[col[j] * BW + lane_of(col[j], i)], r, col[j]);
                y[r * BW + i] = finish(acc, salt);
            }
        std::swap(x, y);
    }
    return x;
}

enum { GRAPH, GRAPH_PDL, GRID_BARRIER, READY_FLAGS, CLUSTER8, CLUSTER16, NO_SYNC, NKINDS };
static const char *kind_name[] = {"kernels in a CUDA graph", "the same, programmatic dependent launch", "persistent, grid barrier",
                                  "persistent, readiness flags", "cluster of 8, DSMEM + cluster barrier",
                                  "cluster of 16, DSMEM + cluster barrier", "none: the work alone (its reads race)"};

struct Run {
    Chain k;
    int kind, work, ctas, threads;
    unsigned launches;  // cooperative runs so far (their epochs follow from it)
    cudaGraphExec_t graph;
    size_t smem;
};

static int cluster_of(int kind) { return kind == CLUSTER8 ? 8 : 16; }

static cudaLaunchConfig_t cluster_cfg(const Run &r, cudaLaunchAttribute *a) {
    cudaLaunchConfig_t cfg = {};
    a->id = cudaLaunchAttributeClusterDimension;
    a->val.clusterDim.x = cluster_of(r.kind), a->val.clusterDim.y = 1, a->val.clusterDim.z = 1;
    cfg.gridDim = dim3(r.ctas), cfg.blockDim = dim3(r.threads), cfg.dynamicSmemBytes = r.smem;
    cfg.attrs = a, cfg.numAttrs = 1;
    return cfg;
}

template <int MODE, bool WORK>
static void launch_persistent(const Run &r, unsigned base) {
    launch_attr(attr_cooperative(), persistent_kernel<MODE, WORK>, dim3(r.ctas), dim3(r.threads), r.smem, 0, r.k, base);
}

static void run_once(void *p, int iter) {
    Run *r = (Run *)p;
    if (r->kind <= GRAPH_PDL) {
        CUDA_CHECK(cudaGraphLaunch(r->graph, 0));
        return;
    }
    salt_kernel<<<1, 1>>>(r->k.salt);
    LAUNCH_CHECK();
    const unsigned n = r->launches++;
    if (r->kind == CLUSTER8 || r->kind == CLUSTER16) {
        cudaLaunchAttribute a;
        cudaLaunchConfig_t cfg = cluster_cfg(*r, &a);
        const int rows_per = (r->k.nb + cluster_of(r->kind) - 1) / cluster_of(r->kind);
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, r->work ? cluster_kernel<true> : cluster_kernel<false>, r->k, rows_per));
    } else if (r->kind == READY_FLAGS) {
        if (r->work) launch_persistent<FLAGS, true>(*r, n * STEPS);
        else launch_persistent<FLAGS, false>(*r, n * STEPS);
    } else if (r->kind == GRID_BARRIER) {
        if (r->work) launch_persistent<BARRIER, true>(*r, n * (unsigned)(STEPS - 1) * r->ctas);
        else launch_persistent<BARRIER, false>(*r, n * (unsigned)(STEPS - 1) * r->ctas);
    } else launch_persistent<NONE, true>(*r, 0);
}

template <bool PDL, bool WORK>
static void capture_steps(const Run &r, cudaStream_t s) {
    for (int i = 0; i < STEPS; i++)
        launch_attr(attr_pdl(PDL), step_kernel<PDL, WORK>, dim3(r.ctas), dim3(r.threads), 0, s, r.k, i);
}

// The graph of (a) or (b): the salt's bump, then STEPS step kernels.
static cudaGraphExec_t make_graph(const Run &r) {
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t e;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    salt_kernel<<<1, 1, 0, s>>>(r.k.salt);
    LAUNCH_CHECK();
    const bool pdl = r.kind == GRAPH_PDL;
    if (pdl && r.work) capture_steps<true, true>(r, s);
    else if (pdl) capture_steps<true, false>(r, s);
    else if (r.work) capture_steps<false, true>(r, s);
    else capture_steps<false, false>(r, s);
    CUDA_CHECK(cudaStreamEndCapture(s, &g));
    CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    CUDA_CHECK(cudaStreamDestroy(s));
    return e;
}

template <class T>
static T *to_dev(const std::vector<T> &v) {
    T *d;
    CUDA_CHECK(cudaMalloc(&d, sizeof(T) * std::max<size_t>(v.size(), 1)));
    CUDA_CHECK(cudaMemcpy(d, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
    return d;
}

// Warps per row: as many as a CTA of MAX_WARPS warps holds for rows_per rows, so that a hub
// row's blocks (several times the mean in a Barabasi-Albert layout) are spread over many warps.
static int warps_per_row(int rows_per) { return std::max(1, MAX_WARPS / rows_per); }

// The most rows and the most blocks any of `owners` owners of contiguous rows holds.
static void owner_sizes(const std::vector<int> &rp, int owners, int *rows, int *blocks) {
    const int nb = (int)rp.size() - 1;
    *rows = *blocks = 0;
    for (int o = 0; o < owners; o++) {
        const int r0 = std::min(nb, mask_owner_row(nb, owners, o)), r1 = std::min(nb, mask_owner_row(nb, owners, o + 1));
        *rows = std::max(*rows, r1 - r0), *blocks = std::max(*blocks, rp[r1] - rp[r0]);
    }
}

// One timed run of a mechanism, with the work (checked against want) or without (the
// ordering alone). Returns us per step; *ok: 1 passed, 0 failed, -1 not checked or not run.
static double time_run(Run r, const std::vector<unsigned> &want, int *ok) {
    const int nb = r.k.nb;
    int rows_per, blocks;
    *ok = -1;
    if (r.kind == CLUSTER8 || r.kind == CLUSTER16) {
        const int c = cluster_of(r.kind);
        r.ctas = c;
        rows_per = (nb + c - 1) / c;
        std::vector<int> rp(nb + 1);
        CUDA_CHECK(cudaMemcpy(rp.data(), r.k.row_ptr, sizeof(int) * (nb + 1), cudaMemcpyDeviceToHost));
        blocks = 0;
        for (int o = 0; o < c; o++) blocks = std::max(blocks, rp[std::min(nb, (o + 1) * rows_per)] - rp[std::min(nb, o * rows_per)]);
        r.smem = sizeof(unsigned) * 2 * rows_per * BW + sizeof(int) * (rows_per + 1 + blocks);
    } else {
        std::vector<int> rp(nb + 1);
        CUDA_CHECK(cudaMemcpy(rp.data(), r.k.row_ptr, sizeof(int) * (nb + 1), cudaMemcpyDeviceToHost));
        owner_sizes(rp, r.ctas, &rows_per, &blocks);
        r.smem = sizeof(int) * (rows_per + 1 + blocks);
    }
    if (rows_per > MAX_WARPS) return -1;
    r.k.wpr = warps_per_row(rows_per);
    r.threads = 32 * r.k.wpr * rows_per;
    if (r.kind == CLUSTER8 || r.kind == CLUSTER16) {
        auto kern = r.work ? cluster_kernel<true> : cluster_kernel<false>;
        CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)r.smem));
        cudaLaunchAttribute a;
        cudaLaunchConfig_t cfg = cluster_cfg(r, &a);
        int nclusters = 0;
        if (cudaOccupancyMaxActiveClusters(&nclusters, kern, &cfg) != cudaSuccess || nclusters < 1) {
            (void)cudaGetLastError();
            return -1;
        }
    }
    CUDA_CHECK(cudaMemset(r.k.salt, 0, sizeof(unsigned)));  // every mechanism ends on the same salt
    CUDA_CHECK(cudaMemset(r.k.flag, 0, sizeof(unsigned) * nb * FLAG_STRIDE));
    CUDA_CHECK(cudaMemset(r.k.bar, 0, sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(r.k.x + (size_t)nb * BW, 0xff, sizeof(unsigned) * STEPS * nb * BW));  // nothing left from the last one
    if (r.kind <= GRAPH_PDL) r.graph = make_graph(r);
    const double ms = cb_time_ms(run_once, &r, WARMUP, REPS);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (r.graph) CUDA_CHECK(cudaGraphExecDestroy(r.graph));
    int err;
    std::vector<unsigned> got(want.size());
    CUDA_CHECK(cudaMemcpy(&err, r.k.err, sizeof err, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got.data(), r.k.x + (size_t)STEPS * nb * BW, sizeof(unsigned) * got.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemset(r.k.err, 0, sizeof(int)));
    if (err) *ok = 0;
    else if (r.work && r.kind != NO_SYNC) *ok = got == want;
    return ms * 1e3 / STEPS;
}

// One table row per mechanism for layout m; returns how many failed their check.
static int sync_rows(const TablePrint *tp, const char *desc, const Mask &m, int nsm) {
    const int nb = m.nr, ctas = std::min(nsm, nb);
    std::vector<int> rp(nb + 1, 0), col;
    for (int r = 0; r < nb; r++) {
        for (int c = 0; c < nb; c++)
            if (m.m[(size_t)r * nb + c]) col.push_back(c);
        rp[r + 1] = (int)col.size();
    }
    int *dptr, *dlist;
    mask_owner_columns(&m, ctas, &dptr, &dlist);
    std::vector<int> vptr(dptr, dptr + ctas + 1), vlist(dlist, dlist + dptr[ctas]);
    free(dptr);
    free(dlist);
    std::vector<unsigned> x0((size_t)nb * BW);
    for (size_t i = 0; i < x0.size(); i++) x0[i] = (unsigned)(i * 2654435761u) ^ 0x5bd1e995u;
    Chain k = {};
    k.row_ptr = to_dev(rp), k.col = to_dev(col), k.dep_ptr = to_dev(vptr), k.dep = to_dev(vlist), k.nb = nb;
    CUDA_CHECK(cudaMalloc(&k.x, sizeof(unsigned) * (STEPS + 1) * nb * BW));
    CUDA_CHECK(cudaMemcpy(k.x, x0.data(), sizeof(unsigned) * x0.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&k.flag, sizeof(unsigned) * nb * FLAG_STRIDE));
    k.bar = to_dev(std::vector<unsigned>(1, 0)), k.salt = to_dev(std::vector<unsigned>(1, 0));
    k.err = to_dev(std::vector<int>(1, 0));
    const int runs = WARMUP + (REPS + 9) / 10 * 10;  // cb_time_ms's calls: the salt every run ends on
    const std::vector<unsigned> want = host_chain(rp, col, x0, (unsigned)runs);
    int failed = 0;
    for (int kind = 0; kind < NKINDS; kind++) {
        Run r = {};
        r.k = k, r.kind = kind, r.ctas = ctas, r.work = 1;
        int ok, ok0;
        const double us = time_run(r, want, &ok);
        r.work = 0;
        const double us0 = kind == NO_SYNC ? -1 : time_run(r, want, &ok0);
        char deps[32] = "-", alone[32] = "-";
        if (kind == READY_FLAGS) snprintf(deps, sizeof deps, "%.1f of %d", (double)vlist.size() / ctas, nb);
        if (us0 >= 0) snprintf(alone, sizeof alone, "%.2f", us0);
        if (us < 0) {
            tp->row("| %s | %s | - | - | - | - | n/a (cannot be placed) | | |\n", kind_name[kind], desc);
            continue;
        }
        const int cl = kind == CLUSTER8 || kind == CLUSTER16;
        const int rows_per = cl ? (nb + cluster_of(kind) - 1) / cluster_of(kind) : (nb + ctas - 1) / ctas;
        tp->row("| %s | %s | %d | %d | %s | %d | %.2f | %s | %s |\n", kind_name[kind], desc, cl ? cluster_of(kind) : ctas,
               32 * warps_per_row(rows_per) * rows_per, deps, STEPS, us,
               ok == 1 ? "ok" : ok < 0 ? "-" : "FAILED", alone);
        fflush(stdout);
        failed += ok == 0 || (us0 >= 0 && ok0 == 0);
    }
    void *bufs[] = {(void *)k.row_ptr, (void *)k.col, (void *)k.dep_ptr, (void *)k.dep, k.x, k.flag, k.bar, k.salt, k.err};
    for (void *b : bufs) CUDA_CHECK(cudaFree(b));
    return failed;
}

extern "C" int cb_sync(const TablePrint *tp) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    int nsm;
    CUDA_CHECK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    tp->note("device: %s\na chain of %d dependent steps over H = 5120 in 32 x 32 blocks (160 block rows): each step, every "
           "block row becomes an integer mix of the blocks its W_h row stores (mlstm_3min's ba_14, seed 1; dense: every "
           "row reads the whole row before it, as a layer norm's statistics do); us/step = a run's time / %d, median of "
           "runs; checked = the last state equals the host's, bit for bit; sync alone = the same ordering with no work\n\n",
           dev, STEPS, STEPS);
    tp->head("sync", "| mechanism | mask | CTAs | threads | producers a CTA waits on | steps | us/step | checked | sync alone us/step |");
    int failed = 0;
    const char *descs[] = {"ba_14", "dense"};
    for (const char *d : descs) {
        Mask m = mask_make(d, 160, 160, 1);
        failed += sync_rows(tp, d, m, nsm);
        mask_free(&m);
    }
    if (failed) fprintf(stderr, "bench --sync: %d mechanism(s) failed their check (see the table)\n", failed);
    return failed ? 1 : 0;
}
