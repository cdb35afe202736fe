// test_readme_commands.c: README.md's command blocks are run by tests/readme_commands.sh (in
// .ci/run); here, that it sees every fenced block of README.md, runs or skips each by the
// README's markers, applies its budgets, runs python blocks, and that a failing command fails
// the run.
#ifndef SW_DOUBLE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/common.h"
#include "test.h"

// A file a block wrote, or NULL.
static char *output_of(const char *path) { return access(path, R_OK) ? NULL : read_text_file(path, NULL, "block output"); }

// Fenced blocks of a Markdown file (its ``` lines, two a block).
static int fenced_blocks(const char *path) {
    char *text = read_text_file(path, NULL, "Markdown file");
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
    CHECK(chdir_repo_root());
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
    CHECK(chdir_repo_root());
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
        "## Six\n```python\nopen('six.txt', 'w').write('# 6')\n```\n"
        "## Seven\n```python\nimport sys\nsys.exit(3)\n```\n"
        "## Eight\n```text\nplain\n```\n";
    write_file(readme, text, strlen(text));
    static char out[1 << 14];
    snprintf(cmd, sizeof cmd, "bash tests/readme_commands.sh --block-seconds 2 %s 2>&1", readme);
    int rc = run_shell(cmd, out, sizeof out);
    CHECK_MSG(rc == 1, "exit %d:\n%s", rc, out);
    const char *sum = strstr(out, "\nreadme_commands: ");
    CHECK_MSG(sum && !strcmp(sum + 1, "readme_commands: 3 blocks run (One; Four; Six), 1 skipped (Two: not here), 4 failed "
                                      "(Three (exit 1): false; Five (still running after 2 s): sleep 30; "
                                      "Seven (exit 3): python3 (the block's 2 lines); "
                                      "Eight: not a shell or python block and no skip marker)\n"), "%s", out);
    char path[800];
    snprintf(path, sizeof path, "%s/one.txt", dir);
    CHECK_MSG(access(path, F_OK) == 0, "block One did not run in the README's folder");
    snprintf(path, sizeof path, "%s/skipped.txt", dir);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/never.txt", dir);
    CHECK_MSG(access(path, F_OK) != 0, "block Three went on after its failing command");
    snprintf(path, sizeof path, "%s/four.txt", dir);
    char *four = output_of(path);
    CHECK_MSG(four && !strcmp(four, "a # b\n"), "block Four: '%s'", four ? four : "(none)");
    free(four);
    snprintf(path, sizeof path, "%s/six.txt", dir);
    char *six = output_of(path);
    CHECK_MSG(six && !strcmp(six, "# 6"), "python block Six: '%s'", six ? six : "(none)");
    free(six);
    CHECK(strstr(out, "$ false\n"));   // each command printed before it runs
    CHECK(strstr(out, ">>> sys.exit(3)\n"));   // a python block's lines too
}
#endif
