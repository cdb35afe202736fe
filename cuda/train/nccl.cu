// nccl.cu: the NCCL side of data-parallel training (twin of the world-size-1 stubs at the end
// of src/train/dist.c): the communicator, collectives on a stream of their own, and waits that poll
// for a peer's failure and a timeout instead of blocking forever.
#include <nccl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/check.cuh"
#include "train/dist.h"

static_assert(sizeof(ncclUniqueId) == DIST_ID_BYTES, "the id exchange moves NCCL_UNIQUE_ID_BYTES");

// One communicator per thread: `gpus = N` runs one rank per thread.
static thread_local struct {
    ncclComm_t comm;
    cudaStream_t stream;       // non-blocking, so collectives can overlap the backend's kernels
    cudaEvent_t queued, done;  // the backend's work so far; the collectives so far
    double *scalars;           // device buffer of dist_sum_doubles
    int world;
    double timeout;
} g_dist = {NULL, NULL, NULL, NULL, NULL, 1, DIST_DEFAULT_TIMEOUT};

// NVLink multicast (NVLS) stays off unless the user asked for it: NCCL reads this at init.
// Called before any rank thread starts (setenv must not race with getenv in NCCL's threads);
// later calls change nothing.
void dist_nccl_env(void) { setenv("NCCL_NVLS_ENABLE", "0", 0); }

// Aborting also ends this rank's share of any collective, so the peers see an error or
// time out instead of hanging.
__attribute__((noreturn)) static void abort_die(const char *what, const char *why) {
    char detail[512] = "";
    if (g_dist.comm) {
        snprintf(detail, sizeof detail, "%s", ncclGetLastError(g_dist.comm));
        ncclCommAbort(g_dist.comm);
        g_dist.comm = NULL;
    }
    die("%s: %s%s%s (if another rank failed first, its log has the cause)", what, why, *detail ? ": " : "", detail);
}

static void pause_briefly(void) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

// A peer that exited closes its id-exchange connection (dist_peer_lost). It may also have
// exited normally just after its share of a last collective, so ours gets a grace period.
#define PEER_GRACE_SEC 10.0

#define PEER_CHECK_SEC 0.05

typedef struct {
    double t0, checked_at, lost_at;
} Waiting;

static void check_progress(Waiting *w, const char *what) {
    double now = now_sec();
    char why[160];
    int peer = -1;
    if (now - w->checked_at > PEER_CHECK_SEC) peer = dist_peer_lost(), w->checked_at = now;
    if (peer >= 0 && w->lost_at == 0) w->lost_at = now;
    if (peer >= 0 && now - w->lost_at > PEER_GRACE_SEC) {
        snprintf(why, sizeof why, "rank %d exited (its connection from the id exchange closed)", peer);
        abort_die(what, why);
    }
    if (now - w->t0 <= g_dist.timeout) return;
    snprintf(why, sizeof why, "timed out after %g s (SWLSTM_DIST_TIMEOUT)", g_dist.timeout);
    abort_die(what, why);
}

// 0 while the communicator is healthy (ncclInProgress included); dies on an async error.
static int comm_busy(const char *what) {
    ncclResult_t st = ncclSuccess, r = ncclCommGetAsyncError(g_dist.comm, &st);
    if (r != ncclSuccess) abort_die(what, ncclGetErrorString(r));
    if (st != ncclSuccess && st != ncclInProgress) abort_die(what, ncclGetErrorString(st));
    return st == ncclInProgress;
}

// The communicator is non-blocking: init and calls may return ncclInProgress, and the next
// NCCL call must wait until that state clears.
static void nccl_check(ncclResult_t r, const char *what) {
    if (r == ncclInProgress) {
        for (Waiting w = {now_sec(), 0, 0}; comm_busy(what); pause_briefly()) check_progress(&w, what);
    } else if (r != ncclSuccess) {
        abort_die(what, ncclGetErrorString(r));
    }
}
#define NCCL_CHECK(call) nccl_check((call), #call)

void dist_nccl_get_unique_id(uint8_t id[DIST_ID_BYTES]) {
    dist_nccl_env();
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) die("rank 0: ncclGetUniqueId failed: %s (%s)", ncclGetErrorString(r), ncclGetLastError(NULL));
    memcpy(id, &u, DIST_ID_BYTES);
}

