// test_units.c: the sentiment-unit view: the HTML page of a unit's values (escaping, UTF-8,
// colours) and the units verb against a tiny model run byte by byte.
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include "model/model_io.h"
#include "features/unit_page.h"
#include "test.h"

Model *test_tiny_model(void);  // test_features.c: H = 32, one layer

static int count(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)); p++) n++;
    return n;
}

TEST(unit_page_escapes_and_keeps_utf8_whole) {
    const uint8_t text[] = "a<&\xc3\xa9\xff\n\x01\xe2\x82";  // é whole; 0xff and a cut-off sequence invalid
    size_t n = sizeof text - 1, len;
    float val[10] = {1, -0.5f, 0, 0.25f, -1, 2, 0.5f, -2, 1, 1};
    char *p = unit_page_html(text, n, val, "unit 3 <x>", &len);
    CHECK_EQ(strlen(p), len);
    CHECK(strstr(p, "<title>unit 3 &lt;x&gt;</title>"));
    CHECK_EQ(count(p, "<span"), 9);  // a < & é 0xff \n 0x01 0xe2 0x82
    CHECK(strstr(p, "title=\"byte 0: 1\">a</span>"));
    CHECK(strstr(p, ">&lt;</span>") && strstr(p, ">&amp;</span>"));
    CHECK(strstr(p, "<span style=\"background:#ff8080\" title=\"byte 4: -1\">\xc3\xa9</span>"));  // value after its last byte
    CHECK(strstr(p, "<span style=\"background:#00ff00\" title=\"byte 5: 2\">&#xFFFD;</span>"));  // the largest |value|: full green
    CHECK(strstr(p, "title=\"byte 7: -2\">&#x2401;</span>") && strstr(p, "background:#ff0000"));
    CHECK_EQ(count(p, "&#xFFFD;"), 3);
    CHECK(strstr(p, "colour scale: |value| 2 ="));
    free(p);
}

TEST(units_verb_matches_the_model_byte_by_byte) {
    Model *m = test_tiny_model();
    const char *ck = tmp_path("units.ckpt"), *text = "good & <bad>\n";
    model_save(ck, m, NULL, NULL, NULL, NULL);
    const char *in = write_file(tmp_path("units.txt"), text, strlen(text));
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "units %s --unit 5 --input %s --out %s", ck, in, tmp_path("u.html"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(!strstr(out, "units: "), "progress off a terminal without --progress: %s", out);
    size_t len;
    char *page = read_text_file(tmp_path("u.html"), &len, "page");
    CHECK_EQ(count(page, "<span"), (int)strlen(text));
    Infer *s = infer_create(m, 1, 0);
    infer_reset(m, s);
    float c[32];
    for (size_t t = 0; t < strlen(text); t++) {
        int tok = (unsigned char)text[t];
        infer_step(m, s, &tok, 1, NULL);
        infer_get(m, s, 0, 'c', 1, c);
        char want[64];
        snprintf(want, sizeof want, "title=\"byte %zu: %.4g\">", t, c[5]);
        CHECK_MSG(strstr(page, want), "missing %s", want);
    }
    CHECK(strstr(page, ">&lt;</span>") && strstr(page, ">&amp;</span>"));
    snprintf(cmd, sizeof cmd, "units %s --unit 32 --input %s --out %s", ck, in, tmp_path("v.html"));
    CHECK(run_swlstm(cmd, out, sizeof out) != 0 && strstr(out, "--unit = '32': expected 0 to 31"));
    // with --progress, off a terminal, a last line of the bytes, the time and "done"
    snprintf(cmd, sizeof cmd, "units %s --unit 5 --input %s --out %s --progress", ck, in, tmp_path("w.html"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(!strncmp(out, "units: 13/13 bytes, 100.0% | 0m0", 32) && strstr(out, "s | done\n"), "%s", out);
    infer_free(m, s);
    free(page);
    model_free(m);
}
#endif
