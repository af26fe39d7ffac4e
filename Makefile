# Parley: one command to run the daemon, one to run the tests. See README.md.
SWIFT ?= swift
PREFIX ?= /usr/local
CONFIG ?= debug

# Installation layout (see docs/INSTALL.md). DESTDIR is prepended to every path, for
# packaging; nothing else knows about it.
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
# systemd looks for units, sysusers.d and tmpfiles.d under both /usr/lib and
# /usr/local/lib, so these follow PREFIX for the two usual prefixes. With any other
# PREFIX set them to /etc/systemd/system, /etc/sysusers.d and /etc/tmpfiles.d.
UNITDIR ?= $(PREFIX)/lib/systemd/system
# systemd user units (parley web, docs/WEB.md; parley notify, docs/NOTIFY.md).
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
# The config lives in /etc whatever the prefix: it is what the unit's
# ConfigurationDirectory= points parleyd at.
SYSCONFDIR ?= /etc
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# Where `make release` puts the binaries; install takes them from here.
RELEASE_BIN ?= .build/release
# The CLI whose --generate-completion-script output becomes the completions.
PARLEY_BIN ?= $(RELEASE_BIN)/parley

INSTALL ?= install

# The release: ParleyVersion.string (what --version prints; debian/changelog agrees, which
# the package build checks) and the Debian package's version and architecture.
VERSION := $(shell sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/ParleyControlProtocol/ParleyVersion.swift)
DEB_VERSION ?= $(shell dpkg-parsechangelog -SVersion 2>/dev/null)
DEB_ARCH ?= $(shell dpkg --print-architecture 2>/dev/null)
DEB = dist/parley_$(DEB_VERSION)_$(DEB_ARCH).deb

# Every file `make install` creates, so `make uninstall` removes exactly these.
INSTALLED_BINS = $(DESTDIR)$(BINDIR)/parleyd $(DESTDIR)$(BINDIR)/parley $(DESTDIR)$(BINDIR)/parley-mdns
INSTALLED_SYSTEMD = $(DESTDIR)$(UNITDIR)/parleyd.service \
	$(DESTDIR)$(UNITDIR)/parleyd@.service \
	$(DESTDIR)$(USERUNITDIR)/parley-web.service \
	$(DESTDIR)$(USERUNITDIR)/parley-notify.service \
	$(DESTDIR)$(SYSUSERSDIR)/parley.conf \
	$(DESTDIR)$(TMPFILESDIR)/parley.conf
INSTALLED_CONFIG = $(DESTDIR)$(SYSCONFDIR)/parley/parleyd.toml.example
INSTALLED_MAN = $(DESTDIR)$(MANDIR)/man8/parleyd.8 $(DESTDIR)$(MANDIR)/man1/parley.1
INSTALLED_COMPLETIONS = $(DESTDIR)$(BASHCOMPDIR)/parley \
	$(DESTDIR)$(ZSHCOMPDIR)/_parley \
	$(DESTDIR)$(FISHCOMPDIR)/parley.fish

.PHONY: all deps test-deps bench-deps bench bench-smoke build release run test unit-test system-test fuzz clean \
	install install-bin install-systemd install-config install-man install-completions \
	uninstall check-systemd deb dist package-deps

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

build: deps
	$(SWIFT) build -c $(CONFIG)

# The Swift runtime and Foundation are linked into the binaries (--static-swift-stdlib),
# so what `make install` or `make deb` installs runs on hosts without a Swift toolchain;
# they need only Debian's C libraries (libsodium, avahi's dns_sd compat library, SQLite).
# --disable-local-rpath: no RUNPATH ($ORIGIN) either; the binaries load nothing of their own.
RELEASE_FLAGS = -c release --static-swift-stdlib --disable-local-rpath
release: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product parleyd
	$(SWIFT) build $(RELEASE_FLAGS) --product parley
	$(SWIFT) build $(RELEASE_FLAGS) --product parley-mdns

# Runs parleyd in the foreground with user-mode defaults (state in
# $XDG_STATE_HOME/parley or ~/.local/state/parley). Extra flags: make run ARGS="--name alice".
run: deps
	$(SWIFT) build -c $(CONFIG) --product parleyd
	$(SWIFT) build -c $(CONFIG) --product parley
	./.build/$(CONFIG)/parleyd $(ARGS)

# The whole suite: unit tests (XCTest) then system tests (real processes, pytest).
test: test-deps
	scripts/run-tests.sh

# libFuzzer over every parser of untrusted input (Fuzz/, see scripts/fuzz.sh): builds the
# fuzz package with -sanitize=fuzzer,address, runs each target FUZZ_SECONDS from the seeds
# in Fuzz/Corpus and prints executions, coverage and crashes per target.
FUZZ_SECONDS ?= 60
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf .build Fuzz/.build Fuzz/.build-seeds

# --- Benchmarks (docs/BENCHMARKS.md) ---------------------------------------------
bench-deps:
	@scripts/install-deps.sh bench

# Release build, then every row beside its reference; prints the table, writes
# bench-results.json and puts the table into docs/BENCHMARKS.md. Takes a few minutes.
BENCH_CMD = .build/release/parley-bench --json bench-results.json --update-doc docs/BENCHMARKS.md
bench: bench-deps
	$(SWIFT) build -c release --product parleyd
	$(SWIFT) build -c release --product parley-bench
	$(SWIFT) build -c release --product parley
	$(BENCH_CMD) --command "make bench"

