// test_docs.c: the docs say what the code does. The docs name only files, folders and
// identifiers that exist, and README.md's Layout section names every folder. Each check also
// runs on a small made-up tree and text, where what must fail does. (The README's commands:
// test_readme_commands.c; the configs' headers: test_config_headers.c.)
//
// What counts (each miss is printed with its doc and line):
// - a path, in README.md and every docs/*.md but PERF_HISTORY.md (a history: it names files
//   that were): any run of [A-Za-z0-9_./*<>-] that starts with src/, cuda/, tests/, tools/,
//   python/, dev/, configs/ or docs/ (backticked or not; a trailing '.' or ',' ends it). It must
//   exist; one with '*' must match a file (glob); one with '<' (a template such as
//   src/ops/<op>_cpu.c) needs only its folder.
// In docs/ARCHITECTURE.md, the map of the code, also its backticked names:
// - a file name without such a prefix (ending .c .h .cu .cuh .py .sh .md .cfg, e.g.
//   `logreg.c`, `ops/backend.h`, `bsmm*.cu`): a file under src/ cuda/ tests/ tools/ python/
//   dev/ whose path ends so (a glob for '*').
// - an identifier: the whole span is [A-Za-z_][A-Za-z0-9_]*, optionally after `x->` and before
//   `()`, `[]` or `*`. It must occur as a whole word in the code of a source file under those
//   folders (this file aside): its comments do not count (// and /* */ in C and CUDA, a '#' at
//   a line's start or after a blank in Python and shell), its strings do (config keys are
//   strings). Or it names one of their files' stems. With `()` it must be declared or
//   defined: the word before it is a type or `def` (a prototype, a definition, a macro), not a
//   keyword such as `return`. With `*` some word or stem must start with it.
//   Spans holding spaces, '=', ':' or quotes, or starting with '-' or '#', are commands or
//   settings, not names, and are not checked (their paths are, by the first rule).
// - README.md's "## Layout" section names every folder as a path (`src/base`, `configs/`):
//   the repository's top folders and the folders in src/ cuda/ python/ tests/ tools/ docs/,
//   but hidden ones and those .gitignore names as folders (`/build/`, `__pycache__/`). Every
//   path the section names (a run of those characters holding a '/') exists.
#ifndef SW_DOUBLE
#include <ctype.h>
#include <dirent.h>
#include <fnmatch.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "test.h"

#define SELF "tests/test_docs.c"

// A set of strings: open addressing, grown at half load.
typedef struct { char **slot; size_t cap, n; } StrSet;

static size_t str_hash(const char *s, size_t len) {
    size_t h = 1469598103934665603u;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static void set_add(StrSet *s, const char *w, size_t len);

static void set_grow(StrSet *s) {
    StrSet t = {calloc(s->cap ? 2 * s->cap : 1024, sizeof(char *)), s->cap ? 2 * s->cap : 1024, 0};
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i]) set_add(&t, s->slot[i], strlen(s->slot[i])), free(s->slot[i]);
    free(s->slot);
    *s = t;
}

static int set_find(const StrSet *s, const char *w, size_t len, size_t *at) {
    if (!s->cap) return 0;
    size_t i = str_hash(w, len) & (s->cap - 1);
    while (s->slot[i] && (strlen(s->slot[i]) != len || memcmp(s->slot[i], w, len))) i = (i + 1) & (s->cap - 1);
    if (at) *at = i;
    return s->slot[i] != NULL;
}

static void set_add(StrSet *s, const char *w, size_t len) {
    if (2 * (s->n + 1) > s->cap) set_grow(s);
    size_t i = 0;
    if (set_find(s, w, len, &i)) return;
    s->slot[i] = strndup(w, len);
    s->n++;
}

static int set_has(const StrSet *s, const char *w) { return set_find(s, w, strlen(w), NULL); }

static int set_has_prefix(const StrSet *s, const char *p) {
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i] && !strncmp(s->slot[i], p, strlen(p))) return 1;
    return 0;
}

static void set_free(StrSet *s) {
    for (size_t i = 0; i < s->cap; i++) free(s->slot[i]);
    free(s->slot);
}

// What a tree's sources hold: the words of their code, the names declared or defined there,
// the files' paths (from the root) and stems.
typedef struct {
    const char *root;
    StrSet words, defined, paths, stems;
} Corpus;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(n + 1);
    b[fread(b, 1, n, f)] = 0;
    fclose(f);
    return b;
}

static int is_word(int c) { return isalnum(c) || c == '_'; }

