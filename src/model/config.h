// config.h: training configuration, read from `key = value` files and --key=value flags.
#pragma once
#include "ops/device.h"
#ifdef __cplusplus
extern "C" {
#endif

#define CFG_STR 512

// The choice-valued keys, parsed once here; each enum's order is its key's list of names in
// config.c, which config_choice_name prints.
typedef enum { ENGINE_AUTO, ENGINE_STEPS, ENGINE_WGMMA } Engine;
typedef enum { CELL_LSTM, CELL_MLSTM } Cell;
typedef enum { INIT_UNIFORM, INIT_IDENTITY } Init;
typedef enum { LR_CONSTANT, LR_COSINE, LR_LINEAR } LrSchedule;
typedef enum { NAN_STOP, NAN_SKIP } NanPolicy;
typedef enum { MASK_UPDATE_NONE, MASK_UPDATE_SET, MASK_UPDATE_RIGL } MaskUpdate;

typedef struct {
    // data and run
    char data[CFG_STR];          // corpus path: raw, .gz or single-entry .zip
    char split[CFG_STR];         // "0.9,0.05,0.05" fractions or byte counts
    char out_dir[CFG_STR];       // run directory: checkpoints and log.jsonl
    Device device;
    Precision precision;         // bf16: cuda only
    char init_from[CFG_STR];     // checkpoint to take weights from ("" = none)
    long seed;                   // init and data-independent randomness
    int threads;                 // CPU threads (0 = all cores)
    // model
    int hidden_size, num_layers, embed_size, block_size;
    char sparsity[64];           // mask of W_h (and W_x above layer 0): dense|random_<d>|ba_<m>|ws_<k>_<p>
    char input_sparsity[64];     // mask of W_x above layer 0 ("" = same as sparsity)
    long mask_seed;
    int layer_norm;              // 0/1 (true/false in files)
    Engine engine;               // the recurrent engine or per-step ops (model.h engine_wanted)
    Cell cell;                   // mlstm: the paper's deep-update cell, src/model/mlstm_step.c
    int depth;                   // mlstm internal steps (>= 2), each with its own mask
    Init init;                   // identity: I on the diagonal blocks of recurrent matrices
    double ema;                  // decay of the weights' moving average (0 = off)
    // optimisation
    int batch_size, seq_length;
    double learning_rate, min_lr;        // min_lr: floor of cosine/linear decay (absolute)
    LrSchedule lr_schedule;
    long warmup_steps, max_steps;
    double beta1, beta2, adam_eps, weight_decay, grad_clip;
    NanPolicy nan_policy;
    // learned masks (src/train/train_masks.c)
    double prune_to;                     // gradual pruning's final fraction of the drawn blocks (1 = off)
    long prune_start, prune_end, prune_every;
    MaskUpdate mask_update;              // drop and regrow blocks every mask_update_every steps
    long mask_update_every, mask_update_end;
    double mask_update_frac;             // fraction of blocks moved at step 0, decaying to 0 at mask_update_end
    // logging, evaluation, checkpoints
    long log_every, eval_every, eval_bytes, save_every;
    // data parallel (docs/MULTIGPU.md)
    int gpus;                    // GPUs (ranks) of this process
    char dist_init[CFG_STR];     // how ranks of several processes find rank 0 ("" = SWLSTM_DIST_INIT)
    char dist_token[CFG_STR];    // a file holding the tcp:// rendezvous's shared secret ("" = SWLSTM_DIST_TOKEN)
    double dist_bucket_mb;       // all-reduce bucket size
} Config;

void config_defaults(Config *c);
// Loads a config file; errors name the file, line, key and value.
void config_load_file(Config *c, const char *path);
// Sets one key. `where` names the source for errors ("tiny.cfg:12", "command line").
// An unknown key is an error that names the closest known key.
void config_set(Config *c, const char *key, const char *value, const char *where);
// Applies command-line options, each "--key=value" or "--key" "value" (dashes read as '_').
void config_apply_overrides(Config *c, int n, char **args);
// Cross-key checks (block_size divides hidden_size, valid descriptors, ...). Dies on error.
void config_validate(const Config *c);
// Canonical text: every key as "key = value\n". Caller frees.
char *config_to_text(const Config *c);
// The same keys and values as one JSON object (caller frees): numbers, booleans and strings typed.
char *config_to_json(const Config *c);
// Parses text made by config_to_text (or any config text). `where` names its origin.
void config_from_text(Config *c, const char *text, const char *where);
// The same for a checkpoint's saved text, which may hold values that are no longer offered
// (engine = on or persistent, both read as auto).
void config_from_saved_text(Config *c, const char *text, const char *where);
// A choice key's value from its name (dies naming `where`, the key and the names it accepts),
// and its name from its value: for options of the verbs and for printing.
int config_parse_choice(const char *key, const char *value, const char *where);
const char *config_choice_name(const char *key, int value);
#define CFG_NAME(c, key) config_choice_name(#key, (int)(c)->key)
// Prints every key with its default and a one-line description.
void config_print_help(void);

#ifdef __cplusplus
}
#endif
