# spin - streaming Processing in the Network on Linux XDP
#
#   make            build everything (runtime, libspin, spinctl, samples, tests, bench)
#   make deps       install the Debian packages the build and tests need
#   make test       run the whole test suite (root)
#   make demo       ping-pong demo on veth pairs in namespaces (root)
#   make bench      benchmarks (root), results in bench/results/
#   make install    PREFIX=/usr/local DESTDIR= LIBDIR=$(PREFIX)/lib (see README, "Install")
#   make uninstall  the same variables
#   V=1             show full commands; CLANG=clang-19 to pick a compiler

CLANG	?= clang
CC	?= gcc
BPFTOOL	?= bpftool
PREFIX	?= /usr/local
# Install directories (LIBDIR=$(PREFIX)/lib/x86_64-linux-gnu for multiarch).
# The runtime object's directory is compiled into libspin: changing PREFIX or
# LIBDIR rebuilds what embeds it (lib/paths.stamp).
BINDIR	?= $(PREFIX)/sbin
LIBDIR	?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR	?= $(PREFIX)/share
MANDIR	?= $(DATADIR)/man
DOCDIR	?= $(DATADIR)/doc/spin
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
UNITDIR	?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SPINCONFDIR := $(SYSCONFDIR)/spin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SPINLIBDIR := $(LIBDIR)/spin
BPFINCLUDEDIR := $(SPINLIBDIR)/include
VERSION	:= 0.1
# libspin.so.$(SOVER): bumped when the C API or ABI changes incompatibly
SOVER	:= 1
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
	-Iinclude -D_GNU_SOURCE -DSPIN_LIBDIR='"$(SPINLIBDIR)"'
LDLIBS	:= -lbpf -lelf -lz -lpthread

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(LIB_SRCS:.c=.o)
LIBSPIN  := lib/libspin.a
LIBSPIN_SO := lib/libspin.so.$(SOVER)
# Headers of the host API (installed in INCLUDEDIR/spin), of the handler
# API (installed with the runtime internals they include in BPFINCLUDEDIR,
# a self-contained tree for clang -target bpf), and the internals
PUB_HDRS := spin.h wire.h auth.h xsk.h ptl_types.h portals4.h portals4_spin.h
BPF_HDRS := handler.h wire.h auth.h ptl_types.h softfloat.h maps.bpf.h rt_common.bpf.h

# Every *.bpf.c in these directories becomes a .bpf.o
BPF_SRCS := $(wildcard bpf/*.bpf.c selftests/progs/*.bpf.c bench/*.bpf.c)
BPF_OBJS := $(BPF_SRCS:.c=.o)

HDRS := $(wildcard include/spin/*.h)

# Sample handlers: every samples/<name>/*.bpf.c becomes a .bpf.o; the
# ping-pong is built twice (streaming and store-and-forward, -DSTREAMING).
SAMPLE_BPF  := $(patsubst %.bpf.c,%.bpf.o,$(filter-out samples/pingpong/%,$(wildcard samples/*/*.bpf.c))) \
	samples/pingpong/pingpong_stream.bpf.o samples/pingpong/pingpong_store.bpf.o

