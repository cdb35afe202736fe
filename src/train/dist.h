// dist.h: data-parallel training over ranks (one GPU each). Who this process is (from the
// launcher's environment), how gradients are grouped into all-reduce buckets, how rank 0's
// NCCL id reaches the others (a file on a shared path or a TCP address), and the NCCL calls
// (cuda/train/nccl.cu; a CPU build runs world size 1 only). Which stripes of the batch a rank
// reads is data.h's stripes_share. docs/MULTIGPU.md says how the trainer uses these.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"
#ifdef __cplusplus
extern "C" {
#endif

// ---- ranks from the environment ----

typedef const char *(*DistGetenv)(const char *name);

typedef struct {
    int rank, world;
    int local_rank;        // -1 when the launcher gives none (the GPU is then rank % visible GPUs)
    const char *source;    // the variables they came from, e.g. "Slurm (SLURM_PROCID)"; "default"
    char run_id[128];      // tells this run's id file / TCP peers from a stale one; "" if unknown
    char init[512];        // SWLSTM_DIST_INIT: file:///path or tcp://host:port ("" if unset)
    double timeout_sec;    // SWLSTM_DIST_TIMEOUT: id exchange and each NCCL wait (default 1800)
    int has_token;         // a shared secret was given (SWLSTM_DIST_TOKEN, or the dist_token file)
    uint8_t token_key[32]; // its SHA-256: the key of the TCP handshake's proofs (zeros without one)
} DistEnv;

#define DIST_DEFAULT_TIMEOUT 1800.0

// Rank, world size and local rank from the first family of variables that is set:
// SWLSTM_RANK/_WORLD_SIZE/_LOCAL_RANK; RANK/WORLD_SIZE/LOCAL_RANK (torchrun);
// OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK (Open MPI); PMI_RANK/PMI_SIZE/MPI_LOCALRANKID
// (MPICH, Hydra); SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID. None set: rank 0 of 1.
// The run id is the first of SWLSTM_RUN_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID(.SLURM_STEP_ID),
// PMIX_NAMESPACE. With several processes, the shared secret is SWLSTM_DIST_TOKEN's value.
// Dies naming the variable on a malformed or inconsistent value.
DistEnv dist_env_from(DistGetenv getenv_fn);
DistEnv dist_env(void);  // from the process environment

// The shared secret of a tcp:// rendezvous (src/train/dist_token.c): `secret[n]`, at least
// DIST_TOKEN_MIN bytes, or the contents of the file `path` (the dist_token key; a final
// newline dropped), which replace SWLSTM_DIST_TOKEN's. `what` names the source in errors,
// which never show the secret; only its SHA-256 is kept.
#define DIST_TOKEN_MIN 16
void dist_token_set(DistEnv *e, const char *secret, size_t n, const char *what);
void dist_token_file(DistEnv *e, const char *path);

// ---- gradient buckets ----

#define DIST_BUCKET_BYTES ((size_t)25 << 20)

typedef struct { size_t off, n; } DistBucket;  // elements [off, off+n) of the flat gradients

// Buckets in the order backward finishes gradients: from the last tensor (head) down to the
// first (embedding), so offsets descend. A bucket holds whole adjacent tensors up to
// bucket_bytes; a tensor above the limit alone is cut into equal contiguous chunks.
typedef struct { DistBucket *b; int n; } DistPlan;

DistPlan dist_plan(const ParamTensor *t, int ntensor, size_t bucket_bytes);
void dist_plan_free(DistPlan *p);
// How many leading buckets are final once every gradient at offset >= ready_off is.
int dist_plan_ready(const DistPlan *p, size_t ready_off);

// ---- NCCL id exchange (the id is opaque bytes here) ----

#define DIST_ID_BYTES 128
#define DIST_ID_GRACE_SEC 300.0  // without a run id, an id file older than this is stale

typedef struct {
    int tcp;              // 1: tcp://host:port, 0: file://path
    char path[512];
    char host[256];
    int port;
} DistInit;

// "file:///shared/run/nccl_id" or "tcp://10.0.0.1:29500" ("tcp://[::1]:29500"); dies otherwise.
DistInit dist_init_parse(const char *spec);
// Rank 0 hands `id` to the others; the others receive it into `id`. World size 1: nothing.
void dist_exchange_id(const char *spec, const DistEnv *e, uint8_t id[DIST_ID_BYTES]);

// File: rank 0 writes path.tmp.<pid>, fsyncs and renames it to path. The others poll for a
// file with this world size and run id (and, without a run id, modified at or after
// not_before, wall-clock seconds) until timeout_sec.
void dist_id_file_publish(const char *path, const DistEnv *e, const uint8_t id[DIST_ID_BYTES]);
void dist_id_file_fetch(const char *path, const DistEnv *e, double not_before, uint8_t id[DIST_ID_BYTES]);

// TCP (src/train/dist_tcp.c): rank 0 listens (port 0 picks a free one, written back) and
// serves all connections at once until each of the world-1 other ranks has proved the shared
// secret (src/train/dist_hello.h) and got the id, or until e->timeout_sec; a connection that
// fails the proof or says no hello is closed, logged and forgotten. The others connect with
// retries until e->timeout_sec.
int dist_tcp_listen(const char *host, int *port);
void dist_tcp_serve(int fd, const DistEnv *e, const uint8_t id[DIST_ID_BYTES]);
void dist_tcp_fetch(const char *host, int port, const DistEnv *e, uint8_t id[DIST_ID_BYTES]);
// 1 if every address of host is a loopback one (127.0.0.0/8, ::1): then only this machine can
// connect, and no shared secret is required.
int dist_host_is_loopback(const char *host);

// After a TCP exchange the connections stay open (rank 0 to each rank): a peer that exits
// closes its end. Returns the rank of a peer whose connection closed, -1 while all are open
// (and always with a file exchange, where only the NCCL timeout applies).
int dist_peer_lost(void);
void dist_watch_close(void);

// ---- NCCL (cuda/train/nccl.cu; without CUDA: world size 1 only, where every call is a no-op) ----

// Sets NCCL_NVLS_ENABLE=0 unless the user set it; call it before starting rank threads.
void dist_nccl_env(void);
void dist_nccl_get_unique_id(uint8_t id[DIST_ID_BYTES]);
// Sets NCCL_NVLS_ENABLE=0 unless the user set it, selects GPU local_rank (rank if -1) modulo
// the visible GPUs, and joins the communicator; call it before backend_get. World 1: no-op.
void dist_nccl_init(int rank, int world, int local_rank, const uint8_t id[DIST_ID_BYTES], double timeout_sec);
// Enqueues buf[n] (device) = sum over ranks, after the work already queued by the backend.
void dist_allreduce_sum(real *buf, size_t n);
// Enqueues full[world*n] = every rank's part[n] in rank order (part may be full + rank*n).
void dist_allgather(real *full, const real *part, size_t n);
// Waits for the enqueued collectives; a peer's failure or the timeout aborts the
// communicator and dies naming this rank.
void dist_wait(const char *what);
// x[n] (host, n <= DIST_MAX_SCALARS) = the sums over ranks, e.g. the loss and a stop flag
// of each step, so that every rank logs, skips and stops alike; waits.
#define DIST_MAX_SCALARS 8
void dist_sum_doubles(double *x, int n);
void dist_nccl_finalize(void);

#ifdef __cplusplus
}
#endif
