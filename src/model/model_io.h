// model_io.h: saving and loading models and full training state in checkpoints.
#pragma once
#include "io/ckpt.h"
#include "model/model.h"
#include "base/rng.h"
#ifdef __cplusplus
extern "C" {
#endif

// What, besides weights, a resumed run needs to continue bit-exactly.
typedef struct {
    long step;              // optimizer steps taken
    double best_valid_bpc;  // lowest validation bpc so far (INFINITY if none)
    double elapsed_sec;     // training wall time so far
    uint64_t bytes_seen;    // training characters consumed
    uint64_t data_pos;      // stripe offset of the next window
    Rng rng;
    uint64_t data_len;      // corpus size and fingerprint (dataset_fingerprint); 0 in
    uint32_t data_crc;      // checkpoints older than these fields: nothing to check
    uint8_t bytes[32];      // the byte values the corpus holds (byte_set.h), a bit each;
    int has_bytes;          // 0 in checkpoints older than the record
} TrainState;

// Writes config, masks and fp32 weights; with ts non-NULL also the Adam moments (adam_m,
// adam_v: backend memory, m->nparams each), the train state and the carried state of `a`.
void model_save(const char *path, const Model *m, const TrainState *ts, const real *adam_m,
                const real *adam_v, const Acts *a);
// A checkpoint like c for m, a model of c's config with other masks (swlstm prune): config,
// masks, m's weights and moving average, and where c holds a training state, c's "state"
// (without its best valid bpc: another model's) and "hidden" with adam_m and adam_v
// (m->nparams each, backend memory).
void model_save_like(const char *path, const Model *m, const Ckpt *c, const real *adam_m, const real *adam_v);
// Builds the model stored in a checkpoint already read (its config, masks, weights and moving
// average) on a device, for verbs that read other sections too (export, prune): the file is
// read once. device and precision are a Device and a Precision, or CKPT_CHOICE for the
// checkpoint's own; on the CPU the checkpoint's precision reads as fp32, the CPU's only one.
#define CKPT_CHOICE (-1)
Model *model_from_ckpt(const Ckpt *c, int device, int precision);
// The same from a file, for inference (sample, eval, features): the weights are the
// checkpoint's moving average where it has one and raw is 0, else its weights; only that
// section is read, and the model keeps no moving average of its own.
Model *model_load_infer(const char *path, int device, int precision, int raw);
// The config stored in a checkpoint.
void ckpt_config(const Ckpt *c, Config *cfg);
// Copies a checkpoint's weights into m (same shapes required; dies naming what differs).
void model_load_weights(Model *m, const Ckpt *c);
// Restores the train state, Adam moments and carried state saved by model_save: rows
// [row0, row0 + a->B) of a saved state of `rows` rows (a data-parallel rank's share; dies
// unless the checkpoint holds `rows` rows).
void model_load_train_state(const Model *m, const Ckpt *c, TrainState *ts, real *adam_m,
                            real *adam_v, Acts *a, int row0, int rows);
// Reads the train state section only (for `info`); returns 0 if the checkpoint has none.
int ckpt_train_state(const Ckpt *c, TrainState *ts);
// Masks stored in a checkpoint: 2 per layer (W_h, W_x); caller frees with mask_free.
int ckpt_masks(const Ckpt *c, Mask *masks, int max_masks);
// The same (SW_MAX_MASKS at most), checked against cfg's layers and sizes (dies naming what differs).
int ckpt_masks_for(const Ckpt *c, const Config *cfg, Mask *masks);
// A section of exactly n fp32 values, uploaded to dst (backend memory); dies otherwise.
void ckpt_get_reals(const Ckpt *c, const char *tag, const Backend *be, real *dst, size_t n);

#ifdef __cplusplus
}
#endif
