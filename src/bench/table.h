// table.h: the markdown tables `swlstm bench` prints.
#pragma once

// Prints a table's head row, "| a | b |", and the rule under it, one "---" a column.
void table_head(const char *head);
// The median of v[0..n) (sorts v).
double median(double *v, int n);
