// test_mask.c: mask generators, graph statistics, the PNG writer and `swlstm mask`.
#include "test.h"
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "base/common.h"
#include "sparse/mask.h"
#include "io/png.h"

static int at(const Mask *m, int r, int c) { return m->m[(size_t)r * m->nc + c]; }

static int is_symmetric(const Mask *m) {
    for (int r = 0; r < m->nr; r++)
        for (int c = 0; c < m->nc; c++)
            if (at(m, r, c) != at(m, c, r)) return 0;
    return 1;
}

static int has_identity(const Mask *m) {
    for (int i = 0; i < m->nr; i++)
        if (!at(m, i, i)) return 0;
    return 1;
}

static int rows_cols_nonempty(const Mask *m) {
    int *col = calloc((size_t)m->nc, sizeof(int)), ok = 1;
    for (int r = 0; r < m->nr; r++) {
        int row = 0;
        for (int c = 0; c < m->nc; c++) {
            row += at(m, r, c);
            col[c] += at(m, r, c);
        }
        ok &= row > 0;
    }
    for (int c = 0; c < m->nc; c++) ok &= col[c] > 0;
    free(col);
    return ok;
}

// A square mask from an edge list (i, j): only m[i][j] is set, the statistics must see (j, i) too.
static Mask mask_from_edges(int n, const int (*edges)[2], int ne) {
    Mask m = {n, n, calloc((size_t)n * n, 1)};
    for (int i = 0; i < n; i++) m.m[i * n + i] = 1;
    for (int e = 0; e < ne; e++) m.m[edges[e][0] * n + edges[e][1]] = 1;
    return m;
}

TEST(mask_ba_block_count_symmetry_hub) {
    const int cases[][2] = {{2, 1}, {8, 1}, {16, 2}, {64, 3}, {100, 7}, {33, 32}, {128, 2}};
    for (int t = 0; t < (int)(sizeof cases / sizeof cases[0]); t++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            int n = cases[t][0], m = cases[t][1];
            char desc[32];
            snprintf(desc, sizeof desc, "ba_%d", m);
            Mask mk = mask_make(desc, n, n, seed);
            CHECK_MSG(mask_count(&mk) == 2L * m * (n - m) + (long)m * m + (n - m), "%s n=%d seed=%d: %ld blocks", desc, n,
                      (int)seed, mask_count(&mk));
            CHECK(is_symmetric(&mk));
            CHECK(has_identity(&mk));
            for (int i = 0; i < m; i++)
                for (int j = 0; j < m; j++) CHECK(at(&mk, i, j));
            for (int i = 0; i < m; i++) CHECK(at(&mk, m, i));  // node m links to every seed node
            mask_free(&mk);
        }
}

TEST(mask_ba_grows_hubs) {
    // Preferential attachment: the largest degree grows like m*sqrt(n) (about 63 here), where
    // uniform attachment would give about m*log(n) (about 14).
    for (uint64_t seed = 1; seed <= 3; seed++) {
        Mask mk = mask_make("ba_2", 1000, 1000, seed);
        MaskStats s = mask_stats(&mk);
        CHECK_MSG(s.deg_max >= 30, "seed %d: max degree %d", (int)seed, s.deg_max);
        CHECK_EQ(s.deg_min, 3);  // diagonal + m links
        mask_free(&mk);
    }
}

TEST(mask_ws_block_count_and_symmetry) {
    const struct { int n, k; double p; } cases[] = {{8, 2, 0}, {16, 4, 0.3}, {64, 6, 1}, {100, 10, 0.5}, {7, 6, 1}, {6, 4, 1}, {3, 2, 1}};
    for (int t = 0; t < (int)(sizeof cases / sizeof cases[0]); t++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            char desc[32];
            snprintf(desc, sizeof desc, "ws_%d_%g", cases[t].k, cases[t].p);
            Mask mk = mask_make(desc, cases[t].n, cases[t].n, seed);
            CHECK_MSG(mask_count(&mk) == (long)cases[t].n * (cases[t].k + 1), "%s n=%d: %ld blocks", desc, cases[t].n, mask_count(&mk));
            CHECK(is_symmetric(&mk));
            CHECK(has_identity(&mk));
            mask_free(&mk);
        }
}

TEST(mask_ws_p0_is_ring_lattice) {
    int n = 20, k = 6;
    Mask mk = mask_make("ws_6_0", n, n, 9);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int d = abs(i - j), ring = d < n - d ? d : n - d;
            CHECK_EQ(at(&mk, i, j), ring <= k / 2);
        }
    mask_free(&mk);
}