static int ends_with(const char *s, const char *const *ext, size_t next) {
    size_t n = strlen(s);
    for (size_t i = 0; i < next; i++)
        if (n > strlen(ext[i]) && !strcmp(s + n - strlen(ext[i]), ext[i])) return 1;
    return 0;
}

static const char *const code_ext[] = {".c", ".h", ".cu", ".cuh", ".py", ".sh"};
static int source_file(const char *name) { return ends_with(name, code_ext, 6); }
static int c_like(const char *name) { return ends_with(name, code_ext, 4); }

// Blanks a source text's comments in place, newlines kept: // and /* */ where c is set, else
// a '#' at a line's start or after a blank (Python, shell). Strings stay, and a quote inside
// a comment opens none.
static void blank_comments(char *t, int c) {
    char quote = 0;
    for (char *p = t; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1] && p[1] != '\n') p++;
            else if (*p == quote || *p == '\n') quote = 0;
            continue;
        }
        if (*p == '"' || *p == '\'') quote = *p;
        else if (c && p[0] == '/' && p[1] == '*') {
            for (; *p && !(p[0] == '*' && p[1] == '/'); p++) if (*p != '\n') *p = ' ';
            if (!*p) return;
            p[0] = p[1] = ' ';
            p++;
        } else if (c ? p[0] == '/' && p[1] == '/' : *p == '#' && (p == t || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n')) {
            for (; *p && *p != '\n'; p++) *p = ' ';
            if (!*p) return;
        }
    }
}

// Words before a '(' that make it a call, not a declaration or definition.
static int keyword(const char *w, size_t n) {
    static const char *const kw[] = {"return", "else", "case", "sizeof", "if", "while", "for", "switch", "do", "goto",
                                     "defined", "not", "and", "or", "in", "is", "await", "yield", "assert", "raise",
                                     "elif", "with", "lambda", "new", "delete", "throw", "typeof", "alignof"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strlen(kw[i]) == n && !strncmp(kw[i], w, n)) return 1;
    return 0;
}

// The words of code (comments blanked); a word before '(' right after another word (blanks
// and '*' between: `Model *model_load(`, `def fit(`, `#define CHECK(`) is declared or defined.
static void add_words(Corpus *c, const char *text) {
    const char *prev = NULL;   // the last word, while only blanks and '*' follow it
    size_t prev_n = 0;
    for (const char *p = text; *p;) {
        if (!is_word(*p) || isdigit((unsigned char)*p)) {
            if (!isspace((unsigned char)*p) && *p != '*') prev = NULL;
            p++;
            continue;
        }
        const char *w = p;
        while (is_word(*p)) p++;
        set_add(&c->words, w, p - w);
        const char *q = p;
        while (*q == ' ') q++;
        if (*q == '(' && prev && !keyword(prev, prev_n)) set_add(&c->defined, w, p - w);
        prev = w, prev_n = p - w;
    }
}

// The source files below root/rel.
static void add_tree(Corpus *c, const char *rel) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", c->root, rel);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[1024], full[2048];
        snprintf(path, sizeof path, "%s/%s", rel, e->d_name);
        snprintf(full, sizeof full, "%s/%s", c->root, path);
        struct stat st;
        if (stat(full, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            add_tree(c, path);
            continue;
        }
        if (!source_file(e->d_name) || !strcmp(path, SELF)) continue;
        set_add(&c->paths, path, strlen(path));
        set_add(&c->stems, e->d_name, strcspn(e->d_name, "."));
        char *text = slurp(full);
        if (!text) continue;
        blank_comments(text, c_like(e->d_name));
        add_words(c, text);
        free(text);
    }
    closedir(d);
}

static Corpus corpus_of(const char *root) {
    Corpus c = {.root = root};
    const char *tops[] = {"src", "cuda", "tests", "tools", "python", "dev"};
    for (int i = 0; i < 6; i++) add_tree(&c, tops[i]);
    return c;
}

static void corpus_free(Corpus *c) {
    set_free(&c->words); set_free(&c->defined); set_free(&c->paths); set_free(&c->stems);
}

// Whether root/p exists (a glob for '*'); is_dir: and is a folder.
static int exists_in(const char *root, const char *p, int is_dir) {
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", root, p);
    if (strchr(p, '*')) {
        glob_t g;
        int ok = !glob(full, 0, NULL, &g) && g.gl_pathc > 0;
        globfree(&g);
        return ok;
    }
    struct stat st;
    return !stat(full, &st) && (!is_dir || S_ISDIR(st.st_mode));
}

static const char *tops[] = {"src/", "cuda/", "tests/", "tools/", "python/", "dev/", "configs/", "docs/"};

