# spin - streaming Processing in the Network on Linux XDP
#
#   make            build everything (runtime, libspin, spinctl, samples, tests, bench)
#   make deps       install the Debian packages the build and tests need
#   make test       run the whole test suite (root)
#   make demo       ping-pong demo on veth pairs in namespaces (root)
#   make bench      benchmarks (root), results in bench/results/
#   make install    PREFIX=/usr/local
#   V=1             show full commands; CLANG=clang-19 to pick a compiler

CLANG	?= clang
CC	?= gcc
BPFTOOL	?= bpftool
PREFIX	?= /usr/local
ARCH	:= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

INCLUDES  := -Iinclude -Ivmlinux/$(ARCH)
# every object also writes <target>.d, the headers and sources it includes
DEPS = -MMD -MP -MF $@.d
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) $(INCLUDES) \
	-Wall -Wno-unused-function -Wno-unused-variable
CFLAGS	?= -g -O2
CFLAGS	+= -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Iinclude -D_GNU_SOURCE -DSPIN_LIBDIR='"$(PREFIX)/lib/spin"'
LDLIBS	:= -lbpf -lelf -lz -lpthread

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(LIB_SRCS:.c=.o)
LIBSPIN  := lib/libspin.a

# Every *.bpf.c in these directories becomes a .bpf.o
BPF_SRCS := $(wildcard bpf/*.bpf.c selftests/progs/*.bpf.c bench/*.bpf.c)
BPF_OBJS := $(BPF_SRCS:.c=.o)

HDRS := $(wildcard include/spin/*.h)

# Sample handlers: every samples/<name>/*.bpf.c becomes a .bpf.o; the
# ping-pong is built twice (streaming and store-and-forward, -DSTREAMING).
SAMPLE_BPF  := $(patsubst %.bpf.c,%.bpf.o,$(filter-out samples/pingpong/%,$(wildcard samples/*/*.bpf.c))) \
	samples/pingpong/pingpong_stream.bpf.o samples/pingpong/pingpong_store.bpf.o

# Userspace programs: tools/*.c, samples/*/*_host.c, bench/*.c, selftests/*.c
TOOLS      := tools/spinctl
HOST_SRCS  := $(filter-out %.bpf.c,$(wildcard samples/*/*.c bench/*.c selftests/*.c))
HOST_BINS  := $(HOST_SRCS:.c=)

all: $(LIBSPIN) $(TOOLS) $(BPF_OBJS) $(SAMPLE_BPF) $(HOST_BINS)

vmlinux/$(ARCH)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)vmlinux/gen.sh

%.bpf.o: %.bpf.c $(HDRS) vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -c $< -o $@

samples/pingpong/pingpong_stream.bpf.o: samples/pingpong/pingpong.bpf.c $(HDRS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -DSTREAMING=1 -c $< -o $@

samples/pingpong/pingpong_store.bpf.o: samples/pingpong/pingpong.bpf.c $(HDRS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -DSTREAMING=0 -c $< -o $@

lib/%.o: lib/%.c $(HDRS) $(wildcard lib/*.h)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPS) -fPIC -c $< -o $@

$(LIBSPIN): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

tools/%: tools/%.c $(LIBSPIN) $(HDRS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPS) $< $(LIBSPIN) $(LDLIBS) -o $@

samples/%.bpf.o: samples/%.bpf.c $(HDRS) vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -c $< -o $@

samples/%: samples/%.c $(LIBSPIN) $(HDRS) $(wildcard samples/*.h)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPS) $< $(LIBSPIN) $(LDLIBS) -lm -o $@

bench/%: bench/%.c $(LIBSPIN) $(HDRS) $(wildcard bench/*.h)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPS) $< $(LIBSPIN) $(LDLIBS) -lm -o $@

selftests/%: selftests/%.c $(LIBSPIN) $(HDRS) $(wildcard selftests/*.h)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPS) $< $(LIBSPIN) $(LDLIBS) -o $@

deps:
	$(Q)./run deps

test: all
	$(Q)selftests/run_tests.sh

demo: all
	$(Q)samples/pingpong/demo.sh

bench: all
	$(Q)bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/spin \
		$(DESTDIR)$(PREFIX)/include/spin $(DESTDIR)$(PREFIX)/lib
	install -m 755 tools/spinctl $(DESTDIR)$(PREFIX)/bin/
	install -m 644 bpf/spin_rt.bpf.o $(DESTDIR)$(PREFIX)/lib/spin/
	install -m 644 $(LIBSPIN) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/spin/*.h $(DESTDIR)$(PREFIX)/include/spin/
	install -m 644 vmlinux/$(ARCH)/vmlinux.h $(DESTDIR)$(PREFIX)/include/spin/vmlinux.h

clean:
	$(Q)rm -f lib/*.o $(LIBSPIN) $(TOOLS) $(BPF_OBJS) $(SAMPLE_BPF) $(HOST_BINS)
	$(Q)rm -f $(DEPFILES)

DEPFILES := $(wildcard lib/*.d tools/*.d bpf/*.d bench/*.d selftests/*.d selftests/progs/*.d samples/*/*.d)
-include $(DEPFILES)

.PHONY: all deps test demo bench install clean
.DELETE_ON_ERROR:
