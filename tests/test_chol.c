// test_chol.c: the probe's dense kernels: the Cholesky factor (four rows at a time) and its
// solves, and the L1 subproblem (feature-sign search with its gradient kept by updates)
// against its KKT conditions with an independently computed gradient.
#include <stdlib.h>
#include <string.h>
#include "probe/chol.h"
#include "probe/logreg_impl.h"
#include "test.h"

// A [m][ld] = B B^T / m + diag (B uniform in [-1, 1), shared factors: strongly correlated).
static double *spd(int m, int ld, double diag, unsigned long long seed) {
    double *B = malloc(sizeof(double) * m * m), *A = calloc((size_t)m * ld, sizeof(double));
    for (int k = 0; k < m * m; k++) B[k] = 2 * test_rand(&seed) - 1;
    for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++) {
            double v = a == b ? diag : 0;
            for (int k = 0; k < m; k++) v += B[a * m + k] * B[b * m + k] / m;
            A[a * ld + b] = v;
        }
    free(B);
    return A;
}

TEST(chol_factor_and_solve) {
    for (int m = 1; m <= 14; m += 3) {   // whole blocks of four rows and the rows left over
        int ld = m + 3;
        double *A = spd(m, ld, 0.05, 7 + m), *L = malloc(sizeof(double) * m * ld), x[14], b[14];
        memcpy(L, A, sizeof(double) * m * ld);
        CHECK(chol_factor(L, m, ld));
        for (int a = 0; a < m; a++)
            for (int c = 0; c <= a; c++) {
                double v = 0;
                for (int k = 0; k <= c; k++) v += L[a * ld + k] * L[c * ld + k];
                CHECK_NEAR(v, A[a * ld + c], 1e-12);
            }
        for (int a = 0; a < m; a++) x[a] = b[a] = a - 0.5 * m;
        chol_solve(L, m, ld, x);
        for (int a = 0; a < m; a++) {
            double v = 0;
            for (int c = 0; c < m; c++) v += A[a * ld + c] * x[c];
            CHECK_NEAR(v, b[a], 1e-9);
        }
        A[(m - 1) * ld + m - 1] = -1;   // not positive definite: refused
        CHECK(!chol_factor(A, m, ld));
        free(A);
        free(L);
    }
}

TEST(l1_subproblem_meets_kkt) {
    const int m = 40, m1 = m + 1;
    const double tol = 1e-9;
    for (unsigned long long seed = 1; seed <= 4; seed++) {
        double *H = spd(m1, m1, 1e-3, seed), c[41], u[41], x[41];
        double *scratch = malloc(sizeof(double) * (m1 * m1 + 7 * m1));
        unsigned long long r = 100 + seed;
        for (int a = 0; a < m1; a++) {
            c[a] = 3 * (2 * test_rand(&r) - 1);
            u[a] = a < m && test_rand(&r) < 0.3 ? 2 * test_rand(&r) - 1 : 0;
        }
        for (int a = 0; a < m1; a++)   // H is stored whole (both triangles)
            for (int b = a + 1; b < m1; b++) H[a * m1 + b] = H[b * m1 + a];
        l1_quadratic(H, c, u, m, tol, x, scratch);
        int nonzero = 0;
        for (int a = 0; a < m1; a++) {
            double g = c[a], w = a < m ? u[a] + x[a] : 0;
            for (int b = 0; b < m1; b++) g += H[a * m1 + b] * x[b];
            double viol = a == m ? fabs(g) : w != 0 ? fabs(g + (w > 0 ? 1 : -1)) : fmax(fabs(g) - 1, 0);
            CHECK_MSG(viol <= 10 * tol, "seed %llu, coordinate %d: KKT violation %g", seed, a, viol);
            nonzero += w != 0;
        }
        CHECK(nonzero > 0 && nonzero < m);
        free(H);
        free(scratch);
    }
}