static int top_path(const char *p) {
    for (size_t i = 0; i < sizeof tops / sizeof tops[0]; i++)
        if (!strncmp(p, tops[i], strlen(tops[i]))) return 1;
    return 0;
}

// A path from the repository root.
static int path_ok(const char *root, const char *p) {
    const char *lt = strchr(p, '<');
    if (lt) {   // a template: its folder
        char dir[512];
        snprintf(dir, sizeof dir, "%.*s", (int)(lt - p), p);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        return exists_in(root, dir, 1);
    }
    return exists_in(root, p, 0);
}

// A file name, or a path below a top folder (e.g. ops/backend.h): some source path ends so.
static int file_ok(const Corpus *c, const char *name) {
    char pat[512];
    snprintf(pat, sizeof pat, "*/%s", name);
    for (size_t i = 0; i < c->paths.cap; i++)
        if (c->paths.slot[i] && !fnmatch(pat, c->paths.slot[i], 0)) return 1;
    return 0;
}

static int has_ext(const char *s) {
    static const char *const ext[] = {".c", ".h", ".cu", ".cuh", ".py", ".sh", ".md", ".cfg"};
    return ends_with(s, ext, sizeof ext / sizeof ext[0]);
}

// A document being checked: the count of what it names that is missing, each printed on out
// (NULL: the made-up cases, which must fail, print nothing).
typedef struct {
    const char *name;
    FILE *out;
    int bad;
} Doc;

// A miss at a line of the doc (its text), or of the doc as a whole (line 0: what says it all).
static void miss(Doc *d, int line, const char *what, const char *tok, const char *text) {
    d->bad++;
    if (!d->out) return;
    if (line) fprintf(d->out, "  %s:%d: %s `%s` not found: %.*s\n", d->name, line, what, tok, (int)strcspn(text, "\n"), text);
    else fprintf(d->out, "  %s: %s `%s`\n", d->name, what, tok);
}

#define PATH_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./*<>-"

static int path_char_before(const char *text, const char *p) {
    return p > text && (is_word(p[-1]) || strchr("/.-*<>", p[-1]));
}

// The run of path characters at p, less a trailing '.' or ',', into tok; its length.
static size_t path_token(const char *p, char *tok, size_t cap) {
    size_t n = strspn(p, PATH_CHARS), k = n;
    while (k && (p[k - 1] == '.' || p[k - 1] == ',')) k--;
    snprintf(tok, cap, "%.*s", (int)k, p);
    return n;
}

// The paths that start with a top folder, anywhere on the line.
static void check_line_paths(const Corpus *c, Doc *d, const char *text, int line) {
    for (const char *p = text; *p && *p != '\n'; p++) {
        if (path_char_before(text, p) || !top_path(p)) continue;
        char tok[512];
        p += path_token(p, tok, sizeof tok) - 1;
        if (!path_ok(c->root, tok)) miss(d, line, "path", tok, text);
    }
}

// One backticked span.
static void check_span(const Corpus *c, Doc *d, const char *span, int line, const char *text) {
    if (strpbrk(span, " =:\"'") || span[0] == '-' || span[0] == '#' || !span[0]) return;
    if (top_path(span)) return;   // check_line_paths has it
    if (has_ext(span)) {
        if (!file_ok(c, span)) miss(d, line, "file", span, text);
        return;
    }
    char id[256];
    const char *arrow = strstr(span, "->");
    snprintf(id, sizeof id, "%s", arrow ? arrow + 2 : span);
    size_t n = strlen(id);
    int call = n > 2 && !strcmp(id + n - 2, "()"), prefix = n > 1 && id[n - 1] == '*';
    if (call || (n > 2 && !strcmp(id + n - 2, "[]"))) id[n -= 2] = 0;
    if (prefix) id[--n] = 0;
    if (!n || isdigit((unsigned char)id[0])) return;
    for (size_t i = 0; i < n; i++)
        if (!is_word(id[i])) return;   // not an identifier (2^-8, 3xTF32, ...)
    int ok = prefix ? set_has_prefix(&c->words, id) || set_has_prefix(&c->stems, id)
         : call     ? set_has(&c->defined, id)
                    : set_has(&c->words, id) || set_has(&c->stems, id);
    if (!ok) miss(d, line, call ? "function" : "name", span, text);
}

