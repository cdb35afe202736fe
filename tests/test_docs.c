// test_docs.c: the docs say what the code does. docs/ARCHITECTURE.md names only files and
// identifiers that exist, and the configs' header comments carry no measured figures (those
// live in docs/PERF.md and docs/QUALITY.md, which the headers point to).
//
// What counts in ARCHITECTURE.md (each miss is printed with its doc line):
// - a path: any run of [A-Za-z0-9_./*<>+-] that starts with src/, cuda/, tests/, tools/,
//   python/, dev/, configs/ or docs/ (backticked or not; a trailing '.' or ',' ends it). It must exist; one
//   with '*' must match a file (glob); one with '<' (a template such as src/ops/<op>_cpu.c)
//   needs only its folder.
// - a backticked file name without such a prefix (ending .c .h .cu .cuh .py .sh .md .cfg,
//   e.g. `logreg.c`, `ops/backend.h`, `bsmm*.cu`): a file under src/ cuda/ tests/ tools/
//   python/ dev/ whose path ends so (a glob for '*').
// - a backticked identifier: the whole span is [A-Za-z_][A-Za-z0-9_]*, optionally after `x->`
//   and before `()`, `[]` or `*`. It must occur as a whole word in a source file under src/
//   cuda/ tests/ tools/ python/ dev/ (this file aside), or name one of their files' stems; with `()` it
//   must occur followed by '(' (a function); with `*` some word or stem must start with it.
//   Spans holding spaces, '=', ':' or quotes, or starting with '-' or '#', are commands or
//   settings, not names, and are not checked (their paths are, by the first rule).
//
// README.md's command blocks are run by tests/readme_commands.sh (in .ci/run); here, that it
// sees every fenced block of README.md, runs or skips each by the README's markers, applies its
// budgets, and that a failing command fails the run.
//
// A config header is its leading '#' lines. A measured figure there is a number followed
// (after at most one space, and an optional k or M) by a unit of time (us ms s min h),
// memory (GB GiB) or rate (chars/s bytes/s steps/s), or a number next to "bpc" (within three
// characters: "bpc 1.2", "1.2 bpc", "bpc: 1.2").
#ifndef SW_DOUBLE
#include <unistd.h>
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

// What the sources hold: every word, the words followed by '(', the files' paths and stems.
typedef struct { StrSet words, called, paths, stems; } Corpus;

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

