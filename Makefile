# swlstm: block-sparse small-world char-LSTMs.  `make`, `make test`, `make test SANITIZE=1`,
# `make test-gpu` (on a GPU machine), `make bench`, `make python` (libswlstm.so for python/swlstm).
CC       ?= gcc
NVCC     ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
SANITIZE ?= 0
# One short line a file; `make V=1` prints the commands.
V ?= 0
ifeq ($(V),1)
  Q :=
  say :=
else
  Q := @
  say = printf '  %-5s %s\n' $(1) $(2);
endif

# SANITIZE=1: ASan + UBSan for the CPU build; for `make test-gpu` instead compute-sanitizer
# (memcheck, racecheck, synccheck, initcheck) over a CUDA build without ASan (they do not mix).
ifeq ($(SANITIZE)$(filter test-gpu,$(MAKECMDGOALS)),1test-gpu)
  BUILD   := build/csan
  CUDA    := 1
  OPT     := -O1 -g -fno-omit-frame-pointer
else ifeq ($(SANITIZE),1)
  BUILD   := build/san
  CUDA    ?= 0
  OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
else
  BUILD   := build/rel
  OPT     := -O3 -g
endif
CUDA ?= $(if $(CUDA_HOME),1,0)

CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wshadow -fopenmp -pthread $(OPT) -MMD -MP -Isrc -Icuda
LDLIBS  := -lz -lm
# The CUDA objects are position-independent (host code only; -fno-semantic-interposition keeps
# its inlining as without) so that libswlstm.so (`make python`) links the ones `make` built.
NVFLAGS := -O3 -std=c++17 -Isrc -Icuda -Xcompiler -Wall,-fopenmp,-fPIC,-fno-semantic-interposition \
           -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90 -MMD -MP

ifeq ($(BUILD),build/csan)
  NVFLAGS += -lineinfo
endif

# Sources are found by folder (a folder per concern, docs/ARCHITECTURE.md): a new file in one
# needs no edit here.
APISRC  := $(wildcard src/api/*.c)
LIBSRC  := $(filter-out src/cli/main.c $(APISRC),$(wildcard src/*/*.c))
TESTSRC := $(wildcard tests/test_*.c)
FUZZSRC := tests/fuzz/harness.c $(wildcard tests/fuzz/fuzz_*.c)
GPUTEST := $(wildcard tests/gpu/*.c)
GPUTESTCU := $(wildcard tests/gpu/*.cu)
CUAPI   := $(wildcard cuda/api/*.cu)
CUSRC   := $(filter-out $(CUAPI),$(wildcard cuda/*/*.cu))

LIBOBJ  := $(LIBSRC:%.c=$(BUILD)/%.o)
DBL     := $(BUILD)-f64
DBLOBJ  := $(LIBSRC:%.c=$(DBL)/%.o)
# make python: the library and its C ABI (src/api, cuda/api) from the same sources: the C ones
# compiled position-independent in their own build dir (one per CUDA setting: the objects
# differ), the CUDA ones make's own (NVFLAGS).
PIC     := build/pic$(if $(filter 1,$(CUDA)),,-cpu)
PICOBJ  := $(LIBSRC:%.c=$(PIC)/%.o) $(APISRC:%.c=$(PIC)/%.o)
# The binding's tests: the first python3 that has torch (else the system's, numpy-only tests).
PYTHON  ?= $(or $(shell for p in python3 /usr/bin/python3; do $$p -c 'import torch' 2>/dev/null && { echo $$p; break; }; done),$(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3))
ifeq ($(CUDA),1)
  CFLAGS += -DSW_CUDA
  CUOBJ  := $(CUSRC:%.cu=$(BUILD)/%.o)
  PICOBJ += $(CUSRC:%.cu=$(BUILD)/%.o) $(CUAPI:%.cu=$(BUILD)/%.o)
  # cuBLAS and cuSPARSE are not linked: cuda/ops/lazy_libs.cu opens them at first use.
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lnccl -ldl -lstdc++
endif

.PHONY: all python test test-python test-gpu test-kill fuzz fuzz-build bench bench-probe bench-dist clean
all: swlstm

swlstm: $(BUILD)/swlstm
	$(Q)$(call say,CP,$@)cp $< $@.tmp && mv -f $@.tmp $@

$(BUILD)/swlstm: $(BUILD)/src/cli/main.o $(LIBOBJ) $(CUOBJ)
	$(Q)$(call say,LD,$@)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The fuzz targets join the test binary, which replays every file under tests/fuzz/<target>/.
$(BUILD)/run_tests: $(TESTSRC:%.c=$(BUILD)/%.o) $(FUZZSRC:%.c=$(BUILD)/%.o) $(LIBOBJ) $(CUOBJ)
	$(Q)$(call say,LD,$@)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Finite-difference gradient checks: the same sources in double precision, CPU only.
$(DBL)/run_tests: $(TESTSRC:%.c=$(DBL)/%.o) $(DBLOBJ)
	$(Q)$(call say,LD,$@)$(CC) $(CFLAGS) -o $@ $^ -lz -lm

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(call say,CC,$<)$(CC) $(CFLAGS) -Itests -c -o $@ $<

$(DBL)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(call say,CC64,$<)$(CC) $(filter-out -DSW_CUDA,$(CFLAGS)) -DSW_DOUBLE -c -o $@ $<

