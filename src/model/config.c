// config.c: one table of keys drives defaults, parsing (files, --key=value, checkpoint text),
// canonical printing and help, so a new Config field is one new row.
#include "model/config.h"
#include "base/common.h"
#include "base/suggest.h"
#include "sparse/mask.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { T_INT, T_LONG, T_DOUBLE, T_BOOL, T_STR, T_CHOICE } KeyType;
typedef enum { R_ANY, R_POS, R_NONNEG, R_UNIT, R_DENSITY } Range;  // R_UNIT: [0, 1); R_DENSITY: (0, 1]

typedef struct {
    const char *name;
    KeyType type;
    size_t off, size;
    Range range;
    const char *def;      // default, as text: defaults go through the same parser as files
    const char *help;
    const char *const *names;  // T_CHOICE: the enum's names in its order, NULL-terminated
} Key;

#define KEY(f, type, range, def, help, names) \
    {#f, type, offsetof(Config, f), sizeof(((Config *)0)->f), range, def, help, names}

static const char *const DEVICES[] = {"cpu", "cuda", NULL};
static const char *const PRECISIONS[] = {"fp32", "bf16", NULL};
static const char *const ENGINES[] = {"auto", "steps", "wgmma", NULL};
static const char *const CELLS[] = {"lstm", "mlstm", NULL};
static const char *const INITS[] = {"uniform", "identity", NULL};
static const char *const SCHEDULES[] = {"constant", "cosine", "linear", NULL};
static const char *const NAN_POLICIES[] = {"stop", "skip", NULL};
static const char *const MASK_UPDATES[] = {"none", "set", "rigl", NULL};

static const Key keys[] = {
    KEY(data, T_STR, R_ANY, "data/corpus.txt", "corpus: raw file, .gz or single-entry .zip (bash data/get_corpus.sh puts the quick start's corpus at the default)", NULL),
    KEY(split, T_STR, R_ANY, "0.9,0.05,0.05", "train,valid,test as fractions or byte counts", NULL),
    KEY(out_dir, T_STR, R_ANY, "checkpoints/run", "run directory: checkpoints and log.jsonl", NULL),
    KEY(device, T_CHOICE, R_ANY, "cpu", "where to train", DEVICES),
    KEY(precision, T_CHOICE, R_ANY, "fp32", "matmul precision (bf16 needs cuda)", PRECISIONS),
    KEY(init_from, T_STR, R_ANY, "", "checkpoint to take the weights and masks from (\"\" = random init)", NULL),
    KEY(seed, T_LONG, R_NONNEG, "1337", "seed of the init and other randomness", NULL),
    KEY(threads, T_INT, R_NONNEG, "0", "CPU threads (0 = all cores)", NULL),
    KEY(hidden_size, T_INT, R_POS, "256", "LSTM units per layer (a multiple of block_size)", NULL),
    KEY(num_layers, T_INT, R_POS, "1", "stacked LSTM layers", NULL),
    KEY(embed_size, T_INT, R_POS, "64", "byte embedding width", NULL),
    KEY(block_size, T_INT, R_POS, "16", "sparsity block edge: 8, 16 or 32", NULL),
    KEY(sparsity, T_STR, R_ANY, "dense", "mask of W_h: dense, random_<d>, ba_<m>, ws_<k>_<p>", NULL),
    KEY(input_sparsity, T_STR, R_ANY, "", "mask of W_x above layer 0 (\"\" = same as sparsity)", NULL),
    KEY(mask_seed, T_LONG, R_NONNEG, "1", "seed of the sparsity masks", NULL),
    KEY(engine, T_CHOICE, R_ANY, "auto", "recurrent path: auto = the fused engine wherever it takes the layer (CUDA, block 32), steps = per-step ops, wgmma = auto with layer 0's forward steps, backward data steps and weight gradient on Hopper's warpgroup products where they run it (bf16, sm_90, no layer norm, a sparse mask, batches of a multiple of 128); the mlstm runs per-step ops, which CUDA replays as one launch per window and direction except with steps", ENGINES),
    KEY(layer_norm, T_BOOL, R_ANY, "false", "layer-normalise the gate pre-activations (mlstm always does)", NULL),
    KEY(cell, T_CHOICE, R_ANY, "lstm", "recurrent cell: lstm, or mlstm (multiplicative, depth internal steps, layer norm)", CELLS),
    KEY(depth, T_INT, R_POS, "4", "mlstm internal steps per time step (>= 2), each with its own mask", NULL),
    KEY(init, T_CHOICE, R_ANY, "uniform", "recurrent matrices (lstm W_h, mlstm W_hj): uniform +-1/sqrt(fan_in), or identity (I on diagonal blocks)", INITS),
    KEY(ema, T_DOUBLE, R_UNIT, "0", "moving-average decay of the weights, used by evals, eval, sample, features (0 = off)", NULL),
    KEY(batch_size, T_INT, R_POS, "32", "sequences per step (data stripes)", NULL),
    KEY(seq_length, T_INT, R_POS, "64", "truncated BPTT steps per update", NULL),
    KEY(learning_rate, T_DOUBLE, R_POS, "2e-3", "peak learning rate", NULL),
    KEY(min_lr, T_DOUBLE, R_NONNEG, "0", "floor of the cosine/linear decay", NULL),
    KEY(lr_schedule, T_CHOICE, R_ANY, "cosine", "decay after warmup", SCHEDULES),
    KEY(warmup_steps, T_LONG, R_NONNEG, "0", "linear warmup steps", NULL),
    KEY(max_steps, T_LONG, R_POS, "1000", "training steps", NULL),
    KEY(beta1, T_DOUBLE, R_UNIT, "0.9", "Adam first-moment decay", NULL),
    KEY(beta2, T_DOUBLE, R_UNIT, "0.999", "Adam second-moment decay", NULL),
    KEY(adam_eps, T_DOUBLE, R_POS, "1e-8", "Adam epsilon", NULL),
    KEY(weight_decay, T_DOUBLE, R_NONNEG, "0", "decoupled weight decay (AdamW)", NULL),
    KEY(grad_clip, T_DOUBLE, R_NONNEG, "1.0", "global gradient-norm clip (0 = off)", NULL),
    KEY(nan_policy, T_CHOICE, R_ANY, "stop", "on a non-finite loss: stop, or skip the step", NAN_POLICIES),
    KEY(prune_to, T_DOUBLE, R_DENSITY, "1", "gradual pruning: the fraction of each matrix's drawn blocks kept from prune_end on, by smallest block norm on a cubic schedule (1 = off)", NULL),
    KEY(prune_start, T_LONG, R_NONNEG, "0", "gradual pruning: the step it starts at", NULL),
    KEY(prune_end, T_LONG, R_NONNEG, "0", "gradual pruning: the step it reaches prune_to at (after prune_start)", NULL),
    KEY(prune_every, T_LONG, R_POS, "100", "gradual pruning: steps between prunings", NULL),
    KEY(mask_update, T_CHOICE, R_ANY, "none", "learned masks at a fixed block count: every mask_update_every steps drop the smallest blocks and regrow as many at random (set) or where the gradient is largest (rigl)", MASK_UPDATES),
    KEY(mask_update_every, T_LONG, R_POS, "100", "steps between mask updates", NULL),
    KEY(mask_update_frac, T_DOUBLE, R_UNIT, "0.3", "fraction of each matrix's blocks a mask update moves, decaying as a cosine to 0 at mask_update_end", NULL),
    KEY(mask_update_end, T_LONG, R_NONNEG, "0", "the step after which masks stay (0 = 3/4 of max_steps)", NULL),
    KEY(log_every, T_LONG, R_NONNEG, "10", "steps between progress lines (0 = none)", NULL),
    KEY(eval_every, T_LONG, R_NONNEG, "200", "steps between validation evals (0 = none)", NULL),
    KEY(eval_bytes, T_LONG, R_NONNEG, "0", "validation bytes per eval (0 = whole valid split)", NULL),
    KEY(save_every, T_LONG, R_NONNEG, "0", "steps between checkpoints (0 = only at evals and the end)", NULL),
    KEY(gpus, T_INT, R_POS, "1", "GPUs this process trains on, one rank each (data parallel)", NULL),
    KEY(dist_init, T_STR, R_ANY, "", "several processes: file:///shared/path or tcp://host:port of rank 0 (\"\" = SWLSTM_DIST_INIT)", NULL),
    KEY(dist_token, T_STR, R_ANY, "", "tcp:// beyond this machine: a file holding the ranks' shared secret (\"\" = SWLSTM_DIST_TOKEN, the secret itself)", NULL),
    KEY(dist_bucket_mb, T_DOUBLE, R_POS, "25", "gradient all-reduce bucket size in MiB", NULL),
};
#define NKEYS (int)(sizeof keys / sizeof keys[0])

// ---------------------------------------------------------------------------------------------
// keys and values

static const Key *find_key(const char *name, const char *where) {
    for (int i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i].name, name)) return &keys[i];
    const char *names[NKEYS], *near;
    for (int i = 0; i < NKEYS; i++) names[i] = keys[i].name;
    if ((near = suggest_name(name, names, NKEYS))) die("%s: unknown key '%s' (did you mean '%s'?)", where, name, near);
    die("%s: unknown key '%s' (swlstm train --help lists the keys)", where, name);
}

