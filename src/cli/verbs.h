// verbs.h: the command-line verbs of ./swlstm. Each returns the process exit status.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_mask(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_units(int argc, char **argv);
int cmd_prune(int argc, char **argv);

#ifdef __cplusplus
}
#endif