TEST(mask_dense_and_random) {
    Mask d = mask_make("dense", 12, 12, 1), dr = mask_make("dense", 4, 12, 1);
    CHECK_EQ(mask_count(&d), 144);
    CHECK_EQ(mask_count(&dr), 48);
    mask_free(&d);
    mask_free(&dr);
    Mask r = mask_make("random_1", 10, 10, 5);
    CHECK_EQ(mask_count(&r), 100);
    mask_free(&r);
    // density 0.25 on 200x200: off-diagonal pairs kept with p = 0.25, 6 sigma tolerance
    Mask big = mask_make("random_0.25", 200, 200, 5);
    double expect = 200 + 0.25 * 200 * 199;
    CHECK_NEAR((double)mask_count(&big), expect, 6 * 2 * sqrt(0.25 * 0.75 * 200 * 199 / 2));
    CHECK(is_symmetric(&big));
    CHECK(has_identity(&big));
    mask_free(&big);
}

TEST(mask_rows_and_columns_nonempty) {
    const char *descs[] = {"dense", "random_0.01", "random_0.5", "ba_1", "ba_3", "ws_2_0.5", "ws_4_1"};
    for (int t = 0; t < 7; t++) {
        Mask mk = mask_make(descs[t], 40, 40, 2);
        CHECK_MSG(rows_cols_nonempty(&mk), "%s", descs[t]);
        mask_free(&mk);
    }
    const int shapes[][2] = {{8, 32}, {32, 8}, {7, 5}, {1, 9}};
    for (int t = 0; t < 4; t++) {
        Mask mk = mask_make("random_0.01", shapes[t][0], shapes[t][1], 4);
        CHECK_MSG(rows_cols_nonempty(&mk), "random_0.01 %dx%d", shapes[t][0], shapes[t][1]);
        mask_free(&mk);
    }
}

TEST(mask_seed_determinism) {
    const char *descs[] = {"ba_2", "ws_4_0.2", "random_0.3"};
    for (int t = 0; t < 3; t++) {
        Mask a = mask_make(descs[t], 64, 64, 11), b = mask_make(descs[t], 64, 64, 11), c = mask_make(descs[t], 64, 64, 12);
        CHECK_MSG(memcmp(a.m, b.m, 64 * 64) == 0, "%s: same seed differs", descs[t]);
        CHECK_MSG(memcmp(a.m, c.m, 64 * 64) != 0, "%s: different seeds agree", descs[t]);
        mask_free(&a);
        mask_free(&b);
        mask_free(&c);
    }
}

TEST(mask_stats_ring_complete_star) {
    const int ring[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}};
    Mask m = mask_from_edges(6, ring, 6);
    MaskStats s = mask_stats(&m);
    CHECK_EQ(s.blocks, 12);  // one-sided edges + identity
    CHECK_NEAR(s.avg_path, 1.8, 1e-12);
    CHECK_NEAR(s.clustering, 0.0, 1e-12);
    mask_free(&m);

    Mask d = mask_make("dense", 5, 5, 1);
    s = mask_stats(&d);
    CHECK_NEAR(s.avg_path, 1.0, 1e-12);
    CHECK_NEAR(s.clustering, 1.0, 1e-12);
    CHECK_NEAR(s.density, 1.0, 1e-12);
    CHECK_EQ(s.deg_min, 5);
    CHECK_EQ(s.deg_max, 5);
    mask_free(&d);

    const int star[][2] = {{0, 1}, {0, 2}, {3, 0}, {4, 0}};
    Mask st = mask_from_edges(5, star, 4);
    s = mask_stats(&st);
    CHECK_NEAR(s.avg_path, 2.0 * 4 / 5, 1e-12);  // centre-leaf 1, leaf-leaf 2
    CHECK_NEAR(s.clustering, 0.0, 1e-12);
    CHECK_EQ(s.deg_min, 1);  // blocks per row of the one-sided mask
    CHECK_EQ(s.deg_max, 3);
    CHECK_NEAR(s.deg_mean, 9.0 / 5, 1e-12);
    CHECK_NEAR(s.density, 9.0 / 25, 1e-12);
    mask_free(&st);
}

