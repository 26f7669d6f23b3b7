# xhloc - HLO compiler driver and runtime.  See README.md.
#
#   make             build build/bin/xhloc and build/bin/xhlo-run
#   make check       every test that needs no GPU (unit, golden, CLI, corpus
#                    sweep, fuzz smoke); ends with "N passed, N failed"
#   make check-gpu   the tests that run on an NVIDIA GPU (tests/gpu/check-*.sh);
#                    needs only xhlo-run when build/gpu-e2e/ and
#                    build/gpu-collectives/ hold artifacts from
#                    `make gpu-artifacts` (for GPU machines without LLVM)
#   make gpu-check-prepare  scripts/gpu-check.sh --prepare build/gpu-check: the
#                    e2e modules and the GPU benchmark (needs jax on the CPU)
#                    for `scripts/gpu-check.sh build/gpu-check` on a GPU machine
#   make asan        the check suite built into build-asan/ under
#                    AddressSanitizer, LeakSanitizer and UBSan
#   make fuzz        libFuzzer harnesses, FUZZ_SECONDS each (default 60);
#                    FUZZ_FLAGS adds libFuzzer flags
#   make fuzz-smoke  a short fuzz run plus the saved regressions
#   make bench       benchmarks; they print their figures
#   make bench-xla   xhloc against XLA (jax in its own venv) on JAX programs
#   make bench-memory  xhloc's buffer assignment against XLA CPU's memory on
#                    the corpus models (XLA's figures cached in bench/memory/)
#   make clean
#
#   WERROR=1         turn warnings into errors (CI does)
#
# Missing build and test dependencies are installed by scripts/setup.sh, which
# the test targets call when a tool is not found.  Building xhlo-run needs only
# a C compiler and libc.

CC       ?= gcc
CLANG    ?= clang-19
LLVM_CONFIG ?= llvm-config-19
BUILD    ?= build
FUZZ_BUILD := build-fuzz
OPT      ?= -O2
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN     += -Werror
endif
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP
LDLIBS   := -lm

