// table.h: the tables `swlstm bench` prints: markdown, or with --json one JSON object a row.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif

// 1: every table from here on prints its rows as JSON lines on stdout and its prose on stderr.
void table_json(int on);
// Starts table `name` ("kernels", "train", ...) with its head row, "| a | b |": markdown prints
// it and the rule under it, one "---" a column; JSON keeps the columns as the rows' keys
// (lower case, '%' as "pct", other runs of signs as '_': "fwd, x bf16 us" is "fwd_x_bf16_us").
void table_head(const char *name, const char *head);
// One row, "| 32 | dense | 41.5 |" as printf formats it: markdown prints it; JSON prints
// {"table":"kernels","bs":32,"mask":"dense","fwd_us":41.5}: a cell that is a number (a trailing
// '%' allowed) as a number; "-", "" and "n/a..." as null; any other text as a string.
void table_row(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Prose about the table (device, units, notes): stdout with markdown, stderr with JSON.
void table_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The median of v[0..n) (sorts v).
double median(double *v, int n);

#ifdef __cplusplus
}
#endif