// What doc `name` (its text) names that does not exist under c->root: its paths, and with
// names its backticked files and identifiers too. Returns the count of misses.
static int check_doc(const Corpus *c, const char *name, const char *text, int names, FILE *out) {
    Doc d = {name, out, 0};
    int line = 1;
    for (const char *p = text; *p; line++) {
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        check_line_paths(c, &d, p, line);
        for (const char *q = p; names && q < end;) {   // backticked spans
            const char *a = memchr(q, '`', end - q), *b = a ? memchr(a + 1, '`', end - a - 1) : NULL;
            if (!b) break;
            char span[256];
            snprintf(span, sizeof span, "%.*s", (int)(b - a - 1), a + 1);
            check_span(c, &d, span, line, p);
            q = b + 1;
        }
        p = *end ? end + 1 : end;
    }
    return d.bad;
}

// Whether .gitignore (its text) names rel (a folder, from the root) or its last part as a
// folder: a line "/rel/" or "NAME/".
static int ignored(const char *gitignore, const char *rel) {
    const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
    for (const char *p = gitignore; p && *p; p += strcspn(p, "\n"), p += *p == '\n') {
        size_t n = strcspn(p, "\n");
        if (n < 2 || p[n - 1] != '/') continue;
        const char *want = p[0] == '/' ? rel : base;
        size_t at = p[0] == '/';
        if (n - 1 - at == strlen(want) && !strncmp(p + at, want, n - 1 - at)) return 1;
    }
    return 0;
}

// The folders in root/rel ("" for the root) that a Layout must name, into out.
static void layout_folders(const char *root, const char *rel, const char *gitignore, StrSet *out) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", root, rel);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        if (e->d_name[0] == '.' || !exists_in(root, path, 1) || ignored(gitignore, path)) continue;
        set_add(out, path, strlen(path));
    }
    closedir(d);
}

// README's Layout section (its text) under root: each folder it must name and does not, and
// each path it names that does not exist. Returns the count of misses, each printed on out.
static int check_layout(const char *root, const char *readme, FILE *out) {
    Doc d = {"README.md", out, 0};
    const char *sec = strstr(readme, "\n## Layout\n");
    if (!sec) {
        miss(&d, 0, "no section", "## Layout", "");
        return d.bad;
    }
    sec += strlen("\n## Layout\n");
    const char *end = strstr(sec, "\n## ");
    size_t len = end ? (size_t)(end - sec) : strlen(sec);
    StrSet named = {0}, want = {0};
    for (const char *p = sec; p < sec + len; p++) {
        if (path_char_before(sec, p) || !strchr(PATH_CHARS, *p)) continue;
        char tok[512];
        size_t n = path_token(p, tok, sizeof tok);
        p += n - 1;
        size_t k = strlen(tok);
        if (!strchr(tok, '/')) continue;
        if (k > 1 && tok[k - 1] == '/') tok[--k] = 0;
        set_add(&named, tok, k);
        if (!path_ok(root, tok)) miss(&d, 0, "the Layout names a path that does not exist:", tok, "");
    }
    char gi[1024];
    snprintf(gi, sizeof gi, "%s/.gitignore", root);
    char *gitignore = slurp(gi);
    layout_folders(root, "", gitignore, &want);
    const char *inner[] = {"src", "cuda", "python", "tests", "tools", "docs"};
    for (int i = 0; i < 6; i++) layout_folders(root, inner[i], gitignore, &want);
    for (size_t i = 0; i < want.cap; i++)
        if (want.slot[i] && !set_has(&named, want.slot[i])) miss(&d, 0, "the Layout does not name the folder", want.slot[i], "");
    free(gitignore);
    set_free(&named);
    set_free(&want);
    return d.bad;
}

TEST(doc_architecture_names_exist) {
    CHECK(chdir_repo_root());
    Corpus c = corpus_of(".");
    char *doc = slurp("docs/ARCHITECTURE.md");
    CHECK_MSG(doc && c.words.n > 1000 && c.defined.n > 500, "docs/ARCHITECTURE.md or the sources were not read");
    int bad = check_doc(&c, "docs/ARCHITECTURE.md", doc, 1, stderr);
    free(doc);
    corpus_free(&c);
    CHECK_MSG(bad == 0, "docs/ARCHITECTURE.md names %d files or identifiers that do not exist (listed above)", bad);
}

TEST(doc_paths_exist) {
    CHECK(chdir_repo_root());
    Corpus c = corpus_of(".");
    glob_t g;
    CHECK(!glob("docs/*.md", 0, NULL, &g) && g.gl_pathc > 3);
    int bad = 0, read = 0;
    for (size_t i = 0; i <= g.gl_pathc; i++) {
        const char *name = i < g.gl_pathc ? g.gl_pathv[i] : "README.md";
        if (!strcmp(name, "docs/PERF_HISTORY.md")) continue;
        char *doc = slurp(name);
        read += doc != NULL;
        if (doc) bad += check_doc(&c, name, doc, 0, stderr);
        free(doc);
    }
    CHECK_EQ(read, (int)g.gl_pathc);   // all but the history, and README.md
    globfree(&g);
    corpus_free(&c);
    CHECK_MSG(bad == 0, "the docs name %d paths that do not exist (listed above)", bad);
}

