#!/usr/bin/env bash
# quickstart.sh: build, get a corpus, train configs/tiny.cfg (a small-world model; two to four minutes
# on 2 CPU cores), print a sample and the statistics of the model's mask.
# Uses the GPU when swlstm was built with CUDA and nvidia-smi sees a device, else the CPU.
# Options given go to swlstm train (e.g. --max_steps=50: a short run, as CI's README check).
set -euo pipefail
cd "$(dirname "$0")/.."
make -j"$(nproc)" swlstm
corpus=$(bash data/get_corpus.sh)
device=cpu
if nvidia-smi -L >/dev/null 2>&1 && ldd ./swlstm | grep -q libcudart; then
    device=cuda
fi
echo "quickstart: training configs/tiny.cfg on $corpus ($device)"
data=()
[ "$corpus" = "$PWD/data/corpus.txt" ] || data=(--data="$corpus")   # tiny.cfg's default
./swlstm train configs/tiny.cfg ${data[@]+"${data[@]}"} --device="$device" "$@"
echo; echo "quickstart: a sample from checkpoints/tiny/best.ckpt:"; echo
./swlstm sample checkpoints/tiny/best.ckpt -n 600 -t 0.8 -i "The "
echo
echo "quickstart: its recurrent mask (block-sparse, small-world) beside the one its config draws:"; echo
./swlstm mask --ckpt checkpoints/tiny/best.ckpt
