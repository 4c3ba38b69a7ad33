# agentjail build.
#   make              build/agentjail, unit tests and test helpers
#   make SAN=1        the same with AddressSanitizer + UndefinedBehaviorSanitizer in build-san/
#   make test         the whole test suite (tests/run)
#   make fuzz         libFuzzer harnesses (clang) in build-fuzz/
#   make lint         clang-tidy and cppcheck over src/
#   make check-layers the module graph of src/LAYERS (docs/architecture.md)
#   make install      PREFIX=/usr/local DESTDIR=: the binary, manual pages, completions, the
#                     systemd unit of agentjail serve, the tmpfiles.d entry, the demo
#   make uninstall    what make install put there
#   make deb          the Debian package, built by dpkg-buildpackage (debian/) in a copy of the
#                     tree, into $(BUILD)/deb/
CC ?= cc
PKG_CONFIG ?= pkg-config
# libevent_pthreads and libevent_openssl before libevent, libssl before libcrypto: in the
# static link each library's symbols must be defined by one after it. zlib: gzip uploads of the
# E2B API (src/e2b/multipart.c).
# libarchive: image layers (tar, gzip, zstd; src/image/unpack.c).
PKGS := libseccomp jansson libarchive libevent_openssl libevent_pthreads libevent sqlite3 libssl \
	libcrypto zlib

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT ?= -O1
else
BUILD ?= build
SANFLAGS :=
OPT ?= -O2
endif

WERROR ?= -Werror
WARNFLAGS := -Wall -Wextra $(WERROR) -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	-Wformat=2 -Wswitch-enum -Wno-unused-parameter -Wvla -Wpointer-arith -Wno-format-truncation
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS))
# The libraries are Debian's, linked statically by default: resolving four shared objects at
# every start cost about 0.6 ms per `agentjail run` (bench/run-startup.sh). STATIC_LIBS=0
# links them dynamically, for distributors who want library updates without a rebuild.
# OpenSSL and libm are the exceptions: their shared libraries are loaded when first used
# (src/common/lazylib.h), so that the processes that need no TLS and no digest do not relocate
# OpenSSL's tables at start, and none opens libm, which only SQLite's SQL math functions call.
STATIC_LIBS ?= 1
ifeq ($(STATIC_LIBS),1)
# libarchive's static archive needs libzstd after it (the readers agentjail uses need nothing
# else of its dependencies).
PKG_LIBS := -Wl,-Bstatic $(filter-out -lssl -lcrypto,$(shell $(PKG_CONFIG) --libs $(PKGS))) \
	-lzstd -Wl,-Bdynamic
LIB_DEFS := -DAJ_LAZY_LIBS=1
else
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS))
LIB_DEFS :=
endif
CPPFLAGS := -D_GNU_SOURCE -Isrc -I$(BUILD)/gen $(LIB_DEFS)
# A canary in every function with an array or an address taken, as Debian builds its
# packages: a stack overflow in agentjail's own code ends the process (SIGABRT).
HARDENFLAGS := -fstack-protector-strong
CFLAGS_ALL := -std=c17 -g $(OPT) $(WARNFLAGS) $(HARDENFLAGS) $(SANFLAGS) $(PKG_CFLAGS) -MMD -MP \
	$(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) $(LDFLAGS)
# PIE=0 links the agentjail binary at a fixed address. A position-independent binary that
# carries SQLite and libevent statically is relocated at every start: about 130 KiB of pointer
# tables (.data.rel.ro) written by the dynamic loader, some 30 page faults per process and as
# much private memory in every long-lived supervisor (OpenSSL's 360 KiB more where it is
# loaded, src/common/openssl.h). Without PIE those pages stay shared with the page cache; the
# binary's own code and data then lose address randomization (the stack, heap, libraries and
# mappings keep it). bench/README.md has the figures; the default keeps PIE.
PIE ?= 1
# Every library call is bound when the binary starts (-z now), as Debian's hardened builds do:
# the table of library addresses is then read-only for the rest of the process, and no call
# stops in the lazy resolver later, in the supervisor or in the sandbox's init after the clone
# (where the resolver's write to that table is one more copy-on-write page fault). The relative
# relocations are packed (DT_RELR, binutils 2.38 and glibc 2.36 or later; left out where the
# link fails without it): the table the loader reads at every start shrinks from 570 KiB to
# 10 KiB. Paired with the previous link, `agentjail run -- /bin/true` 0.96 and `agentjail exec`
# 0.98 (bench/README.md).
RELR_LDFLAGS := $(shell printf 'int main(void){return 0;}\n' | \
	$(CC) -x c - -o /dev/null -Wl,-z,pack-relative-relocs 2>/dev/null && \
	echo -Wl,-z,pack-relative-relocs)