# Source sets.  xhlo-run links lib/ only (no LLVM); xhloc links everything.
RUN_SRCS   := $(wildcard lib/support/*.c lib/hlo/*.c lib/eval/*.c lib/runtime/*.c)
XHLOC_SRCS := $(RUN_SRCS) $(wildcard lib/analysis/*.c passes/*.c emitters/*.c)
RUN_OBJS   := $(RUN_SRCS:%.c=$(BUILD)/obj/%.o)
XHLOC_OBJS := $(XHLOC_SRCS:%.c=$(BUILD)/obj/%.o)
XHLOC_MAIN := $(wildcard cmd/xhloc/*.c)
RUN_MAIN   := $(wildcard cmd/xhlo-run/*.c)

# LLVM is asked for only once emitters/ has code, and only by what links it.
EMIT_SRCS  := $(wildcard emitters/*.c)
LLVM_CFLAGS = $(shell $(LLVM_CONFIG) --cflags)
LLVM_LIBS   = $(shell $(LLVM_CONFIG) --link-shared --ldflags --libs)
XHLOC_LDLIBS = $(if $(EMIT_SRCS),$(LLVM_LIBS)) $(LDLIBS) -ldl
# The xhloc binary links LLVM's static libraries (llvm-19-dev ships them):
# loading the shared libLLVM costs ~9 ms of symbol binding and relocated
# pages at every start, a third of a small module's compile.  The test and
# bench programs link the shared library.  XHLOC_LLVM_LINK=shared links the
# xhloc binary against it too, as happens by itself where the static
# libraries or libzstd-dev (scripts/setup.sh installs it) are missing.
LLVM_COMPONENTS := x86 nvptx passes bitreader linker
XHLOC_LLVM_LINK ?= $(if $(and $(wildcard $(shell $(LLVM_CONFIG) --libdir 2>/dev/null)/libLLVMCore.a),\
                              $(wildcard $(shell $(CC) -print-file-name=libzstd.so))),static,shared)
# libstdc++, libgcc, zlib and zstd are linked statically too where their
# archives are installed (only libc and libm stay shared): the dynamic
# loader's ~9000 symbol relocations against libstdc++ (LLVM's vtables and
# typeinfo) and the extra libraries' mappings cost ~1 ms at every start.
comma := ,
static_lib = $(if $(filter /%,$(shell $(CC) -print-file-name=lib$(1).a)),-Wl$(comma)-Bstatic -l$(1) -Wl$(comma)-Bdynamic,-l$(1))
LLVM_SYSTEM_LIBS = $(patsubst -lz,$(call static_lib,z),$(patsubst -lzstd,$(call static_lib,zstd),\
  $(shell $(LLVM_CONFIG) --link-static --system-libs)))
LLVM_STATIC_LIBS = $(shell $(LLVM_CONFIG) --link-static --ldflags --libs $(LLVM_COMPONENTS)) \
  -Wl,--as-needed $(LLVM_SYSTEM_LIBS) $(call static_lib,stdc++) -static-libgcc -lpthread
# Linked statically, xhloc is not position-independent either (-no-pie):
# the dynamic loader then has no relocations to apply to LLVM's tables.
XHLOC_BIN_LDLIBS = $(if $(filter static,$(XHLOC_LLVM_LINK)),-no-pie $(LLVM_STATIC_LIBS) $(LDLIBS) -ldl,$(XHLOC_LDLIBS))
$(BUILD)/obj/emitters/%.o: EXTRA_CFLAGS = $(LLVM_CFLAGS)

# CUDA: the runtime's CUDA platform includes the toolkit's cuda.h when there
# is one (types only: libcuda itself is opened with dlopen at run time), else
# lib/runtime/cuda_min.h.  Building needs neither the toolkit nor a driver.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
$(BUILD)/obj/lib/runtime/platform_cuda.o: EXTRA_CFLAGS = -I$(CUDA_HOME)/include -DXHLO_HAVE_CUDA_H
endif
# cuBLASLt and cuDNN likewise (cublaslt_min.h, cudnn_min.h stand in for their
# headers, and are checked against them where they are): the headers only,
# the libraries are opened with dlopen when the first GEMM or convolution
# runs.  cuDNN may be installed apart from the toolkit.
ifneq ($(wildcard $(CUDA_HOME)/include/cublasLt.h),)
$(BUILD)/obj/lib/runtime/cublaslt.o: EXTRA_CFLAGS = -isystem $(CUDA_HOME)/include -DXHLO_HAVE_CUBLASLT_H
endif
CUDNN_H := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h \
                                  /usr/include/x86_64-linux-gnu/cudnn.h))
ifneq ($(and $(CUDNN_H),$(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h)),)
$(BUILD)/obj/lib/runtime/cudnn.o: EXTRA_CFLAGS = -isystem $(dir $(CUDNN_H)) -isystem $(CUDA_HOME)/include -DXHLO_HAVE_CUDNN_H
endif

# Tests.  Each tests/unit/test_X.c is its own Criterion binary build/tests/
# test_X; each tests/X.c is a test program build/tests/X; each bench/X.c is
# build/bench/X.  All link xhloc's library set (everything but cmd/).
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRCS  := $(wildcard tests/*.c)
TOOL_BINS  := $(TOOL_SRCS:tests/%.c=$(BUILD)/tests/%)
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
CRITERION_CFLAGS = $(shell pkg-config --cflags criterion 2>/dev/null)
CRITERION_LIBS   = $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion)
$(BUILD)/obj/tests/unit/%.o: EXTRA_CFLAGS = $(CRITERION_CFLAGS)
# oneDNN's own header, when libdnnl-dev is there, checks lib/runtime/
# dnnl_min.h in the unit test (the runtime itself needs only dnnl_min.h).
# (Looked for when the test compiles: `deps` may have just installed it.)
$(BUILD)/obj/tests/unit/test_onednn.o: EXTRA_CFLAGS = $(CRITERION_CFLAGS) \
  $(shell test -f /usr/include/oneapi/dnnl/dnnl.h && echo -DXHLO_HAVE_DNNL_H)

# OpenMPI's mpi.h, when libopenmpi-dev is there, checks lib/support/
# mpi_min.h in the unit test (xhlo-run itself opens libmpi with dlopen).
$(BUILD)/obj/tests/unit/test_exchange.o: EXTRA_CFLAGS = $(CRITERION_CFLAGS) \
  $(shell pkg-config --exists ompi-c 2>/dev/null && echo -DXHLO_HAVE_MPI_H `pkg-config --cflags-only-I ompi-c`)

# The linker's test makes its objects with LLVM-C.
$(BUILD)/obj/tests/unit/test_host_link.o: EXTRA_CFLAGS = $(CRITERION_CFLAGS) $(LLVM_CFLAGS)

# libFuzzer harnesses: tests/fuzz/fuzz_X.c -> build-fuzz/bin/fuzz_X, built
# with clang and linked with the front end (lib/support, lib/hlo), which is
# instrumented for coverage.
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/bin/%)
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(wildcard lib/support/*.c lib/hlo/*.c) \
                   lib/runtime/artifact.c lib/runtime/thunk_file.c lib/runtime/libcall.c \
                   lib/runtime/routine.c)
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20

# The sanitizer build for `make asan`.
ASAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined

# Objects reached through pattern-rule chains (tests, bench, fuzz) are kept.
.SECONDARY:

.PHONY: all check check-gpu gpu-artifacts gpu-check-prepare asan fuzz fuzz-build fuzz-smoke bench bench-xla bench-memory clean deps \
        setup xhloc xhlo-run test-bins

all: $(BUILD)/bin/xhloc $(BUILD)/bin/xhlo-run

xhloc: $(BUILD)/bin/xhloc
xhlo-run: $(BUILD)/bin/xhlo-run

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/bin/xhloc: $(XHLOC_MAIN:%.c=$(BUILD)/obj/%.o) $(XHLOC_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(XHLOC_BIN_LDLIBS)

$(BUILD)/bin/xhlo-run: $(RUN_MAIN:%.c=$(BUILD)/obj/%.o) $(RUN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ldl

# ---- dependencies --------------------------------------------------------
# Runs scripts/setup.sh when a test tool is missing, then checks again.
DEPS_OK = pkg-config --exists criterion 2>/dev/null && \
  command -v $(CLANG) >/dev/null 2>&1 && \
  command -v $(LLVM_CONFIG) >/dev/null 2>&1 && \
  command -v FileCheck-19 >/dev/null 2>&1 && \
  command -v python3 >/dev/null 2>&1 && \
  test -f /usr/include/oneapi/dnnl/dnnl.h && \
  test -f /usr/include/zstd.h && \
  command -v mpirun >/dev/null 2>&1 && \
  test -f "$$($(CLANG) -print-file-name=libclang_rt.fuzzer-x86_64.a)"

deps:
	@if ! ( $(DEPS_OK) ); then \
	  echo "make: a build or test dependency is missing; running scripts/setup.sh"; \
	  scripts/setup.sh || exit 1; \
	  if ! ( $(DEPS_OK) ); then \
	    echo "make: still missing after scripts/setup.sh: need Criterion (pkg-config criterion), $(CLANG) with libFuzzer, $(LLVM_CONFIG), FileCheck-19, python3, oneDNN (libdnnl-dev), zstd (libzstd-dev), OpenMPI (openmpi-bin)" >&2; \
	    exit 1; \
	  fi; \
	fi

setup:
	scripts/setup.sh

# ---- tests ---------------------------------------------------------------
$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(XHLOC_OBJS) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(CRITERION_LIBS) $(XHLOC_LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(XHLOC_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(XHLOC_LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(XHLOC_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(XHLOC_LDLIBS)

# The unit tests build only after deps has made sure Criterion is there.
$(UNIT_SRCS:tests/unit/%.c=$(BUILD)/obj/tests/unit/%.o): | deps

test-bins: all $(UNIT_BINS) $(TOOL_BINS)

# XHLOC_SKIP_FUZZ=1 leaves out the fuzz smoke run (make asan sets it: the
# fuzz build is already sanitized).
check: test-bins $(if $(XHLOC_SKIP_FUZZ),,fuzz-build)
	@XHLOC_BIN=$(BUILD)/bin XHLOC_TESTBIN=$(BUILD)/tests \
	  XHLOC_FUZZ_BIN=$(FUZZ_BUILD)/bin XHLOC_SKIP_FUZZ=$(XHLOC_SKIP_FUZZ) \
	  FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) tests/run-checks.sh

# check-gpu needs only xhlo-run: on a GPU machine without LLVM it runs the
# artifacts `make gpu-artifacts` compiled elsewhere into build/gpu-e2e/.
check-gpu: $(BUILD)/bin/xhlo-run $(if $(shell command -v $(LLVM_CONFIG) 2>/dev/null),$(BUILD)/bin/xhloc)
	@XHLOC_BIN=$(BUILD)/bin tests/run-checks.sh --gpu

# The e2e modules and the collectives cases compiled for the GPU, for a GPU
# machine that lacks LLVM.
gpu-artifacts: $(BUILD)/bin/xhloc
	@mkdir -p $(BUILD)/gpu-e2e
	@for f in testdata/e2e/*.hlo; do \
	  $(BUILD)/bin/xhloc -o $(BUILD)/gpu-e2e/$$(basename $$f .hlo) $$f || exit 1; \
	done
	@mkdir -p $(BUILD)/gpu-e2e/errors
	@$(BUILD)/bin/xhloc -o $(BUILD)/gpu-e2e/errors/softmax testdata/e2e/softmax.hlo && \
	  python3 tests/gpu/error_cases.py $(BUILD)/gpu-e2e/errors/softmax $(BUILD)/gpu-e2e/errors && \
	  $(BUILD)/bin/xhloc -o $(BUILD)/gpu-e2e/errors/oom tests/gpu/oom.hlo
	@echo "wrote $(BUILD)/gpu-e2e/"
	@XHLOC_BIN=$(BUILD)/bin tests/gpu/check-collectives-cuda.sh --prepare $(BUILD)/gpu-collectives

# What scripts/gpu-check.sh runs on a GPU machine, prepared here (xhloc and
# jax on the CPU; $XHLO_BENCH_PYTHON or build/bench-venv).
gpu-check-prepare: $(BUILD)/bin/xhloc $(BUILD)/bin/xhlo-run
	@scripts/gpu-check.sh --prepare $(BUILD)/gpu-check

asan: | deps
	$(MAKE) BUILD=build-asan CFLAGS="$(ASAN_CFLAGS)" XHLOC_SKIP_FUZZ=1 check

# ---- fuzzing -------------------------------------------------------------
$(FUZZ_BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CLANG) -std=gnu11 $(WARN) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
	  -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/bin/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ -lm -ldl

# The dictionary: every opcode and element type name, plus the keywords and
# attribute names in tests/fuzz/hlo.dict.
$(FUZZ_BUILD)/hlo.dict: lib/hlo/opcodes.def lib/hlo/types.def tests/fuzz/hlo.dict
	@mkdir -p $(dir $@)
	{ sed -n 's/^HLO_OP([A-Z0-9_]*, *\("[^"]*"\).*/\1/p' lib/hlo/opcodes.def; \
	  sed -n 's/^ET([A-Z0-9_]*, *\("[^"]*"\).*/\1/p' lib/hlo/types.def; \
	  cat tests/fuzz/hlo.dict; } > $@

fuzz-build: $(FUZZ_BINS) $(FUZZ_BUILD)/hlo.dict

fuzz: fuzz-build
	FUZZ_FLAGS="$(FUZZ_FLAGS)" tests/fuzz/run.sh fuzz $(FUZZ_SECONDS) $(FUZZ_BINS)

fuzz-smoke: fuzz-build
	FUZZ_FLAGS="$(FUZZ_FLAGS)" tests/fuzz/run.sh smoke $(FUZZ_SMOKE_SECONDS) $(FUZZ_BINS)

# ---- benchmarks ----------------------------------------------------------
bench: $(BENCH_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done

# xhloc against XLA (jax from PyPI in build/bench-venv) on real JAX programs;
# BENCH_ARGS: e.g. --group 11, --only matmul, --quick, --platform cuda.
bench-xla: all
	bench/xla-compare/run.sh $(BENCH_ARGS)

# xhloc's buffer assignment (host, GPU) against XLA CPU's compiled memory
# stats on the corpus models; XLA's figures from bench/memory/xla-cpu-memory.tsv
# (jax in build/bench-venv only for modules not cached there).
# BENCH_ARGS: e.g. --only gemma, --no-xla, --refresh-xla, --real-dumps, --tsv FILE.
bench-memory: $(BUILD)/bin/xhloc
	XHLOC_BIN=$(BUILD)/bin bench/memory/run.sh $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) build-asan $(FUZZ_BUILD)

-include $(shell find $(BUILD) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