// The GPU of a rank: its local rank among the GPUs this process sees. One visible GPU
// means the launcher bound one to each rank (CUDA_VISIBLE_DEVICES per task).
static int pick_device(int rank, int local_rank) {
    int ndev = backend_cuda_devices();
    if (ndev == 0) die("no CUDA device visible (cudaGetDeviceCount gives none)");
    int local = local_rank >= 0 ? local_rank : rank;
    if (ndev > 1 && local_rank >= ndev)
        die("local rank %d, but this machine shows only %d GPUs: start at most %d ranks per machine", local_rank, ndev, ndev);
    return local % ndev;
}

void dist_nccl_init(int rank, int world, int local_rank, const uint8_t id[DIST_ID_BYTES], double timeout_sec) {
    if (world <= 1) return;
    dist_nccl_env();
    g_dist.world = world;
    g_dist.timeout = timeout_sec;
    backend_cuda_bind(pick_device(rank, local_rank));
    ncclUniqueId u;
    memcpy(&u, id, DIST_ID_BYTES);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    NCCL_CHECK(ncclCommInitRankConfig(&g_dist.comm, world, u, rank, &cfg));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g_dist.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&g_dist.queued, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&g_dist.done, cudaEventDisableTiming));
    CUDA_CHECK(cudaMalloc(&g_dist.scalars, DIST_MAX_SCALARS * sizeof(double)));
}

// The backend queues its kernels on the legacy default stream; a collective waits for them
// through an event rather than running on that stream, so backward can go on meanwhile.
static void after_backend(void) {
    CUDA_CHECK(cudaEventRecord(g_dist.queued, cudaStreamLegacy));
    CUDA_CHECK(cudaStreamWaitEvent(g_dist.stream, g_dist.queued, 0));
}

void dist_allreduce_sum(real *buf, size_t n) {
    if (g_dist.world <= 1 || n == 0) return;
    after_backend();
    NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, g_dist.comm, g_dist.stream));
}

void dist_allgather(real *full, const real *part, size_t n) {
    if (g_dist.world <= 1) {
        if (full != part) CUDA_CHECK(cudaMemcpy(full, part, n * sizeof(real), cudaMemcpyDeviceToDevice));
        return;
    }
    after_backend();
    NCCL_CHECK(ncclAllGather(part, full, n, ncclFloat, g_dist.comm, g_dist.stream));
}

// Later backend work is ordered after the collectives on the device; the host polls so
// that a dead peer ends in an error rather than a hang.
void dist_wait(const char *what) {
    if (g_dist.world <= 1) return;
    CUDA_CHECK(cudaEventRecord(g_dist.done, g_dist.stream));
    CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, g_dist.done, 0));
    for (Waiting w = {now_sec(), 0, 0};; pause_briefly()) {
        cudaError_t e = cudaEventQuery(g_dist.done);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) CUDA_CHECK(e);
        comm_busy(what);
        check_progress(&w, what);
    }
}

void dist_sum_doubles(double *x, int n) {
    if (g_dist.world <= 1) return;
    if (n < 1 || n > DIST_MAX_SCALARS) die("dist_sum_doubles: %d values (1 to %d)", n, DIST_MAX_SCALARS);
    size_t bytes = (size_t)n * sizeof *x;
    CUDA_CHECK(cudaMemcpyAsync(g_dist.scalars, x, bytes, cudaMemcpyHostToDevice, g_dist.stream));
    NCCL_CHECK(ncclAllReduce(g_dist.scalars, g_dist.scalars, (size_t)n, ncclDouble, ncclSum, g_dist.comm, g_dist.stream));
    dist_wait("the all-reduce of per-step scalars");
    CUDA_CHECK(cudaMemcpy(x, g_dist.scalars, bytes, cudaMemcpyDeviceToHost));
}

void dist_nccl_finalize(void) {
    if (!g_dist.comm) return;
    dist_wait("the last collectives");
    NCCL_CHECK(ncclCommFinalize(g_dist.comm));
    ncclComm_t c = g_dist.comm;
    g_dist.comm = NULL;
    ncclResult_t r = ncclCommDestroy(c);  // quiescent after finalize: frees local resources only
    if (r != ncclSuccess) abort_die("ncclCommDestroy", ncclGetErrorString(r));
    CUDA_CHECK(cudaFree(g_dist.scalars));
    CUDA_CHECK(cudaEventDestroy(g_dist.queued));
    CUDA_CHECK(cudaEventDestroy(g_dist.done));
    CUDA_CHECK(cudaStreamDestroy(g_dist.stream));
    g_dist.world = 1;
}
