// test_config_headers.c: the configs' header comments carry no measured figures (those live
// in docs/PERF.md and docs/QUALITY.md, which the headers point to).
//
// A config header is its leading '#' lines. A measured figure there is a number followed
// (after at most one space, and an optional k or M) by a unit of time (us ms s min h),
// memory (GB GiB) or rate (chars/s bytes/s steps/s), or a number next to "bpc" (within three
// characters: "bpc 1.2", "1.2 bpc", "bpc: 1.2").
#ifndef SW_DOUBLE
#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "test.h"

static int is_word(int c) { return isalnum(c) || c == '_'; }

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
    CHECK(chdir_repo_root());
    glob_t g;
    CHECK_MSG(!glob("configs/*.cfg", 0, NULL, &g) && g.gl_pathc > 0, "no configs/*.cfg");
    int bad = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *text = read_text_file(g.gl_pathv[i], NULL, "config");
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
#endif
