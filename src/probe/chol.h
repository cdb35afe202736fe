// chol.h: Cholesky factorisation and solves of small dense symmetric positive definite
// matrices in double (row-major, leading dimension ld), for the probe's Newton models.
#pragma once

// A = L L^T in place (the lower triangle becomes L; the upper is not read). Returns 0 when
// a pivot is not positive (A not positive definite to working precision), else 1.
int chol_factor(double *A, int m, int ld);
// x = (L L^T)^-1 x.
void chol_solve(const double *L, int m, int ld, double *x);
// Factor of A [m+1][m+1] from that of its leading [m][m] block: h holds A's last row.
// Returns 0 when A is not positive definite.
int chol_append(double *L, int m, int ld, const double *h);
// Factor of A [m][m] without its row and column k, in place (rows below k move up);
// x: scratch [m].
void chol_delete(double *L, int m, int ld, int k, double *x);
