// feature_extract.h: per-document features from a model's final LSTM state, for linear probes.
// Every document runs from a zero state over its full length; documents are batched in
// order of decreasing length so that step t advances only the rows still running
// (infer_step leaves the other rows untouched: padding never changes a state).
#pragma once
#include "features/docs.h"
#include "model/model.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char state;              // 'c', 'h' or 'b' (both: [c, h]); 0 until resolved ('c')
    int layer;               // 0-based; -1 = last
    int tanh_c;              // tanh of c
    int mean;                // mean of h over the document's steps (replaces the state)
    int batch;               // documents per batch
    int progress;            // 1 on, 0 off, -1 when stderr is a terminal
    int preprocess;          // sentiment-neuron preprocessing of each line (docs.h)
    long max_docs;           // 0 = all
    int raw_weights;         // the trained weights even when the checkpoint holds their average
    int device, precision;   // a Device and a Precision, or CKPT_CHOICE (model_io.h)
} FeatOpts;

void feat_opts_default(FeatOpts *o);
// Loads the checkpoint on the chosen device; checks the options against the model.
Model *feat_model_load(const char *ckpt, FeatOpts *o);
int feat_dim(const Model *m, const FeatOpts *o);
// Features [d->n, feat_dim] in input order.
float *features_extract(Model *m, const Docs *d, const FeatOpts *o);

#ifdef __cplusplus
}
#endif