// "one of a, b, c" for a choice key's names.
static const char *names_list(const char *const *names, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "one of");
    for (int i = 0; names[i] && len < n; i++) len += (size_t)snprintf(buf + len, n - len, "%s %s", i ? "," : "", names[i]);
    return buf;
}

// What a key accepts, for error messages: "a positive integer", "one of cpu, cuda", ...
static const char *expected(const Key *k, char *buf, size_t n) {
    static const char *ints[] = {"an integer", "a positive integer", "a non-negative integer", "", ""};
    static const char *reals[] = {"a finite number", "a number > 0", "a number >= 0", "a number in [0, 1)", "a fraction in (0, 1]"};
    switch (k->type) {
    case T_INT:
    case T_LONG: return ints[k->range];
    case T_DOUBLE: return reals[k->range];
    case T_BOOL: return "true or false (also 1/0, yes/no)";
    case T_CHOICE: return names_list(k->names, buf, n);
    case T_STR: snprintf(buf, n, "a string of at most %zu bytes without newlines", k->size - 1); return buf;
    }
    return "";
}

static int in_range(const Key *k, double v) {
    switch (k->range) {
    case R_POS: return v > 0;
    case R_NONNEG: return v >= 0;
    case R_UNIT: return v >= 0 && v < 1;
    case R_DENSITY: return v > 0 && v <= 1;
    default: return 1;
    }
}