static int source_file(const char *name) {
    static const char *ext[] = {".c", ".h", ".cu", ".cuh", ".py", ".sh"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (n > strlen(ext[i]) && !strcmp(name + n - strlen(ext[i]), ext[i])) return 1;
    return 0;
}

static void add_words(Corpus *c, const char *text) {
    for (const char *p = text; *p;) {
        if (!is_word(*p) || isdigit((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *w = p;
        while (is_word(*p)) p++;
        set_add(&c->words, w, p - w);
        const char *q = p;
        while (*q == ' ') q++;
        if (*q == '(') set_add(&c->called, w, p - w);
    }
}

static void add_tree(Corpus *c, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            add_tree(c, path);
            continue;
        }
        if (!source_file(e->d_name) || !strcmp(path, SELF)) continue;
        set_add(&c->paths, path, strlen(path));
        set_add(&c->stems, e->d_name, strcspn(e->d_name, "."));
        char *text = slurp(path);
        if (text) add_words(c, text);
        free(text);
    }
    closedir(d);
}

// Tests run from the repository root (make test, tests/run.sh); a run from tests/ or a build
// folder finds it one or two levels up.
static int find_root(void) {
    for (int up = 0; up < 3; up++) {
        struct stat st;
        if (!stat("docs/ARCHITECTURE.md", &st) && !stat("src", &st)) return 1;
        if (chdir("..")) return 0;
    }
    return 0;
}

static int exists(const char *p) {
    struct stat st;
    return !stat(p, &st);
}

static int glob_matches(const char *pattern) {
    glob_t g;
    int ok = !glob(pattern, 0, NULL, &g) && g.gl_pathc > 0;
    globfree(&g);
    return ok;
}

static const char *tops[] = {"src/", "cuda/", "tests/", "tools/", "python/", "dev/", "configs/", "docs/"};

static int top_path(const char *p) {
    for (size_t i = 0; i < sizeof tops / sizeof tops[0]; i++)
        if (!strncmp(p, tops[i], strlen(tops[i]))) return 1;
    return 0;
}

// A path from the repository root.
static int path_ok(const char *p) {
    const char *lt = strchr(p, '<');
    if (lt) {   // a template: its folder
        char dir[512];
        snprintf(dir, sizeof dir, "%.*s", (int)(lt - p), p);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        return exists(dir);
    }
    return strchr(p, '*') ? glob_matches(p) : exists(p);
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
    static const char *ext[] = {".c", ".h", ".cu", ".cuh", ".py", ".sh", ".md", ".cfg"};
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (n > strlen(ext[i]) && !strcmp(s + n - strlen(ext[i]), ext[i])) return 1;
    return 0;
}

static void miss(int *bad, int line, const char *what, const char *tok, const char *text) {
    fprintf(stderr, "  docs/ARCHITECTURE.md:%d: %s `%s` not found: %.*s\n", line, what, tok, (int)strcspn(text, "\n"), text);
    ++*bad;
}

// The paths that start with a top folder, anywhere on the line.
static void check_line_paths(const char *text, int line, int *bad) {
    for (const char *p = text; *p && *p != '\n'; p++) {
        if (p > text && (is_word(p[-1]) || p[-1] == '/' || p[-1] == '.' || p[-1] == '-')) continue;
        if (!top_path(p)) continue;
        size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./*<>+-");
        while (n && (p[n - 1] == '.' || p[n - 1] == ',')) n--;
        char tok[512];
        snprintf(tok, sizeof tok, "%.*s", (int)n, p);
        if (!path_ok(tok)) miss(bad, line, "path", tok, text);
        p += n - 1;
    }
}

// One backticked span.
static void check_span(const Corpus *c, const char *span, int line, const char *text, int *bad) {
    if (strpbrk(span, " =:\"'") || span[0] == '-' || span[0] == '#' || !span[0]) return;
    if (top_path(span)) return;   // check_line_paths has it
    if (has_ext(span)) {
        if (!file_ok(c, span)) miss(bad, line, "file", span, text);
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
         : call     ? set_has(&c->called, id)
                    : set_has(&c->words, id) || set_has(&c->stems, id);
    if (!ok) miss(bad, line, call ? "function" : "name", span, text);
}

TEST(doc_architecture_names_exist) {
    CHECK_MSG(find_root(), "the repository root (docs/ARCHITECTURE.md beside src/) is not the working directory or above it");
    Corpus c = {0};
    const char *roots[] = {"src", "cuda", "tests", "tools", "python", "dev"};
    for (int i = 0; i < 6; i++) add_tree(&c, roots[i]);
    char *doc = slurp("docs/ARCHITECTURE.md");
    CHECK_MSG(doc && c.words.n > 1000, "docs/ARCHITECTURE.md or the sources were not read");
    int bad = 0, line = 1;
    for (const char *p = doc; *p; line++) {
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        check_line_paths(p, line, &bad);
        for (const char *q = p; q < end;) {   // backticked spans
            const char *a = memchr(q, '`', end - q), *b = a ? memchr(a + 1, '`', end - a - 1) : NULL;
            if (!b) break;
            char span[256];
            snprintf(span, sizeof span, "%.*s", (int)(b - a - 1), a + 1);
            check_span(&c, span, line, p, &bad);
            q = b + 1;
        }
        p = *end ? end + 1 : end;
    }
    free(doc);
    set_free(&c.words); set_free(&c.called); set_free(&c.paths); set_free(&c.stems);
    CHECK_MSG(bad == 0, "docs/ARCHITECTURE.md names %d files or identifiers that do not exist (listed above)", bad);
}

// The unit after a number at s, if it makes the number a measured figure.
static int measured_unit(const char *s) {
    static const char *unit[] = {"us", "ms", "s", "min", "h", "GB", "GiB", "chars/s", "bytes/s", "steps/s"};
    if (*s == ' ') s++;
    if ((*s == 'k' || *s == 'M') && s[1] == ' ') s += 2;
    for (size_t i = 0; i < sizeof unit / sizeof unit[0]; i++) {
        size_t n = strlen(unit[i]);
        if (!strncmp(s, unit[i], n) && !is_word(s[n])) return 1;
    }
    return 0;
}

// A measured figure on one header line: its position, or NULL.
static const char *figure_in(const char *line, size_t len) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    for (char *p = buf; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > buf && (is_word(p[-1]) || p[-1] == '.'))) continue;
        char *e = p;
        while (isdigit((unsigned char)*e) || ((*e == '.' || *e == ',') && isdigit((unsigned char)e[1]))) e++;
        if (measured_unit(e)) return line + (p - buf);
        for (const char *b = p - 1; b >= buf && b >= p - 6; b--)   // "bpc 1.2", "bpc: 1.2"
            if (!strncmp(b, "bpc", 3) && p - (b + 3) <= 3) return line + (p - buf);
        if (!strncmp(e + (*e == ' '), "bpc", 3)) return line + (p - buf);
        p = e - 1;
    }
    return NULL;
}

TEST(doc_config_headers_carry_no_figures) {
    CHECK_MSG(find_root(), "the repository root (docs/ARCHITECTURE.md beside src/) is not the working directory or above it");
    glob_t g;
    CHECK_MSG(!glob("configs/*.cfg", 0, NULL, &g) && g.gl_pathc > 0, "no configs/*.cfg");
    int bad = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *text = slurp(g.gl_pathv[i]);
        int line = 1;
        for (const char *p = text; p && *p == '#'; line++) {
            size_t len = strcspn(p, "\n");
            const char *f = figure_in(p, len);
            if (f) {
                fprintf(stderr, "  %s:%d: a measured figure at column %d (figures go in docs/PERF.md or docs/QUALITY.md): %.*s\n",
                        g.gl_pathv[i], line, (int)(f - p) + 1, (int)len, p);
                bad++;
            }
            p += len + (p[len] == '\n');
        }
        free(text);
    }
    globfree(&g);
    CHECK_MSG(bad == 0, "%d config header lines carry measured figures (listed above)", bad);
}

// The rules themselves, on lines they must and must not flag.
TEST(doc_figure_rule_on_sample_lines) {
    const char *flagged[] = {"# 40 ms a step", "# 3000 steps in 121 s (38 ms/step, 27k chars/s)", "# 356 k chars/s",
                             "# valid bpc 2.438", "# reaches 1.4-1.5 bpc", "# peak 5.4 GiB", "# about 4.2 min"};
    const char *clean[] = {"# H = 8192, 32x32 blocks, Barabasi-Albert m = 7 (5.8% of the blocks)", "# 34.32M parameters",
                           "# 3000 steps, 4 GPUs (--gpus=4 --batch_size=512)", "# bpc: docs/QUALITY.md", "# split 90e6 / 5e6"};
    for (size_t i = 0; i < sizeof flagged / sizeof flagged[0]; i++)
        CHECK_MSG(figure_in(flagged[i], strlen(flagged[i])), "not flagged: %s", flagged[i]);
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++)
        CHECK_MSG(!figure_in(clean[i], strlen(clean[i])), "flagged: %s", clean[i]);
}

// Fenced blocks of a Markdown file (its ``` lines, two a block).
static int fenced_blocks(const char *path) {
    char *text = slurp(path);
    int fences = 0;
    for (const char *p = text; p && *p; p += strcspn(p, "\n"), p += *p == '\n')
        if (!strncmp(p + strspn(p, " \t"), "```", 3)) fences++;
    free(text);
    return fences / 2;
}

static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) n++;
    return n;
}

TEST(doc_readme_commands_sees_every_block) {
    CHECK_MSG(find_root(), "the repository root (docs/ARCHITECTURE.md beside src/) is not the working directory or above it");
    static char out[1 << 16];
    int rc = run_shell("bash tests/readme_commands.sh --list README.md 2>&1", out, sizeof out);
    CHECK_MSG(rc == 0, "readme_commands.sh --list exit %d:\n%s", rc, out);
    int blocks = fenced_blocks("README.md");
    CHECK(blocks >= 8);
    CHECK_MSG(count_of(out, "\n== ") + !strncmp(out, "== ", 3) == blocks, "%d blocks in README.md, listed:\n%s", blocks, out);
    CHECK_MSG(count_of(out, "): runs\n") + count_of(out, "): skipped: ") == blocks, "each block runs or is skipped:\n%s", out);
    // the quick start runs with its training cut short, every training command too
    CHECK_MSG(strstr(out, "== Quick start (README.md:") && strstr(out, "$ bash data/quickstart.sh --max_steps=50"), "%s", out);
    CHECK_MSG(strstr(out, "$ ./swlstm train configs/tiny.cfg --out_dir checkpoints/tiny_b --max_steps=50   # "), "%s", out);
    CHECK_MSG(strstr(out, "$ ./swlstm train --help   #"), "train --help gets no budget:\n%s", out);
    CHECK_MSG(strstr(out, "\nreadme_commands: ") && strstr(out, " 0 failed\n"), "no summary line:\n%s", out);
}

TEST(doc_readme_commands_failing_block_fails) {
    CHECK_MSG(find_root(), "the repository root (docs/ARCHITECTURE.md beside src/) is not the working directory or above it");
    char dir[600], readme[700], cmd[1600];
    snprintf(dir, sizeof dir, "%s/readme", test_tmpdir());
    snprintf(readme, sizeof readme, "%s/README.md", dir);
    CHECK(mkdir(dir, 0755) == 0);
    const char *text =
        "# T\n## One\n```sh\necho one > one.txt\n```\n"
        "## Two\n<!-- readme_commands: skip: not here -->\n\n```sh\ntouch skipped.txt\n```\n"
        "## Three\n```sh\n# a comment\ntrue   # runs\nfalse\ntouch never.txt\n```\n"
        "## Four\n```bash\necho \"a # b\" \\\n   > four.txt\n```\n"
        "## Five\n```sh\nsleep 30\n```\n"
        "## Six\n```python\nprint(1)\n```\n";
    write_file(readme, text, strlen(text));
    static char out[1 << 14];
    snprintf(cmd, sizeof cmd, "bash tests/readme_commands.sh --block-seconds 2 %s 2>&1", readme);
    int rc = run_shell(cmd, out, sizeof out);
    CHECK_MSG(rc == 1, "exit %d:\n%s", rc, out);
    const char *sum = strstr(out, "\nreadme_commands: ");
    CHECK_MSG(sum && !strcmp(sum + 1, "readme_commands: 2 blocks run (One; Four), 1 skipped (Two: not here), 3 failed "
                                      "(Three (exit 1): false; Five (still running after 2 s): sleep 30; "
                                      "Six: not a shell block and no skip marker)\n"), "%s", out);
    char path[800];
    snprintf(path, sizeof path, "%s/one.txt", dir);
    CHECK_MSG(access(path, F_OK) == 0, "block One did not run in the README's folder");
    snprintf(path, sizeof path, "%s/skipped.txt", dir);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/never.txt", dir);
    CHECK_MSG(access(path, F_OK) != 0, "block Three went on after its failing command");
    snprintf(path, sizeof path, "%s/four.txt", dir);
    char *four = slurp(path);
    CHECK_MSG(four && !strcmp(four, "a # b\n"), "block Four: '%s'", four ? four : "(none)");
    free(four);
    CHECK(strstr(out, "$ false\n"));   // each command printed before it runs
}
#endif