TEST(doc_readme_layout_names_every_folder) {
    CHECK(chdir_repo_root());
    char *readme = slurp("README.md");
    CHECK(readme != NULL);
    int bad = check_layout(".", readme, stderr);
    free(readme);
    CHECK_MSG(bad == 0, "README.md's Layout section: %d folders not named or paths missing (listed above)", bad);
}

// A made-up tree under the test's folder: what the checks must pass and what they must flag.
static const char *sample_tree(void) {
    static char root[600];
    snprintf(root, sizeof root, "%s/doctree", test_tmpdir());
    char path[800];
    const char *dirs[] = {"", "/src", "/src/a", "/src/b", "/tools", "/tools/__pycache__", "/build"};
    for (int i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s%s", root, dirs[i]);
        mkdir(path, 0755);
    }
    const char *c_text =
        "// only_in_comment: a name a comment gives\n"
        "/* block_comment_name, over\n   two lines */\n"
        "static const char *key = \"a_key\";   // a string: \"in_string_comment\"\n"
        "int defined_fn(int x) { return x; }\n"
        "Model *star_fn(void);\n"
        "#define MACRO_FN(x) (x)\n"
        "int caller(void) { called_only(1); return return_called(2); }\n"
        "char q = '\"'; int after_quote;\n";
    const char *sh_text = "# sh_comment_name\necho \"# not a comment\" $# shell_word   # trailing_comment\n";
    snprintf(path, sizeof path, "%s/src/a/real.c", root);
    write_file(path, c_text, strlen(c_text));
    snprintf(path, sizeof path, "%s/src/b/b.h", root);
    write_file(path, "", 0);
    snprintf(path, sizeof path, "%s/tools/t.sh", root);
    write_file(path, sh_text, strlen(sh_text));
    snprintf(path, sizeof path, "%s/.gitignore", root);
    write_file(path, "/build/\n__pycache__/\n*.o\n", strlen("/build/\n__pycache__/\n*.o\n"));
    return root;
}

TEST(doc_checks_flag_what_does_not_exist) {
    const char *root = sample_tree();
    Corpus c = corpus_of(root);
    const char *pass[] = {"`defined_fn()`, `star_fn()` and `MACRO_FN()` in `real.c` (src/a/real.c, `a/real.c`)",
                          "`a_key`, `after_quote`, `shell_word`, `caller`, `called_only`, `real`, `defined*`",
                          "src/a/*.c, src/<x>/y.c, `src/b`, `x->defined_fn`, `key[]`, `-n 5`, `key = value`"};
    const char *flag[] = {"`only_in_comment`", "`block_comment_name`", "`in_string_comment`", "`sh_comment_name`",
                          "`trailing_comment`", "`called_only()`", "`return_called()`", "`gone.c`", "src/a/gone.c",
                          "see src/c.", "`no_such_name`", "`nosuch*`", "src/*/none.h"};
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
        CHECK_MSG(check_doc(&c, "pass", pass[i], 1, stderr) == 0, "flagged: %s", pass[i]);
    for (size_t i = 0; i < sizeof flag / sizeof flag[0]; i++)
        CHECK_MSG(check_doc(&c, "flag", flag[i], 1, NULL) == 1, "not flagged once: %s", flag[i]);
    CHECK_EQ(check_doc(&c, "paths only", "`no_such_name` src/a/gone.c", 0, NULL), 1);
    corpus_free(&c);
}

TEST(doc_layout_check_on_a_sample_tree) {
    const char *root = sample_tree();
    CHECK_EQ(check_layout(root, "# T\n## Layout\n\n- `src/`: `src/a` and `src/b/` (b.h).\n- `tools/`\n## Next\n- `cuda/x`\n", stderr), 0);
    CHECK_EQ(check_layout(root, "# T\n## Layout\n- `src/`: `src/a`\n- `tools/`\n", NULL), 1);                 // src/b not named
    CHECK_EQ(check_layout(root, "# T\n## Layout\n- `src/`: `src/a`, `src/b`, `src/c`\n- `tools/`\n", NULL), 1);  // src/c missing
    CHECK_EQ(check_layout(root, "# T\n## Layout\n- src/a, src/b and tools\n", NULL), 2);                 // src/, tools/ not named
    CHECK_EQ(check_layout(root, "# T\n## Layouts\n- `src/`\n", NULL), 1);                                // no section
}

#endif