static int choice_index(const char *const *names, const char *v) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], v)) return i;
    return -1;
}

// Values a checkpoint may hold that are no longer offered, and what they now read as.
static int saved_text;  // set while config_from_saved_text parses
static const char *legacy_value(const Key *k, const char *v) {
    static const struct { const char *key, *old, *now; } legacy[] = {
        {"engine", "on", "auto"},
        {"engine", "persistent", "auto"},
    };
    for (size_t i = 0; saved_text && i < sizeof legacy / sizeof legacy[0]; i++)
        if (!strcmp(k->name, legacy[i].key) && !strcmp(v, legacy[i].old)) return legacy[i].now;
    return v;
}

static int parse_bool(const char *v, int *out) {
    static const char *yes[] = {"true", "1", "yes"}, *no[] = {"false", "0", "no"};
    for (int i = 0; i < 3; i++) {
        if (!strcasecmp(v, yes[i])) return *out = 1, 1;
        if (!strcasecmp(v, no[i])) return *out = 0, 1;
    }
    return 0;
}

// Parses v into the field; returns 0 if v is malformed or out of range.
static int store(Config *c, const Key *k, const char *v) {
    char *field = (char *)c + k->off, *end;
    errno = 0;
    if (k->type == T_INT || k->type == T_LONG) {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || !in_range(k, (double)x)) return 0;
        if (k->type == T_INT && (x < INT_MIN || x > INT_MAX)) return 0;
        if (k->type == T_INT) *(int *)field = (int)x;
        else *(long *)field = x;
    } else if (k->type == T_DOUBLE) {
        double x = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(x) || !in_range(k, x)) return 0;
        *(double *)field = x;
    } else if (k->type == T_BOOL) {
        return parse_bool(v, (int *)field);
    } else if (k->type == T_CHOICE) {
        int i = choice_index(k->names, legacy_value(k, v));
        if (i < 0) return 0;
        *(int *)field = i;
    } else {
        if (strlen(v) >= k->size || strchr(v, '\n')) return 0;
        memset(field, 0, k->size);  // zero tail: configs compare and round-trip bytewise
        memcpy(field, v, strlen(v));
    }
    return 1;
}

