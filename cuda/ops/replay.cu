// replay.cu: a window's op sequence recorded once as a CUDA graph and replayed (backend.h
// replay). The mLSTM's time step is ~20 launches forward and ~20 backward; replayed, the
// window's 5000-odd kernels go to the GPU in one launch (what it bought: PERF_HISTORY.md 0c).
// The first call of an (owner, key, T) runs the ops as they are, growing any scratch they
// need; the second records them on a side stream; later ones replay the record. The CPU
// backend has no replay: the model runs the ops itself.
#include "ops/ops.cuh"

#define REPLAY_MAX 64  // windows recorded at once (train and eval acts, 8 layers, 2 directions, a few T)

typedef struct {
    const void *owner;
    int key, T;
    unsigned long gen;      // g_cuda.gen when it was run or recorded
    cudaGraphExec_t exec;   // NULL: run once, not recorded yet
} Rec;

static thread_local Rec recs[REPLAY_MAX];  // per rank thread, like g_cuda
static thread_local cudaStream_t side;     // blocking: ordered with the legacy stream's ops

static void rec_drop_graph(Rec *r) {
    if (r->exec) CUDA_CHECK(cudaGraphExecDestroy(r->exec));
    r->exec = NULL;
}

static Rec *rec_find(const void *owner, int key, int T) {
    Rec *free_slot = NULL;
    for (int i = 0; i < REPLAY_MAX; i++) {
        Rec *r = &recs[i];
        if (r->owner == owner && r->key == key && r->T == T) return r;
        if (!r->owner && !free_slot) free_slot = r;
    }
    if (!free_slot) die("internal: more than %d windows recorded for replay at once", REPLAY_MAX);
    *free_slot = (Rec){owner, key, T, g_cuda.gen - 1, NULL};  // a gen that differs: run first
    return free_slot;
}

// body's ops recorded on the side stream (cuBLAS too), or NULL where a buffer moved meanwhile.
static cudaGraphExec_t record(void (*body)(void *), void *ctx) {
    if (!side) CUDA_CHECK(cudaStreamCreate(&side));
    const unsigned long gen = g_cuda.gen;
    cudaGraph_t graph;
    g_cuda.stream = side;
    CUBLAS_CHECK(cublasSetStream(g_cuda.blas, side));
    twin_slabs_drop();  // an image written before the record is not rewritten before its replays
    CUDA_CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal));
    body(ctx);
    CUDA_CHECK(cudaStreamEndCapture(side, &graph));
    g_cuda.stream = 0;
    CUBLAS_CHECK(cublasSetStream(g_cuda.blas, 0));
    cudaGraphExec_t exec = NULL;
    if (g_cuda.gen == gen) CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    return exec;
}

void replay_cuda(const void *owner, int key, int T, void (*body)(void *), void *ctx) {
    Rec *r = rec_find(owner, key, T);
    if (r->gen == g_cuda.gen && !r->exec) r->exec = record(body, ctx);  // ran once with these buffers
    if (r->gen == g_cuda.gen && r->exec) {
        CUDA_CHECK(cudaGraphLaunch(r->exec, side));
        twin_slabs_drop();  // the images the graph wrote were not tracked here
        return;
    }
    rec_drop_graph(r);  // the first call, or a buffer moved (maybe while recording): the ops themselves
    body(ctx);
    r->gen = g_cuda.gen;
}

void replay_forget_cuda(const void *owner) {
    for (int i = 0; i < REPLAY_MAX; i++)
        if (recs[i].owner == owner) rec_drop_graph(&recs[i]), recs[i] = (Rec){};
}
