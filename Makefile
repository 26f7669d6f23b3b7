# xhloc - HLO compiler driver and runtime.  See README.md.
#
#   make            build build/bin/xhloc and build/bin/xhlo-run
#   make check      every test that needs no GPU
#   make check-gpu  the tests that run on an NVIDIA GPU
#   make asan       the check suite under AddressSanitizer and UBSan
#   make fuzz       libFuzzer harnesses (FUZZ_SECONDS each, default 60)
#   make bench      benchmarks; they print their figures
#   make clean
#
# Missing build dependencies are installed by scripts/setup.sh.

CC       ?= gcc
BUILD    ?= build
OPT      ?= -O2
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -MMD -MP
LDLIBS   := -lm

# Source sets.  xhlo-run links lib/ only (no LLVM); xhloc links everything.
RUN_SRCS   := $(wildcard lib/support/*.c lib/hlo/*.c lib/eval/*.c lib/runtime/*.c)
XHLOC_SRCS := $(RUN_SRCS) $(wildcard lib/analysis/*.c passes/*.c emitters/*.c)
RUN_OBJS   := $(RUN_SRCS:%.c=$(BUILD)/obj/%.o)
XHLOC_OBJS := $(XHLOC_SRCS:%.c=$(BUILD)/obj/%.o)
XHLOC_MAIN := $(wildcard cmd/xhloc/*.c)
RUN_MAIN   := $(wildcard cmd/xhlo-run/*.c)

.PHONY: all check check-gpu asan fuzz bench clean setup xhloc xhlo-run

all: $(BUILD)/bin/xhloc $(BUILD)/bin/xhlo-run

xhloc: $(BUILD)/bin/xhloc
xhlo-run: $(BUILD)/bin/xhlo-run

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/bin/xhloc: $(XHLOC_MAIN:%.c=$(BUILD)/obj/%.o) $(XHLOC_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/xhlo-run: $(RUN_MAIN:%.c=$(BUILD)/obj/%.o) $(RUN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -ldl

clean:
	rm -rf $(BUILD) build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