void config_set(Config *c, const char *key, const char *value, const char *where) {
    if (!where) where = "config";
    const Key *k = find_key(key, where);
    char buf[128];
    if (!store(c, k, value)) die("%s: key '%s' = '%s': expected %s", where, key, value, expected(k, buf, sizeof buf));
}

void config_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < NKEYS; i++) config_set(c, keys[i].name, keys[i].def, "built-in defaults");
}

// ---------------------------------------------------------------------------------------------
// text: `key = value` lines

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    *e = 0;
    return s;
}

// Unquotes "..." in place (escapes \" and \\); returns 0 on an unterminated string or on
// anything but a comment after the closing quote.
static int unquote(char *v) {
    char *w = v;
    const char *r = v + 1;
    for (; *r && *r != '"'; r++) {
        if (*r == '\\' && (r[1] == '"' || r[1] == '\\')) r++;
        *w++ = *r;
    }
    if (*r != '"') return 0;
    r++;
    r += strspn(r, " \t\r");
    *w = 0;
    return *r == 0 || *r == '#';
}

static void parse_line(Config *c, char *line, const char *loc) {
    char *s = trim(line);
    if (*s == 0 || *s == '#') return;
    char *eq = strchr(s, '='), *hash = strchr(s, '#');
    if (!eq || (hash && hash < eq)) {
        if (hash) *hash = 0;
        die("%s: expected 'key = value', got '%s'", loc, trim(s));
    }
    *eq = 0;
    char *key = trim(s), *v = eq + 1;
    v += strspn(v, " \t");
    if (*v == '"') {
        if (!unquote(v)) die("%s: key '%s': bad quoted string (unterminated, or text after the closing quote)", loc, key);
    } else {
        v[strcspn(v, "#")] = 0;
        v = trim(v);
    }
    if (*key == 0) die("%s: expected 'key = value', got an empty key", loc);
    config_set(c, key, v, loc);
}