$(BUILD)/cuda/%.o: cuda/%.cu
	@mkdir -p $(dir $@)
	$(Q)$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -c -o $@ $<

# What the GPU tests check inside cuda/ (tests/gpu/*.cu), in the test binary only.
$(BUILD)/tests/gpu/%.o: tests/gpu/%.cu
	@mkdir -p $(dir $@)
	$(Q)$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -c -o $@ $<

$(PIC)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(call say,CC,$<)$(CC) $(CFLAGS) -fPIC -c -o $@ $<

# Only the swlstm_* functions are exported (src/api/exports.map).
$(PIC)/libswlstm.so: $(PICOBJ) src/api/exports.map
	$(Q)$(call say,LD,$@)$(CC) $(CFLAGS) -shared -Wl,--version-script=src/api/exports.map -o $@ $(PICOBJ) $(LDLIBS)

python: $(PIC)/libswlstm.so
	$(Q)$(call say,CP,python/swlstm/libswlstm.so)cp $< python/swlstm/libswlstm.so.tmp && mv -f python/swlstm/libswlstm.so.tmp python/swlstm/libswlstm.so

# The binding's tests (python/tests; numpy, and torch where installed), on CPU tensors.
test-python: python $(BUILD)/swlstm
	SWLSTM_BIN=$(BUILD)/swlstm $(PYTHON) python/tests/run.py

# First the link floors of docs/ARCHITECTURE.md, over swlstm's objects (tests/floors.py).
test: $(BUILD)/swlstm $(BUILD)/run_tests $(DBL)/run_tests
	$(Q)python3 tests/floors.py --self-test
	$(Q)python3 tests/floors.py docs/ARCHITECTURE.md $(BUILD)/src/cli/main.o $(LIBOBJ) $(CUOBJ)
	$(Q)SWLSTM_BIN=$(BUILD)/swlstm bash tests/run.sh $(BUILD)/run_tests $(DBL)/run_tests

$(BUILD)/run_tests_gpu: $(GPUTEST:%.c=$(BUILD)/%.o) $(GPUTESTCU:%.cu=$(BUILD)/%.o) $(BUILD)/tests/test_framework.o $(LIBOBJ) $(CUOBJ)
	$(Q)$(call say,LD,$@)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

SANITIZE_TOOLS ?= memcheck racecheck synccheck initcheck
test-gpu: $(BUILD)/swlstm $(BUILD)/run_tests_gpu
ifeq ($(BUILD),build/csan)
	SWLSTM_BIN=$(BUILD)/swlstm bash tests/gpu/sanitize.sh $(BUILD)/run_tests_gpu $(SANITIZE_TOOLS)
else
	SWLSTM_BIN=$(BUILD)/swlstm bash tests/run.sh $(BUILD)/run_tests_gpu
	$(MAKE) python
	SWLSTM_BIN=$(BUILD)/swlstm $(PYTHON) python/tests/run.py --cuda
endif

# Kills training at random moments and checks that latest.ckpt loads and resumes (KILL_RUNS).
KILL_RUNS ?= 20
test-kill: $(BUILD)/swlstm
	bash tests/kill_test.sh $(BUILD)/swlstm $(KILL_RUNS)

# libFuzzer targets (clang), each run FUZZ_SECONDS with ASan + UBSan; corpora grow in
# build/fuzz/corpus, crashes land in build/fuzz/artifacts (see docs/RELIABILITY.md).
FUZZ_SECONDS ?= 60
FUZZ_CC  ?= clang
FUZZ     := build/fuzz
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -DSW_LIBFUZZER -O1 -g -fno-omit-frame-pointer -Wall -Wno-unknown-pragmas \
              -fsanitize=address,undefined -fno-sanitize-recover=all -Isrc -Itests -MMD -MP
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ)/%)

$(FUZZ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(call say,CC,$<)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ)/fuzz_%: $(FUZZ)/tests/fuzz/fuzz_%.o $(FUZZ)/tests/fuzz/harness.o $(LIBSRC:%.c=$(FUZZ)/%.o)
	$(Q)$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ -lz -lm

fuzz-build: $(FUZZ_BINS)
fuzz: $(FUZZ_BINS)
	bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

bench: swlstm
	./swlstm bench

# Probe sweep wall time: on the features of PROBE_CKPT (default: the tiny model, trained here
# from configs/tiny.cfg when it is missing) of MR and SST-2 first, then on generated features
# at the SST-2 and MR shapes (CPU or GPU build). Passive OpenMP waiting: spinning threads cost
# a lot on a shared machine.
PROBE_CKPT ?= checkpoints/tiny/latest.ckpt
bench-probe: swlstm
	[ -f $(PROBE_CKPT) ] || [ $(PROBE_CKPT) != checkpoints/tiny/latest.ckpt ] || OMP_WAIT_POLICY=passive ./swlstm train configs/tiny.cfg
	OMP_WAIT_POLICY=passive ./swlstm bench --probe --checkpoint $(PROBE_CKPT)

# Data-parallel throughput on 1 and 2 GPUs (a machine with 2 GPUs).
bench-dist: swlstm
	bash tools/bench_dist.sh

clean:
	rm -rf build swlstm python/swlstm/libswlstm.so

-include $(shell find build -name '*.d' 2>/dev/null)
