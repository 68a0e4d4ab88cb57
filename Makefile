# The two commands of the README: `make run` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
NFSX = $(BUILD)/apps/nfsx/nfsx

.PHONY: all deps build run test unit sanitize fuzz interop soak bench clean format

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

# Serves ./export on 127.0.0.1 (NFS 2049, MOUNT 20048) until Ctrl-C.
run: build
	@mkdir -p export .state
	@# World-writable and sticky like /tmp, owned by the user root is squashed to,
	@# so that root's symlinks there can be followed (Linux's protected_symlinks).
	@chown 65534:65534 export 2>/dev/null || true
	@chmod 1777 export
	$(NFSX) serve ./export --state-dir .state

# Every test: unit, integration, interop with real peers, sanitizer builds, fuzzing.
test: build
	@scripts/run-tests.sh $(BUILD)

# The Linux kernel client in a qemu guest against our server (slow; not in `make test`).
interop: build
	@tests/kvm/run.sh $(BUILD)

# The crash loops at length: 100 server kills and 100 network cuts (make test: 10 each).
soak: build
	@NFSX_CRASH_KILLS=100 ctest --test-dir $(BUILD) --output-on-failure -L crash --timeout 7200

bench: build
	@bench/compare.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf build build-asan build-tsan build-fuzz