TEST(mask_stats_paw_disconnected_lattice) {
    // triangle 0-1-2 plus pendant 3 on 0: C = (1/3 + 1 + 1 + 0) / 4, L = 8/6
    const int paw[][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}};
    Mask m = mask_from_edges(4, paw, 4);
    MaskStats s = mask_stats(&m);
    CHECK_NEAR(s.clustering, 7.0 / 12, 1e-12);
    CHECK_NEAR(s.avg_path, 8.0 / 6, 1e-12);
    mask_free(&m);

    const int two[][2] = {{0, 1}, {2, 3}};  // only reachable pairs count
    Mask t = mask_from_edges(4, two, 2);
    CHECK_NEAR(mask_stats(&t).avg_path, 1.0, 1e-12);
    mask_free(&t);

    Mask id = mask_from_edges(3, NULL, 0);
    CHECK(isnan(mask_stats(&id).avg_path));
    mask_free(&id);

    Mask ws = mask_make("ws_4_0", 20, 20, 1);  // ring lattice: C = 3(k-2) / (4(k-1))
    CHECK_NEAR(mask_stats(&ws).clustering, 0.5, 1e-12);
    mask_free(&ws);

    Mask rect = mask_make("dense", 3, 4, 1);
    s = mask_stats(&rect);
    CHECK(isnan(s.avg_path) && isnan(s.clustering));
    CHECK_EQ(s.blocks, 12);
    mask_free(&rect);
}

TEST(mask_stats_sampled_sources) {
    // Every source of a ring sees the same distances, so the sampled mean is exact: n^2/4 / (n-1).
    int n = 5000;
    CHECK_EQ(mask_path_sources(n), MASK_STATS_SOURCES);
    CHECK_EQ(mask_path_sources(MASK_STATS_EXACT_MAX), MASK_STATS_EXACT_MAX);
    Mask m = mask_make("ws_2_0", n, n, 1);
    CHECK_NEAR(mask_stats(&m).avg_path, (double)n * n / 4 / (n - 1), 1e-9);
    mask_free(&m);
}

static void make_desc_64(void *desc) { mask_make(desc, 64, 64, 1); }
static void make_ba_rect(void *desc) { mask_make(desc, 8, 16, 1); }

TEST(mask_bad_descriptors) {
    const char *bad[] = {"ba_0", "ba_x", "ba_64", "ba_2x", "ws_3_0.1", "ws_4_1.5", "ws_4", "ws_64_0.1", "ws_4_x",
                         "random_0", "random_1.5", "random_", "foo", ""};
    char err[512];
    for (int t = 0; t < (int)(sizeof bad / sizeof bad[0]); t++) {
        char needle[64];
        snprintf(needle, sizeof needle, "sparsity '%s':", bad[t]);
        err[0] = 0;
        CHECK_MSG(mask_check_desc(bad[t], 64, 64, err, sizeof err) != 0, "'%s' accepted", bad[t]);
        CHECK_MSG(strstr(err, needle) && strstr(err, "expected dense, random_<density>, ba_<m> or ws_<k>_<p>"), "%s", err);
        CHECK_MSG(!strchr(err, '\n'), "multi-line: %s", err);
        CHECK_DIES(make_desc_64, (void *)bad[t], needle);
    }
    mask_check_desc("ba_0", 64, 64, err, sizeof err);
    CHECK_MSG(strstr(err, "m must be in 1..(n-1) = 1..63"), "%s", err);
    const char *good[] = {"dense", "random_0.01", "random_1", "ba_1", "ba_63", "ws_2_0", "ws_62_1", "ws_4_0.1"};
    for (int t = 0; t < 8; t++) CHECK_MSG(mask_check_desc(good[t], 64, 64, err, sizeof err) == 0, "%s: %s", good[t], err);
    CHECK(mask_check_desc("ba_2", 8, 16, err, sizeof err) != 0 && strstr(err, "square"));
    CHECK_DIES(make_ba_rect, (void *)"ws_2_0.1", "sparsity 'ws_2_0.1': needs a square layout");
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

// Reads a PNG written by png_write_gray: checks the signature, chunk CRCs, IHDR and IEND;
// returns the inflated scanlines (filter byte + w pixels each) and the size.
static uint8_t *read_png(const char *path, int *w, int *h, size_t *rawlen) {
    size_t len;
    uint8_t *f = (uint8_t *)read_text_file(path, &len, "png");
    uint8_t *idat = NULL, *raw = NULL;
    size_t idat_len = 0, pos = 8;
    int iend = 0;
    if (len < 8 || memcmp(f, "\x89PNG\r\n\x1a\n", 8)) goto out;
    while (pos + 12 <= len && !iend) {
        uint32_t n = be32(f + pos);
        const uint8_t *type = f + pos + 4, *data = f + pos + 8;
        if (pos + 12 + n > len || be32(data + n) != (uint32_t)crc32(0, type, n + 4)) goto out;
        if (!memcmp(type, "IHDR", 4)) {
            *w = (int)be32(data);
            *h = (int)be32(data + 4);
            if (n != 13 || data[8] != 8 || data[9] != 0) goto out;  // 8-bit greyscale
        }
        if (!memcmp(type, "IDAT", 4)) idat = (uint8_t *)data, idat_len = n;
        iend = !memcmp(type, "IEND", 4) && n == 0;
        pos += 12 + n;
    }
    if (!iend || !idat || pos != len) goto out;
    uLongf rl = (uLongf)(*w + 1) * (uLongf)*h;
    raw = malloc(rl + 1);
    if (uncompress(raw, &rl, idat, idat_len) != Z_OK) { free(raw); raw = NULL; }
    *rawlen = rl;
out:
    free(f);
    return raw;
}

TEST(png_write_gray_roundtrip) {
    const uint8_t px[6] = {0, 10, 255, 128, 7, 99};
    const char *path = tmp_path("tiny.png");
    png_write_gray(path, px, 3, 2);
    int w = 0, h = 0;
    size_t n = 0;
    uint8_t *raw = read_png(path, &w, &h, &n);
    CHECK(raw != NULL);
    CHECK_EQ(w, 3);
    CHECK_EQ(h, 2);
    CHECK_EQ(n, 8);
    const uint8_t expect[8] = {0, 0, 10, 255, 0, 128, 7, 99};
    CHECK(memcmp(raw, expect, 8) == 0);
    free(raw);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "tiny.png.tmp.%ld", (long)getpid());
    CHECK(access(tmp_path(tmp), F_OK) != 0);
}

