// train_log.h: the trainer's console progress lines and its JSON-lines log (out_dir/log.jsonl).
#pragma once
#include <stdio.h>
#include "model/model.h"

typedef struct {
    double loss, grad_norm, lr, ms;
} StepStats;

typedef struct {
    FILE *jsonl;
    long max_steps;
    long chars_per_step;
    double t_last;   // wall time of the last progress line
} TrainLog;

// Prints the run summary (device, shapes, parameter counts) and opens log.jsonl (appends on resume).
void train_log_open(TrainLog *log, const Model *m, const Config *cfg, int append);
// Every step goes to the JSON log; `print` also shows a progress line.
void train_log_step(TrainLog *log, long step, const StepStats *s, double elapsed, int print);
// A validation: bpc over `bytes` predictions of `stripes` stripes each from a zero state
// (swlstm eval --protocol stripes).
void train_log_eval(TrainLog *log, long step, double bpc, size_t bytes, int stripes, double secs, int best);
void train_log_close(TrainLog *log);