void config_from_text(Config *c, const char *text, const char *where) {
    char *buf = xstrdup(text), *line = buf, loc[CFG_STR + 32];
    for (int lineno = 1; line; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        snprintf(loc, sizeof loc, "%s:%d", where, lineno);
        parse_line(c, line, loc);
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
}

void config_from_saved_text(Config *c, const char *text, const char *where) {
    saved_text = 1;
    config_from_text(c, text, where);
    saved_text = 0;
}

static const Key *choice_key(const char *key) {
    const Key *k = find_key(key, "config_choice");
    if (k->type != T_CHOICE) die("internal: config key '%s' is not a choice", key);
    return k;
}

int config_parse_choice(const char *key, const char *value, const char *where) {
    const Key *k = choice_key(key);
    char buf[128];
    int i = choice_index(k->names, value);
    if (i < 0) die("%s = '%s': expected %s", where, value, names_list(k->names, buf, sizeof buf));
    return i;
}

const char *config_choice_name(const char *key, int value) { return choice_key(key)->names[value]; }

void config_load_file(Config *c, const char *path) {
    char *text = read_text_file(path, NULL, "config file");
    config_from_text(c, text, path);
    free(text);
}

void config_apply_overrides(Config *c, int n, char **args) {
    for (int i = 0; i < n; i++) {
        const char *a = args[i], *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) || a[2] == 0 || a[2] == '=')
            die("command line: expected --key=value or --key value, got '%s'", a);
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a) - 2;
        const char *v = eq ? eq + 1 : i + 1 < n ? args[++i] : NULL;
        if (!v) die("command line: option '%s' needs a value", a);
        char key[128];
        if (len >= sizeof key) die("command line: key too long in '%s'", a);
        for (size_t j = 0; j < len; j++) key[j] = a[2 + j] == '-' ? '_' : a[2 + j];
        key[len] = 0;
        config_set(c, key, v, "command line");
    }
}

// Longest formatted value: a CFG_STR string with every byte escaped, quotes and NUL.
#define VALUE_MAX (2 * CFG_STR + 3)

// The shortest %g form that reads back as exactly x (0.9, not 0.90000000000000002).
static void format_double(double x, char out[VALUE_MAX]) {
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, VALUE_MAX, "%.*g", digits, x);
        if (strtod(out, NULL) == x) return;
    }
}

// One value as config text: strings quoted (with \" and \\ escaped), doubles exact.
static void format_value(const Config *c, const Key *k, char out[VALUE_MAX]) {
    const char *field = (const char *)c + k->off;
    switch (k->type) {
    case T_INT: snprintf(out, VALUE_MAX, "%d", *(const int *)field); return;
    case T_LONG: snprintf(out, VALUE_MAX, "%ld", *(const long *)field); return;
    case T_DOUBLE: format_double(*(const double *)field, out); return;
    case T_BOOL: snprintf(out, VALUE_MAX, "%s", *(const int *)field ? "true" : "false"); return;
    case T_CHOICE: snprintf(out, VALUE_MAX, "%s", k->names[*(const int *)field]); return;
    case T_STR: break;
    }
    *out++ = '"';
    for (const char *p = field; *p; p++) {
        if (*p == '"' || *p == '\\') *out++ = '\\';
        *out++ = *p;
    }
    *out++ = '"';
    *out = 0;
}

// Every key as "key = value" lines, or (json) as one JSON object: choices quoted, doubles with a
// '.' or an exponent (a reader gets a float), config text's string escapes being JSON's.
static char *config_write(const Config *c, int json) {
    size_t cap = 2, len = 0;
    char *text = xmalloc(cap), value[VALUE_MAX];
    for (int i = 0; i < NKEYS; i++) {
        const Key *k = &keys[i];
        format_value(c, k, value);
        int quote = json && k->type == T_CHOICE, point = json && k->type == T_DOUBLE && !strpbrk(value, ".e");
        size_t need = strlen(k->name) + strlen(value) + 12;
        if (len + need > cap) text = xrealloc(text, cap = 2 * (len + need));
        if (json) len += (size_t)snprintf(text + len, cap - len, "%s\"%s\": %s%s%s%s", i ? ", " : "{", k->name,
                                          quote ? "\"" : "", value, quote ? "\"" : "", point ? ".0" : "");
        else len += (size_t)snprintf(text + len, cap - len, "%s = %s\n", k->name, value);
    }
    if (json) snprintf(text + len, cap - len, "}");
    return text;
}

char *config_to_text(const Config *c) { return config_write(c, 0); }
char *config_to_json(const Config *c) { return config_write(c, 1); }