TEST(mask_write_png_pixels) {
    Mask m = mask_make("ba_1", 4, 4, 3);
    const char *path = tmp_path("ba.png");
    mask_write_png(&m, path);
    int w = 0, h = 0;
    size_t n = 0;
    uint8_t *raw = read_png(path, &w, &h, &n);
    CHECK(raw != NULL);
    CHECK_EQ(w, 256);  // 4 blocks scaled by 64
    CHECK_EQ(h, 256);
    CHECK_EQ(n, 257 * 256);
    for (int y = 0; y < h; y++) {
        CHECK_EQ(raw[y * 257], 0);  // filter type none
        for (int x = 0; x < w; x++) CHECK_EQ(raw[y * 257 + 1 + x], at(&m, y / 64, x / 64) ? 0 : 255);
    }
    free(raw);
    mask_free(&m);

    Mask r = mask_make("dense", 2, 3, 1);  // non-square: scale ceil(256/3) = 86
    mask_write_png(&r, path);
    raw = read_png(path, &w, &h, &n);
    CHECK(raw != NULL);
    CHECK_EQ(w, 258);
    CHECK_EQ(h, 172);
    free(raw);
    mask_free(&r);
}

static void png_to_missing_dir(void *arg) {
    uint8_t px = 0;
    png_write_gray(arg, &px, 1, 1);
}

TEST(png_write_error_dies) {
    CHECK_DIES(png_to_missing_dir, (void *)"/nonexistent-dir/x.png", "image '/nonexistent-dir/x.png': cannot create '/nonexistent-dir/x.png.tmp.");
}

TEST(mask_verb_prints_stats) {
    char out[8192];
    CHECK_EQ(run_swlstm("mask --hidden 512 --block 16 --sparsity ba_2 --seed 3", out, sizeof out), 0);
    // 32 x 32 blocks, m = 2: 2*2*30 + 4 + 30 = 154
    CHECK_MSG(strstr(out, "32 x 32 blocks") && strstr(out, "blocks stored") && strstr(out, " 154 "), "%s", out);
    CHECK_MSG(strstr(out, "avg path length") && strstr(out, "clustering") && strstr(out, "random_"), "%s", out);

    char args[600];
    snprintf(args, sizeof args, "mask --hidden=512 --block=16 --sparsity=ws_4_0.1 --json --image %s", tmp_path("v.png"));
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(out[0] == '{' && strstr(out, "\"mask\":{\"sparsity\":\"ws_4_0.1\",\"blocks\":160,"), "%s", out);
    CHECK(access(tmp_path("v.png"), R_OK) == 0);

    CHECK_EQ(run_swlstm("mask --help", out, sizeof out), 0);
    CHECK(strstr(out, "usage: swlstm mask"));
}

