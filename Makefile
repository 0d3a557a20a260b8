# Thin wrapper around meson + ninja so that a fresh Debian machine needs two commands:
#   make run    install missing packages, build, show the sensors, run the quickstart experiment
#   make test   install missing packages, build (warnings are errors), run every test
# `make run` and `make build` need the build packages alone (scripts/deps.sh); the tests are
# optional in meson (-Dtests=auto) and `make test` turns them on (-Dtests=enabled).
# `make fresh-check` proves it: the README's commands in a bare Debian 12 chroot (root only).
BUILD ?= build
ASAN_BUILD ?= build-asan
MESON_OPTS ?= -Dwerror=true

.PHONY: all deps test-deps fuzz build test-build run test unit integration asan format check-format check-layers \
	bench fresh-check clean

all: build

deps:
	@scripts/deps.sh

test-deps:
	@scripts/deps.sh --test

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# Switches build directory $(1) to tests=enabled unless it already is (a directory set up by
# `make build` has tests=auto: with the test packages missing then, it has no tests).
define tests_enabled
	@python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); \
		sys.exit(0 if any(x["name"] == "tests" and x["value"] == "enabled" for x in o) else 1)' \
		$(1)/meson-info/intro-buildoptions.json 2>/dev/null || \
		{ echo "meson configure $(1) -Dtests=enabled"; meson configure $(1) -Dtests=enabled; }
endef

# carma and every test program (make test's set-up step, with test-deps)
test-build: test-deps $(BUILD)/build.ninja
	$(call tests_enabled,$(BUILD))
	ninja -C $(BUILD)

run: build
	$(BUILD)/carma sensors
	$(BUILD)/carma run -o runs examples/quickstart/experiment.json
	$(BUILD)/carma report "$$(ls -td runs/quickstart_*/ | head -n 1)"

unit: test-build
	meson test -C $(BUILD) --suite unit --print-errorlogs

integration: test-build
	bash tests/integration/run.sh $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) $(MESON_OPTS) -Dtests=enabled -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debug

asan: test-deps $(ASAN_BUILD)/build.ninja
	$(call tests_enabled,$(ASAN_BUILD))
	ninja -C $(ASAN_BUILD)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
		meson test -C $(ASAN_BUILD) --suite unit --print-errorlogs
	CARMA_TEST_SANITIZED=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ASAN_OPTIONS=detect_leaks=1 bash tests/integration/run.sh $(ASAN_BUILD)

check-format: test-deps
	@scripts/check-format.sh

# the layer order, the printing boundary and no two files calling each other
# (docs/architecture.md); the last needs carma's objects
check-layers: test-build
	python3 scripts/check-layers.py $(BUILD)

# tracked files and new ones not yet added (a file formatted only once it is committed fails
# the next check)
format:
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

test: test-deps test-build check-format check-layers unit integration fuzz asan

# a short libFuzzer run of every harness in fuzz/ (longer: make fuzz FUZZ_SECONDS=600)
FUZZ_SECONDS ?= 20
fuzz: test-deps
	bash fuzz/run.sh $(FUZZ_SECONDS)

bench: build
	bash bench/run.sh $(BUILD)

# the README's `make run`, then make test's set-up step (test-deps, test-build), in a minimal
# Debian 12 built with debootstrap, from a clean clone of HEAD (FRESH_REV=REV for another
# commit); root only. See docs/testing.md.
FRESH_REV ?= HEAD
fresh-check:
	scripts/fresh-check.sh $(FRESH_REV)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