void config_print_help(void) {
    Config d;
    config_defaults(&d);
    printf("config keys (in a file: key = value; on the command line: --key=value or --key value):\n");
    for (int i = 0; i < NKEYS; i++) {
        char value[VALUE_MAX];
        format_value(&d, &keys[i], value);
        printf("  %-15s %s (default %s", keys[i].name, keys[i].help, value);
        if (keys[i].type == T_CHOICE) printf("; %s", names_list(keys[i].names, value, sizeof value));
        printf(")\n");
    }
}

// ---------------------------------------------------------------------------------------------
// cross-key checks

// mask_check_desc's message already quotes the descriptor; add the key and the layout size.
static void check_mask(const Config *c, const char *key, const char *desc) {
    char err[256] = "";
    int n = c->hidden_size / c->block_size;
    if (mask_check_desc(desc, n, n, err, sizeof err))
        die("%s: %s (hidden_size %d / block_size %d = %d blocks a side)", key, err, c->hidden_size,
            c->block_size, n);
}

// Gradual pruning needs a span; a mask update needs blocks missing from some mask.
static void check_learned_masks(const Config *c) {
    if (c->prune_to < 1 && c->prune_end <= c->prune_start)
        die("prune_end = %ld: expected a step after prune_start = %ld (prune_to = %g prunes between them)",
            c->prune_end, c->prune_start, c->prune_to);
    if (c->mask_update == MASK_UPDATE_NONE) return;
    int dense_x = !c->input_sparsity[0] || !strcmp(c->input_sparsity, "dense");
    if (!strcmp(c->sparsity, "dense") && (dense_x || c->num_layers == 1 || c->cell == CELL_MLSTM))
        die("mask_update = %s: sparsity = dense leaves no block to regrow (expected a sparse mask, or mask_update = none)",
            MASK_UPDATES[c->mask_update]);
    if (c->mask_update_end && c->mask_update_end < c->mask_update_every)
        die("mask_update_end = %ld: expected at least mask_update_every = %ld (no update would run)", c->mask_update_end, c->mask_update_every);
}

void config_validate(const Config *c) {
    if (c->block_size != 8 && c->block_size != 16 && c->block_size != 32)
        die("block_size = %d: expected 8, 16 or 32", c->block_size);
    if (c->hidden_size % c->block_size)
        die("hidden_size = %d is not a multiple of block_size = %d", c->hidden_size, c->block_size);
    if (c->num_layers < 1 || c->num_layers > SW_MAX_LAYERS)
        die("num_layers = %d: expected 1 to %d", c->num_layers, SW_MAX_LAYERS);
    if (!c->data[0]) die("data: empty path (expected a corpus file)");
    if (!c->out_dir[0]) die("out_dir: empty path (expected a run directory)");
    if (c->precision == PREC_BF16 && c->device != DEVICE_CUDA)
        die("precision = bf16 needs device = cuda (device = cpu)");
    if (c->gpus > 1 && c->device != DEVICE_CUDA)
        die("gpus = %d needs device = cuda (device = cpu)", c->gpus);
    if (c->batch_size % c->gpus)
        die("batch_size = %d is not divisible by gpus = %d: each GPU reads batch_size/gpus stripes", c->batch_size, c->gpus);
    if (c->min_lr > c->learning_rate)
        die("min_lr = %g is above learning_rate = %g", c->min_lr, c->learning_rate);
    if (c->warmup_steps > c->max_steps)
        die("warmup_steps = %ld is more than max_steps = %ld", c->warmup_steps, c->max_steps);
    if (c->depth < 2 || c->depth > SW_MAX_DEPTH)
        die("depth = %d: expected 2 to %d (the mlstm's internal steps)", c->depth, SW_MAX_DEPTH);
    check_mask(c, "sparsity", c->sparsity);
    if (c->input_sparsity[0]) check_mask(c, "input_sparsity", c->input_sparsity);
    check_learned_masks(c);
}
