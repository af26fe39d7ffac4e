# Parley: one command to run the daemon, one to run the tests. See README.md.
SWIFT ?= swift
PREFIX ?= /usr/local
CONFIG ?= debug

.PHONY: all deps test-deps build release run test unit-test system-test clean

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

build: deps
	$(SWIFT) build -c $(CONFIG)

release: deps
	$(SWIFT) build -c release

# Runs parleyd in the foreground with user-mode defaults (state in
# $XDG_STATE_HOME/parley or ~/.local/state/parley). Extra flags: make run ARGS="--name alice".
run: deps
	$(SWIFT) build -c $(CONFIG) --product parleyd
	$(SWIFT) build -c $(CONFIG) --product parley
	./.build/$(CONFIG)/parleyd $(ARGS)

# The whole suite: unit tests (XCTest) then system tests (real processes, pytest).
test: test-deps
	scripts/run-tests.sh

clean:
	rm -rf .build