TEST(mask_verb_bad_input) {
    const struct { const char *args, *needle; } bad[] = {
        {"mask --hidden 500 --block 16 --sparsity ba_2", "--hidden: 500 is not a multiple of --block 16"},
        {"mask --hidden 512 --block 12 --sparsity ba_2", "--block: '12' is not 8, 16 or 32"},
        {"mask --hidden abc --block 16 --sparsity ba_2", "--hidden = 'abc'"},
        {"mask --hidden 512 --block 16 --sparsity ba_0", "sparsity 'ba_0': m must be in 1..(n-1) = 1..31"},
        {"mask --hidden 512 --block 16", "--sparsity is required"},
        {"mask --block 16 --sparsity ba_2", "--hidden is required"},
        {"mask --hidden 512 --block 16 --sparsity ba_2 --seed -1", "--seed = '-1'"},
        {"mask --hidden 512 --block 16 --sparsity ba_2 --colour red", "unknown option '--colour'"},
        {"mask --hidden 512 --block 16 --sparsity", "option '--sparsity' needs a value"},
    };
    char out[4096];
    for (int t = 0; t < (int)(sizeof bad / sizeof bad[0]); t++) {
        int rc = run_swlstm(bad[t].args, out, sizeof out);
        CHECK_MSG(rc != 0 && strstr(out, "swlstm: error: ") && strstr(out, bad[t].needle), "%s: rc %d: %s", bad[t].args, rc, out);
    }
}

// A chain 0 -> 1 (step 0) then 1 -> 2 (step 1), diagonals stored: 4 then 6 of the 9 pairs.
TEST(mask_reach_counts_pairs_through_each_step) {
    uint8_t a[9] = {1, 0, 0, 1, 1, 0, 0, 0, 1}, b[9] = {1, 0, 0, 0, 1, 0, 0, 1, 1};
    Mask steps[2] = {{3, 3, a}, {3, 3, b}}, dense = mask_make("dense", 3, 3, 1);
    double share[2];
    mask_reach(steps, 2, share);
    CHECK_NEAR(share[0], 4.0 / 9, 1e-15);
    CHECK_NEAR(share[1], 6.0 / 9, 1e-15);
    Mask rev[2] = {steps[1], steps[0]};  // 1 -> 2 first cannot carry 0 to 2
    mask_reach(rev, 2, share);
    CHECK_NEAR(share[1], 5.0 / 9, 1e-15);
    mask_reach(&dense, 1, share);
    CHECK_EQ(share[0], 1);
    mask_free(&dense);
}

// The figures for the paper's width: 576 blocks, ba_8, about 2.9% -> 44% -> 99.8%.
TEST(mask_depth_prints_reach_of_internal_steps) {
    char out[4096];
    CHECK_EQ(run_swlstm("mask --hidden=18432 --block=32 --sparsity=ba_8 --depth=3 --json", out, sizeof out), 0);
    const char *r = strstr(out, "\"reach\":[");
    CHECK_MSG(r, "%s", out);
    double s1 = 0, s2 = 0, s3 = 0;
    CHECK(sscanf(r, "\"reach\":[%lf,%lf,%lf]", &s1, &s2, &s3) == 3);
    CHECK_MSG(fabs(s1 - 0.0293) < 0.001 && s2 > 0.40 && s2 < 0.50 && s3 > 0.99, "%g %g %g", s1, s2, s3);
}

TEST(mask_owner_columns_lists_what_each_owner_reads) {
    uint8_t bits[] = {1, 0, 0, 1,  0, 1, 0, 0,  1, 0, 1, 0,  0, 0, 1, 1};
    Mask m = {4, 4, bits};
    int *ptr, *list;
    mask_owner_columns(&m, 3, &ptr, &list);  // owners hold rows {0}, {1}, {2, 3}
    int want_ptr[] = {0, 2, 3, 6}, want[] = {0, 3, 1, 0, 2, 3};
    CHECK(!memcmp(ptr, want_ptr, sizeof want_ptr) && !memcmp(list, want, sizeof want));
    free(ptr);
    free(list);
    // mlstm_3min's W_h layout (H = 5120, 32 x 32 blocks) over one owner per H100/H200 SM: each owner
    // lists exactly the columns its rows store, ascending.
    Mask ba = mask_make("ba_14", 160, 160, 1);
    mask_owner_columns(&ba, 132, &ptr, &list);
    for (int o = 0; o < 132; o++) {
        int r0 = mask_owner_row(160, 132, o), r1 = mask_owner_row(160, 132, o + 1);
        CHECK(r1 > r0 && r1 - r0 <= 2);
        for (int k = ptr[o] + 1; k < ptr[o + 1]; k++) CHECK(list[k - 1] < list[k]);
        for (int c = 0, k = ptr[o]; c < 160; c++) {
            int reads = 0;
            for (int r = r0; r < r1; r++) reads |= ba.m[r * 160 + c];
            CHECK_EQ(k < ptr[o + 1] && list[k] == c, reads);
            k += reads;
        }
    }
    CHECK_EQ(mask_owner_row(160, 132, 132), 160);
    free(ptr);
    free(list);
    mask_free(&ba);
}
#endif