# The helpers-only objects for kernels without the kfuncs the others call
# (-DSPIN_NO_KFUNCS, docs/kernels.md): the runtime and every handler the
# demo and the unit and veth suites load.  libspin loads X.compat.bpf.o
# instead of X.bpf.o when the kernel lacks them (or SPIN_COMPAT_FORCE).
COMPAT_BPF := bpf/spin_rt.compat.bpf.o samples/pingpong/pingpong_stream.compat.bpf.o \
	samples/pingpong/pingpong_store.compat.bpf.o \
	$(patsubst %.bpf.c,%.compat.bpf.o,$(filter-out selftests/progs/impair.bpf.c \
		selftests/progs/xdp_pass.bpf.c,$(wildcard selftests/progs/*.bpf.c)))

# Userspace programs: tools/*.c, samples/*/*_host.c, bench/*.c, selftests/*.c
TOOLS      := tools/spinctl
HOST_SRCS  := $(filter-out %.bpf.c,$(wildcard samples/*/*.c bench/*.c selftests/*.c))
HOST_BINS  := $(HOST_SRCS:.c=)

all: $(LIBSPIN) $(LIBSPIN_SO) $(TOOLS) $(BPF_OBJS) $(SAMPLE_BPF) $(COMPAT_BPF) $(HOST_BINS)

vmlinux/$(ARCH)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)vmlinux/gen.sh

%.bpf.o: %.bpf.c $(HDRS) vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -c $< -o $@

%.compat.bpf.o: %.bpf.c $(HDRS) vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -DSPIN_NO_KFUNCS -c $< -o $@

samples/pingpong/pingpong_%.compat.bpf.o: samples/pingpong/pingpong.bpf.c $(HDRS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -DSPIN_NO_KFUNCS \
		-DSTREAMING=$(if $(filter stream,$*),1,0) -c $< -o $@

samples/pingpong/pingpong_stream.bpf.o: samples/pingpong/pingpong.bpf.c $(HDRS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -DSTREAMING=1 -c $< -o $@

samples/pingpong/pingpong_store.bpf.o: samples/pingpong/pingpong.bpf.c $(HDRS)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPS) -DSTREAMING=0 -c $< -o $@

lib/%.o: lib/%.c $(HDRS) $(wildcard lib/*.h)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPS) -fPIC -c $< -o $@

# lib/pmix.c takes PMIx's types and constants from pmix.h (libpmix-dev);
# libpmix itself is opened with dlopen at run time (docs/portals.md)
PMIX_INC := $(shell pkg-config --variable=includedir pmix 2>/dev/null)
lib/pmix.o: CPPFLAGS += -isystem $(PMIX_INC)
selftests/pmix_forge: CFLAGS += -isystem $(PMIX_INC)
ifeq ($(PMIX_INC),)
lib/pmix.o selftests/pmix_forge: pmix-missing
.PHONY: pmix-missing
pmix-missing:
	@echo "lib/pmix.c needs pmix.h: install libpmix-dev (./run deps does)" >&2; exit 1
endif

$(LIBSPIN): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The install paths compiled into libspin (SPIN_LIBDIR): rewritten only when
# they change, so that 'make install PREFIX=/usr' rebuilds what embeds them.
lib/paths.stamp: FORCE
	$(Q)echo '$(SPINLIBDIR) $(BINDIR) $(SPINCONFDIR)' | cmp -s - $@ || \
		echo '$(SPINLIBDIR) $(BINDIR) $(SPINCONFDIR)' > $@
lib/rt.o: lib/paths.stamp

# The shared library exports exactly the functions the public headers
# declare (lib/gen-map.sh): everything else stays hidden.
lib/libspin.map: lib/gen-map.sh $(addprefix include/spin/,$(PUB_HDRS))
	$(call msg,GEN,$@)
	$(Q)CC="$(CC)" lib/gen-map.sh $(SOVER) $(addprefix include/spin/,$(PUB_HDRS)) > $@.tmp && mv $@.tmp $@

$(LIBSPIN_SO): $(LIB_OBJS) lib/libspin.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libspin.so.$(SOVER) -Wl,--version-script=lib/libspin.map \
		-Wl,--no-undefined $(LDFLAGS) $(LIB_OBJS) $(LDLIBS) -o $@
	$(Q)ln -sf libspin.so.$(SOVER) lib/libspin.so

tools/%: tools/%.c $(LIBSPIN) $(HDRS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPS) $(LDFLAGS) $< $(LIBSPIN) $(LDLIBS) -o $@

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

# spin.pc with paths relative to ${prefix} where they are below it
define SPIN_PC
prefix=$(PREFIX)
exec_prefix=$${prefix}
libdir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
includedir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
runtimedir=$${libdir}/spin
bpfincludedir=$${libdir}/spin/include
sbindir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(BINDIR))
abi=$(shell sed -n 's/^\#define SPIN_ABI_VERSION[[:space:]]*//p' include/spin/wire.h)

Name: spin
Description: sPIN (streaming Processing in the Network) on Linux XDP: libspin and Portals 4
Version: $(VERSION)
Requires.private: libbpf
Libs: -L$${libdir} -lspin
Libs.private: -lelf -lz -lpthread
Cflags: -I$${includedir}
endef
export SPIN_PC

# spin@.service and the example configuration, with the install paths
SUBST = sed -e 's|@SBINDIR@|$(BINDIR)|g' -e 's|@SPINCONFDIR@|$(SPINCONFDIR)|g'
tools/spin@.service: tools/spin@.service.in lib/paths.stamp
	$(call msg,GEN,$@)
	$(Q)$(SUBST) $< > $@
tools/spin.conf: tools/spin.conf.example lib/paths.stamp
	$(call msg,GEN,$@)
	$(Q)$(SUBST) $< > $@

lib/spin.pc: lib/paths.stamp Makefile include/spin/wire.h
	$(call msg,GEN,$@)
	$(Q)echo "$$SPIN_PC" > $@

INSTALL_DIRS = $(BINDIR) $(LIBDIR) $(PKGCONFIGDIR) $(SPINLIBDIR) $(BPFINCLUDEDIR)/spin \
	$(INCLUDEDIR)/spin $(MANDIR)/man8 $(MANDIR)/man7 $(MANDIR)/man3 $(BASHCOMPDIR) \
	$(UNITDIR) $(DOCDIR)

install: $(LIBSPIN) $(LIBSPIN_SO) $(TOOLS) bpf/spin_rt.bpf.o bpf/spin_rt.compat.bpf.o lib/spin.pc tools/spin@.service \
		tools/spin.conf
	install -d $(addprefix $(DESTDIR),$(INSTALL_DIRS))
	install -m 755 tools/spinctl $(DESTDIR)$(BINDIR)/
	install -m 644 bpf/spin_rt.bpf.o bpf/spin_rt.compat.bpf.o $(DESTDIR)$(SPINLIBDIR)/
	install -m 644 $(LIBSPIN) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIBSPIN_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libspin.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libspin.so
	ln -sf libspin.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libportals.so
	install -m 644 lib/spin.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 644 $(addprefix include/spin/,$(PUB_HDRS)) $(DESTDIR)$(INCLUDEDIR)/spin/
	install -m 644 include/portals4.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(addprefix include/spin/,$(BPF_HDRS)) $(DESTDIR)$(BPFINCLUDEDIR)/spin/
	install -m 644 vmlinux/$(ARCH)/vmlinux.h $(DESTDIR)$(BPFINCLUDEDIR)/
	install -m 644 man/spinctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 man/spin-handler.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 man/libspin.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 tools/spinctl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/spinctl
	install -m 644 docs/*.md tools/spin.lua $(DESTDIR)$(DOCDIR)/
	install -m 644 tools/spin.conf $(DESTDIR)$(DOCDIR)/spin.conf.example
	install -m 644 tools/spin@.service $(DESTDIR)$(UNITDIR)/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/spinctl $(DESTDIR)$(SPINLIBDIR)/spin_rt.bpf.o $(DESTDIR)$(SPINLIBDIR)/spin_rt.compat.bpf.o
	rm -f $(DESTDIR)$(LIBDIR)/libspin.a $(DESTDIR)$(LIBDIR)/libspin.so.$(SOVER) \
		$(DESTDIR)$(LIBDIR)/libspin.so $(DESTDIR)$(LIBDIR)/libportals.so \
		$(DESTDIR)$(PKGCONFIGDIR)/spin.pc $(DESTDIR)$(INCLUDEDIR)/portals4.h
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/spin/,$(PUB_HDRS))
	rm -f $(addprefix $(DESTDIR)$(BPFINCLUDEDIR)/spin/,$(BPF_HDRS)) $(DESTDIR)$(BPFINCLUDEDIR)/vmlinux.h
	rm -f $(DESTDIR)$(MANDIR)/man8/spinctl.8 $(DESTDIR)$(MANDIR)/man7/spin-handler.7 \
		$(DESTDIR)$(MANDIR)/man3/libspin.3 $(DESTDIR)$(BASHCOMPDIR)/spinctl
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(wildcard docs/*.md)) spin.lua \
		spin.conf.example) $(DESTDIR)$(UNITDIR)/spin@.service
	-rmdir $(DESTDIR)$(BPFINCLUDEDIR)/spin $(DESTDIR)$(BPFINCLUDEDIR) $(DESTDIR)$(SPINLIBDIR) \
		$(DESTDIR)$(INCLUDEDIR)/spin $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	$(Q)rm -f lib/*.o $(LIBSPIN) $(LIBSPIN_SO) lib/libspin.so lib/libspin.map lib/spin.pc lib/paths.stamp tools/spin@.service tools/spin.conf $(TOOLS) $(BPF_OBJS) $(SAMPLE_BPF) $(COMPAT_BPF) $(HOST_BINS)
	$(Q)rm -f $(DEPFILES)

DEPFILES := $(wildcard lib/*.d tools/*.d bpf/*.d bench/*.d selftests/*.d selftests/progs/*.d samples/*/*.d)
-include $(DEPFILES)

FORCE:
.PHONY: all deps test demo bench install uninstall clean FORCE
.DELETE_ON_ERROR:
