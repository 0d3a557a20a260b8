# Thin wrapper around meson + ninja so that a fresh Debian machine needs two commands:
#   make run    install missing packages, build, show the sensors, run the quickstart experiment
#   make test   install missing packages, build (warnings are errors), run every test
BUILD ?= build
ASAN_BUILD ?= build-asan
MESON_OPTS ?= -Dwerror=true

.PHONY: all deps test-deps fuzz build run test unit integration asan format check-format bench clean

all: build

deps:
	@scripts/deps.sh

test-deps:
	@scripts/deps.sh --test

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	$(BUILD)/carma sensors
	$(BUILD)/carma run -o runs examples/quickstart/experiment.json
	$(BUILD)/carma report "$$(ls -td runs/quickstart_*/ | head -n 1)"

unit: build
	meson test -C $(BUILD) --suite unit --print-errorlogs

integration: build
	bash tests/integration/run.sh $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) $(MESON_OPTS) -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug

asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
		meson test -C $(ASAN_BUILD) --suite unit --print-errorlogs
	CARMA_TEST_SANITIZED=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ASAN_OPTIONS=detect_leaks=1 bash tests/integration/run.sh $(ASAN_BUILD)

check-format: deps
	@scripts/check-format.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

test: test-deps build check-format unit integration fuzz asan

# a short libFuzzer run of every harness in fuzz/ (longer: make fuzz FUZZ_SECONDS=600)
FUZZ_SECONDS ?= 20
fuzz: test-deps
	bash fuzz/run.sh $(FUZZ_SECONDS)

bench: build
	bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