AJ_LDFLAGS := $(if $(filter 0,$(PIE)),-no-pie) -Wl,-z,relro,-z,now $(RELR_LDFLAGS)

SRC := $(sort $(wildcard src/*/*.c))
LIB_SRC := $(filter-out src/cli/main.c,$(SRC))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/seccomp_default.o $(BUILD)/gen/rootfs_rules.o \
	$(BUILD)/gen/seccomp_tier_rules.o $(BUILD)/gen/seccomp_gvisor_rules.o \
	$(BUILD)/gen/console_assets.o
MAIN_OBJ := $(BUILD)/src/cli/main.o
# Linked by name: only the static libraries after the archive call its functions (libm's, for
# SQLite), so the archive's copy would never be pulled in.
LAZY_OBJ := $(BUILD)/src/common/libm.o

UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRC := $(sort $(wildcard tests/helpers/*.c))
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/helpers/%)

# The compiler tool runs at build time and never inside a sandbox: no sanitizers.
TOOL_SRC := tools/seccomp-compile.c src/common/err.c src/common/util.c src/common/strv.c \
	src/common/alloc.c src/rules/seccomp.c

.PHONY: all test fuzz lint clean format-check check-layers man completions install uninstall deb
all: $(BUILD)/agentjail $(UNIT_BIN) $(HELPER_BIN) man completions

$(BUILD)/agentjail: $(MAIN_OBJ) $(LAZY_OBJ) $(BUILD)/libagentjail.a
	$(CC) $(LDFLAGS_ALL) $(AJ_LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/libagentjail.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c | $(BUILD)/gen/seccomp_default.c
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -c -o $@ $<

$(BUILD)/gen/seccomp_default.o: $(BUILD)/gen/seccomp_default.c
	$(CC) $(CPPFLAGS) -std=c17 -O2 -c -o $@ $<

$(BUILD)/gen/seccomp_default.c: data/seccomp/default.rules $(BUILD)/tools/seccomp-compile
	@mkdir -p $(dir $@)
	$(BUILD)/tools/seccomp-compile $< $@

$(BUILD)/gen/rootfs_rules.o: $(BUILD)/gen/rootfs_rules.c
	$(CC) -std=c17 -O2 -c -o $@ $<

$(BUILD)/gen/rootfs_rules.c: data/rootfs.rules $(BUILD)/tools/embed
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed aj_rootfs_rules $< $@

# The landlock tier's extra seccomp rules: compiled with the default profile at launch.
$(BUILD)/gen/seccomp_tier_rules.o: $(BUILD)/gen/seccomp_tier_rules.c
	$(CC) -std=c17 -O2 -c -o $@ $<

$(BUILD)/gen/seccomp_tier_rules.c: data/seccomp/landlock-tier.rules $(BUILD)/tools/embed
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed aj_seccomp_tier_rules $< $@

# The web console (src/server/console.c): data/console/ and xterm.js from npm, pinned by
# data/console/package-lock.json and installed by scripts/console-deps (npm ci) into
# CONSOLE_NPM, which the normal and the sanitized builds share.
CONSOLE_NPM ?= build/npm-console
CONSOLE_XTERM := $(CONSOLE_NPM)/node_modules/@xterm
CONSOLE_FILES := index.html=data/console/index.html console.css=data/console/console.css \
	$(foreach f,$(notdir $(wildcard data/console/*.js)),$(f)=data/console/$(f)) \
	vendor/xterm.js=$(CONSOLE_XTERM)/xterm/lib/xterm.js \
	vendor/xterm.css=$(CONSOLE_XTERM)/xterm/css/xterm.css \
	vendor/addon-fit.js=$(CONSOLE_XTERM)/addon-fit/lib/addon-fit.js \
	vendor/xterm-LICENSE.txt=$(CONSOLE_XTERM)/xterm/LICENSE
$(CONSOLE_NPM)/.stamp: data/console/package.json data/console/package-lock.json scripts/console-deps
	scripts/console-deps $(CONSOLE_NPM)

$(BUILD)/gen/console_assets.o: $(BUILD)/gen/console_assets.c src/server/console_assets.h
	$(CC) -Isrc -std=c17 -O2 -c -o $@ $<

$(BUILD)/gen/console_assets.c: $(wildcard data/console/*) $(CONSOLE_NPM)/.stamp \
		$(BUILD)/tools/embed tools/console-assets
	@mkdir -p $(dir $@)
	tools/console-assets $(BUILD)/tools/embed $@ $(CONSOLE_FILES)

# The gvisor tier's rules for runsc itself: compiled with nothing else, at plan time.
$(BUILD)/gen/seccomp_gvisor_rules.o: $(BUILD)/gen/seccomp_gvisor_rules.c
	$(CC) -std=c17 -O2 -c -o $@ $<

$(BUILD)/gen/seccomp_gvisor_rules.c: data/seccomp/gvisor-tier.rules $(BUILD)/tools/embed
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed aj_seccomp_gvisor_rules $< $@

$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -O2 -Wall -Wextra $(WERROR) -o $@ $<

$(BUILD)/tools/seccomp-compile: $(TOOL_SRC) src/rules/seccomp.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c17 -O2 -g -Wall -Wextra -Wno-format-truncation $(WERROR) -o $@ $(TOOL_SRC) \
		$(shell $(PKG_CONFIG) --cflags --libs libseccomp jansson)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(LAZY_OBJ) $(BUILD)/libagentjail.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< \
		$(LAZY_OBJ) $(BUILD)/libagentjail.a $(PKG_LIBS)

# Helpers run inside sandboxes as the attacker's code: plain, static-free, no sanitizers.
$(BUILD)/tests/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu17 -O2 -Wall -Wextra $(WERROR) -o $@ $<

test: all
	tests/run

# The manual pages and the shell completions are printed by the binary from its option tables
# (and, for the pages, docs/cli.md): what they say is what the parser accepts.
MAN_STAMP := $(BUILD)/man/.stamp
COMPLETIONS := $(BUILD)/completions/agentjail.bash $(BUILD)/completions/_agentjail \
	$(BUILD)/completions/agentjail.fish
man: $(MAN_STAMP)
completions: $(COMPLETIONS)
$(MAN_STAMP): $(BUILD)/agentjail docs/cli.md
	@rm -rf $(BUILD)/man
	$(BUILD)/agentjail __man $(BUILD)/man docs/cli.md
	@touch $@
$(BUILD)/completions/agentjail.bash: $(BUILD)/agentjail
	@mkdir -p $(dir $@)
	$(BUILD)/agentjail completion bash >$@.tmp && mv $@.tmp $@
$(BUILD)/completions/_agentjail: $(BUILD)/agentjail
	@mkdir -p $(dir $@)
	$(BUILD)/agentjail completion zsh >$@.tmp && mv $@.tmp $@
$(BUILD)/completions/agentjail.fish: $(BUILD)/agentjail
	@mkdir -p $(dir $@)
	$(BUILD)/agentjail completion fish >$@.tmp && mv $@.tmp $@

# Where make install puts things. systemd and tmpfiles.d read /usr/local/lib/... as well as
# /usr/lib/...; the Debian package passes PREFIX=/usr.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
INSTALLED := $(BINDIR)/agentjail $(DATADIR)/bash-completion/completions/agentjail \
	$(DATADIR)/zsh/vendor-completions/_agentjail \
	$(DATADIR)/fish/vendor_completions.d/agentjail.fish $(UNITDIR)/agentjail.service \
	$(TMPFILESDIR)/agentjail.conf $(DATADIR)/agentjail/demo

install: $(BUILD)/agentjail $(MAN_STAMP) $(COMPLETIONS)
	install -D -m 0755 $(BUILD)/agentjail $(DESTDIR)$(BINDIR)/agentjail
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(BUILD)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -D -m 0644 $(BUILD)/completions/agentjail.bash \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/agentjail
	install -D -m 0644 $(BUILD)/completions/_agentjail \
		$(DESTDIR)$(DATADIR)/zsh/vendor-completions/_agentjail
	install -D -m 0644 $(BUILD)/completions/agentjail.fish \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/agentjail.fish
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' data/systemd/agentjail.service.in \
		>$(DESTDIR)$(UNITDIR)/agentjail.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/agentjail.service
	install -D -m 0644 data/systemd/agentjail.tmpfiles $(DESTDIR)$(TMPFILESDIR)/agentjail.conf
	install -D -m 0755 scripts/demo $(DESTDIR)$(DATADIR)/agentjail/demo

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	for p in $(notdir $(wildcard $(BUILD)/man/*.1)); do rm -f $(DESTDIR)$(MANDIR)/man1/$$p; done
	-rmdir $(DESTDIR)$(DATADIR)/agentjail 2>/dev/null

# dpkg-buildpackage runs debian/rules clean, which would remove build/ and build-san/ of this
# tree: the package is built in a copy of the tracked files instead.
DEB_DIR := $(BUILD)/deb
DEB_JOBS ?= 2
deb: $(CONSOLE_NPM)/.stamp
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	git ls-files -z | xargs -0 tar -cf - | tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u SAN \
		CONSOLE_NPM=$(abspath $(CONSOLE_NPM)) \
		DEB_BUILD_OPTIONS="nocheck parallel=$(DEB_JOBS)" dpkg-buildpackage -b -us -uc
	ls $(DEB_DIR)/*.deb

FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
fuzz: $(FUZZ_BIN)
FUZZ_GEN := build/gen/seccomp_default.c build/gen/rootfs_rules.c build/gen/seccomp_tier_rules.c \
	build/gen/console_assets.c build/gen/seccomp_gvisor_rules.c
build-fuzz/%: tests/fuzz/%.c $(filter-out src/cli/%,$(LIB_SRC)) $(FUZZ_GEN)
	@mkdir -p build-fuzz
	clang -std=c17 -g -O1 -D_GNU_SOURCE $(LIB_DEFS) -Isrc -Ibuild/gen \
		-fsanitize=fuzzer,address,undefined \
		$(PKG_CFLAGS) -o $@ $< $(filter-out src/cli/%,$(LIB_SRC)) $(FUZZ_GEN) \
		$(PKG_LIBS)

# Checks and the reason for each one left out: .clang-tidy. One clang-tidy process per file
# (in parallel under make -j): run over several files at once, clang 14's analyzer reports
# uninitialised va_lists that are not. tools/cppcheck/jansson.cfg tells cppcheck, which does
# not read system headers, what json_object_foreach and json_array_foreach expand to.
LINT_TIDY := $(SRC:%=lint-tidy/%)
.PHONY: lint-tidy lint-cppcheck $(LINT_TIDY)
lint: lint-tidy lint-cppcheck
lint-tidy: $(LINT_TIDY)
$(LINT_TIDY): lint-tidy/%: % $(BUILD)/gen/seccomp_default.c
	@echo "  TIDY $<"
	@clang-tidy --quiet --warnings-as-errors='*' $< -- $(CPPFLAGS) -std=c17 $(PKG_CFLAGS)
lint-cppcheck:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		--library=tools/cppcheck/jansson.cfg --suppress=missingIncludeSystem \
		-D_GNU_SOURCE $(LIB_DEFS) -Isrc $(SRC)

check-layers:
	tools/check-layers

format-check:
	clang-format --dry-run --Werror $(SRC) $(wildcard src/*/*.h)

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