# The seconds-long version CI runs (Tests/system/test_bench_smoke.py does the same).
bench-smoke: deps
	$(SWIFT) build -c $(CONFIG) --product parleyd
	$(SWIFT) build -c $(CONFIG) --product parley-bench
	./.build/$(CONFIG)/parley-bench --smoke --json bench-results.json

# --- Packages (docs/INSTALL.md) --------------------------------------------------
package-deps:
	@scripts/install-deps.sh package

# dist/parley_<version>_<arch>.deb: debian/rules runs `make release` and `make install`
# into the package tree; debhelper adds the maintainer scripts. DEB_VERSION=... builds
# the same package under another version (the upgrade test's 0.1.0+test1).
deb: deps package-deps
	mkdir -p dist
	PARLEY_DEB_VERSION=$(DEB_VERSION) dpkg-buildpackage -b --no-sign --post-clean \
	  --buildinfo-option=-udist --changes-option=-udist \
	  --buildinfo-file=dist/parley_$(DEB_VERSION)_$(DEB_ARCH).buildinfo \
	  --changes-file=dist/parley_$(DEB_VERSION)_$(DEB_ARCH).changes
	@echo "built $(DEB)"

# dist/parley-<version>.tar.gz: the sources and every Swift package they depend on
# (vendor/), so that `make deb` or `make release` works on a machine without internet.
dist:
	scripts/make-dist.sh "$(VERSION)" dist

# --- Installation --------------------------------------------------------------
# `make release && sudo make install`: install never builds, so it does not need the
# Swift toolchain on root's PATH and does not leave root-owned files in .build.
install: install-bin install-systemd install-config install-man install-completions

install-bin:
	@for bin in parleyd parley parley-mdns; do \
	  [ -x "$(RELEASE_BIN)/$$bin" ] || { echo "install: $(RELEASE_BIN)/$$bin is missing; run 'make release' first" >&2; exit 1; }; \
	done
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0755 $(RELEASE_BIN)/parleyd $(RELEASE_BIN)/parley $(RELEASE_BIN)/parley-mdns $(DESTDIR)$(BINDIR)/

install-systemd:
	$(INSTALL) -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/parleyd.service.in > $(DESTDIR)$(UNITDIR)/parleyd.service.tmp
	mv $(DESTDIR)$(UNITDIR)/parleyd.service.tmp $(DESTDIR)$(UNITDIR)/parleyd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/parleyd.service
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/parleyd@.service.in > $(DESTDIR)$(UNITDIR)/parleyd@.service.tmp
	mv $(DESTDIR)$(UNITDIR)/parleyd@.service.tmp $(DESTDIR)$(UNITDIR)/parleyd@.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/parleyd@.service
	$(INSTALL) -m 0644 systemd/parley.sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/parley.conf
	$(INSTALL) -m 0644 systemd/parley.tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/parley.conf
	$(INSTALL) -d $(DESTDIR)$(USERUNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/parley-web.service.in > $(DESTDIR)$(USERUNITDIR)/parley-web.service.tmp
	mv $(DESTDIR)$(USERUNITDIR)/parley-web.service.tmp $(DESTDIR)$(USERUNITDIR)/parley-web.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/parley-web.service
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/parley-notify.service.in > $(DESTDIR)$(USERUNITDIR)/parley-notify.service.tmp
	mv $(DESTDIR)$(USERUNITDIR)/parley-notify.service.tmp $(DESTDIR)$(USERUNITDIR)/parley-notify.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/parley-notify.service

# Only the example is installed: an administrator's parleyd.toml is never touched.
install-config:
	$(INSTALL) -d $(DESTDIR)$(SYSCONFDIR)/parley
	$(INSTALL) -m 0644 systemd/parleyd.toml.example $(DESTDIR)$(SYSCONFDIR)/parley/parleyd.toml.example

install-man:
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 0644 docs/man/parleyd.8 $(DESTDIR)$(MANDIR)/man8/parleyd.8
	$(INSTALL) -m 0644 docs/man/parley.1 $(DESTDIR)$(MANDIR)/man1/parley.1

install-completions:
	scripts/install-completions.sh "$(PARLEY_BIN)" "$(DESTDIR)$(BASHCOMPDIR)/parley" \
	  "$(DESTDIR)$(ZSHCOMPDIR)/_parley" "$(DESTDIR)$(FISHCOMPDIR)/parley.fish"

# Removes exactly the files install creates (shared directories such as bin/ stay;
# $(SYSCONFDIR)/parley goes only if empty, so a parleyd.toml keeps it).
uninstall:
	rm -f $(INSTALLED_BINS) $(INSTALLED_SYSTEMD) $(INSTALLED_CONFIG) $(INSTALLED_MAN) $(INSTALLED_COMPLETIONS)
	-rmdir $(DESTDIR)$(SYSCONFDIR)/parley 2>/dev/null || true

# systemd-analyze verify + security score of the unit (no running systemd needed).
check-systemd:
	scripts/check-systemd.sh
