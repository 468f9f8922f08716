# RootTrace build. `make` builds build/roottrace; `make test` runs every test; `make demo`
# runs the product demonstration. `make SAN=1` builds under ASan+UBSan into build/san/,
# `make TSAN=1` under ThreadSanitizer into build/tsan/.

SAN     ?=
FUZZ    ?=
ifeq ($(FUZZ),1)
# The fuzz targets (tests/fuzz/, scripts/fuzz.sh): every module compiled by clang with
# coverage instrumentation for libFuzzer, under ASan+UBSan.
BUILD   ?= build/fuzz
CC       = $(FUZZ_CC)
SANFLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=all
OPT      = -O1 -g
else ifeq ($(TSAN),1)
# ThreadSanitizer (make TSAN=1 unit): the threads of the server's library (group commit, a
# diff's second window, ClickHouse's statements at once) checked for data races.
BUILD   ?= build/tsan
SANFLAGS = -fsanitize=thread -fno-omit-frame-pointer
OPT      = -O1 -g
else ifeq ($(SAN),1)
BUILD   ?= build/san
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT      = -O1 -g
else
BUILD   ?= build
SANFLAGS =
OPT      = -O2 -g
endif

CC      ?= cc
FUZZ_CC ?= clang
PKGS     = libmicrohttpd jansson sqlite3 zlib libdeflate libsodium libcurl libprotobuf-c
# XXH3 is compiled into core/str.c from libxxhash-dev's header (XXH_INLINE_ALL): the library
# itself is linked only into test_str, which compares the two.
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
           -Iserver/include -Iserver/src -I$(BUILD)/gen $(SANFLAGS) \
           $(shell pkg-config --cflags $(PKGS) libxxhash 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
LDFLAGS += $(SANFLAGS)

# Modules from the bottom up; a module links only what sits beneath it (STYLE.md).
MODULES  = core model ingest store query export control http cli
LIBS_core   = core
LIBS_model  = model core
LIBS_ingest = ingest model core
LIBS_store  = store model core
LIBS_query  = query store ingest model core
LIBS_export = export ingest model core
LIBS_control = control store model core
LIBS_http   = http control query export store ingest model core
LIBS_cli    = cli http control query export store ingest model core

lib = $(BUILD)/lib$(1).a
srcs = $(wildcard server/src/$(1)/*.c server/src/$(1)/*/*.c)
objs = $(patsubst server/src/%.c,$(BUILD)/obj/%.o,$(call srcs,$(1)))
libs_of = $(foreach m,$(LIBS_$(1)),$(call lib,$(m)))

.PHONY: all test unit unit-san integration test-clickhouse demo demo-files bench clean deps
all: $(BUILD)/roottrace

deps:
	@scripts/install-deps.sh

$(BUILD)/obj/%.o: server/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# Code protoc-c generates from server/proto/*.proto into $(BUILD)/gen/ (Debian's
# protobuf-c-compiler; scripts/install-deps.sh), compiled into the module named by GEN_<name>:
# the Push envelope (ingest/push.c) into ingest.
PROTOS     = $(wildcard server/proto/*.proto)
GEN_OBJS   = $(patsubst server/proto/%.proto,$(BUILD)/gen/%.pb-c.o,$(PROTOS))
GEN_HDRS   = $(patsubst server/proto/%.proto,$(BUILD)/gen/%.pb-c.h,$(PROTOS))
EXTRA_ingest = $(GEN_OBJS)
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: server/proto/%.proto
	@mkdir -p $(dir $@)
	protoc-c --proto_path=server/proto --c_out=$(BUILD)/gen $<
$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h
	$(CC) $(CFLAGS) -c $< -o $@
$(call objs,ingest): | $(GEN_HDRS)

define MODULE_RULES
$(call lib,$(1)): $(call objs,$(1)) $(EXTRA_$(1))
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call MODULE_RULES,$(m))))

$(BUILD)/roottrace: $(BUILD)/obj/main.o $(call libs_of,cli)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit tests: tests/unit/<module>/test_<file>.c, one binary each.
UNIT_SRCS = $(wildcard tests/unit/*/test_*.c)
UNIT_BINS = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
define UNIT_RULE
$(BUILD)/tests/$(1)/%: tests/unit/$(1)/%.c tests/unit/test.h $(wildcard tests/unit/$(1)/*.h) \
                       $(call libs_of,$(1))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -Itests/unit -o $$@ $$< $(call libs_of,$(1)) $$(LDFLAGS) $$(LDLIBS)
endef
$(foreach m,$(MODULES),$(eval $(call UNIT_RULE,$(m))))
$(BUILD)/tests/core/test_str: LDLIBS += $(shell pkg-config --libs libxxhash 2>/dev/null)

unit: $(UNIT_BINS)
	@scripts/run-unit.sh $(UNIT_BINS)

unit-san:
	$(MAKE) SAN=1 unit

integration: $(BUILD)/roottrace
	ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) python3 -m pytest -q -rs -p no:cacheprovider tests/integration

# Capacity against the kernel's CPU accounting (tests/accuracy, DESIGN §7): the Node, Go and
# PHP SDKs' workloads alone, beside a CPU hog per core, and under a CPU quota (a cgroup); the
# Java SDK's CPU from JFR alone and beside two hogs a core, on every JDK >= 11 installed.
.PHONY: accuracy
accuracy: $(BUILD)/roottrace
	ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) python3 -m pytest -q -s -rs -p no:cacheprovider tests/accuracy

# Pyroscope's real agents against the server (tests/agents, DESIGN §12): scripts/install-agents.sh
# installs them (one it cannot install is a skip naming it), then each runs 30 s against a fresh
# `roottrace serve` through a recording proxy, all at once (scripts/test-agents.sh).
.PHONY: test-agents
test-agents: $(BUILD)/roottrace
	ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) scripts/test-agents.sh

# Issues from alerts (tests/alerts, DESIGN §13): the real Alertmanager 0.25 (Debian's package,
# run as private processes; two clustered replicas too) and Grafana's webhook payload against a
# fresh `roottrace serve` (scripts/test-alerts.sh). About 40 s.
.PHONY: test-alerts
test-alerts: $(BUILD)/roottrace
	ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) scripts/test-alerts.sh

# The conformance suite against ClickHouse (docs/internals/clickhouse.md): the store's unit tests
# and the integration tests on Debian's clickhouse-server 18.16 and on ClickHouse 26.9 (chDB),
# then on a replicated cluster of two 18.16 replicas (scripts/test-clickhouse.sh), with the
# cluster's fault tests (tests/cluster) on ZooKeeper sessions of 5 s.
STORE_UNIT_BINS = $(filter $(BUILD)/tests/store/%,$(UNIT_BINS)) $(BUILD)/tests/query/test_rollup
.PHONY: test-clickhouse test-cluster test-cluster-full
test-clickhouse: $(BUILD)/roottrace $(STORE_UNIT_BINS)
	ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) scripts/test-clickhouse.sh $(STORE_UNIT_BINS)

# The cluster's fault tests alone; -full on ZooKeeper's own clock (sessions of 30 s, as deployed).
test-cluster: $(BUILD)/roottrace
	ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) python3 -m pytest -q -s -rs -p no:cacheprovider tests/cluster
test-cluster-full: $(BUILD)/roottrace
	ROOTTRACE_CLUSTER_ZK_TICK_MS=2000 ROOTTRACE_BIN=$(abspath $(BUILD)/roottrace) python3 -m pytest -q -s -rs -p no:cacheprovider tests/cluster

test: deps
	$(MAKE) all
	scripts/test.sh

demo: deps all
	scripts/demo.sh $(DEMO_ARGS)

# The same with the server in its container: the README's Compose quickstart on podman
# (scripts/demo-compose.sh; scripts/demo-compose.sh --down removes it).
.PHONY: demo-compose
demo-compose: deps all
	scripts/demo-compose.sh $(DEMO_ARGS)

demo-files: deps all
	scripts/demo-files.sh

bench: deps all
	bench/run.sh

clean:
	rm -rf build

# Benchmarks: bench/<name>.c, one binary each, linked like the CLI; bench/run.sh runs them.
BENCH_SRCS = $(wildcard bench/*.c)
BENCH_BINS = $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
.PHONY: bench-bins
bench-bins: $(BENCH_BINS)
$(BUILD)/bench/%: bench/%.c bench/bench.h bench/bench_store.h $(call libs_of,cli)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench -o $@ $< $(call libs_of,cli) $(LDFLAGS) $(LDLIBS)

# The loopback load test: bench/load/*.c make one binary; bench/load/run.sh runs it against a
# fresh server (60 s at the realistic rate, compressed rates, slow clients, oversized bodies).
LOAD_SRCS = $(wildcard bench/load/*.c)
$(BUILD)/bench/load: $(LOAD_SRCS) bench/load/load.h bench/bench.h $(call libs_of,cli)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench -o $@ $(LOAD_SRCS) $(call libs_of,cli) $(LDFLAGS) $(LDLIBS)
.PHONY: bench-load
bench-load: deps all $(BUILD)/bench/load
	BUILD=$(BUILD) bench/load/run.sh $(BENCH_LOAD_ARGS)

# The server under ThreadSanitizer beside a longer load (about 3 minutes): 20 services x 50
# instances, 60 s at the realistic rate and 20 s per compressed rate, slow clients and
# oversized bodies at the load's defaults; `make test` runs a short one
# (scripts/test-tsan-load.sh). Any data race, failed request or unclean exit fails.
.PHONY: tsan-load
tsan-load: deps
	scripts/test-tsan-load.sh --services 20 --per-service 50 --seconds 60 --capacity-seconds 20

# Truthfulness runs (docs/performance.md, DESIGN §6): 20 A/B and 20 A/A deploys of the demo's
# Node and Go services on a loaded host; each run's rank, delta_pp and z. BENCH_TRUTH_ARGS
# passes options (bench/truth/run.py --help). About 20 minutes on 2 cores.
.PHONY: bench-truth
bench-truth: deps all
	python3 bench/truth/run.py $(BENCH_TRUTH_ARGS)

# Rollups (docs/performance-rollups.md, docs/internals/rollups.md): 7 days of 100 instances' 60 s
# profiles seeded into SQLite, the week and 1 h diffs timed raw, then through the rollups.
# About 7 minutes and 5 GB of temporary disk. BENCH_ROLLUP_ARGS passes options (--days N).
.PHONY: bench-rollup
bench-rollup: deps all $(BUILD)/bench/bench_rollup
	$(BUILD)/bench/bench_rollup $(BENCH_ROLLUP_ARGS)

# SDK overhead: a workload with each SDK at defaults against without it (docs/performance-sdk.md).
.PHONY: bench-sdk
bench-sdk: deps all
	bench/sdk_overhead/run.sh

# SDK faults (docs/reliability.md): each SDK's app with the server down 10 minutes, then back
# (`make test` runs the same harness with 60 s). RELIABILITY_SDKS picks SDKs (default all five).
.PHONY: reliability
reliability: deps all
	scripts/test-faults.sh --down-s $(or $(RELIABILITY_DOWN_S),600) $(RELIABILITY_SDKS)

# Stores side by side: SQLite and a private ClickHouse at 1x and 10x (docs/performance-stores.md).
.PHONY: bench-store
bench-store: deps
	BUILD=$(BUILD) bench/store.sh $(BENCH_STORE_ARGS)

# The same on the replicated pair: one server, the cluster through 1 node, through 2 nodes.
.PHONY: bench-store-cluster
bench-store-cluster: deps
	BUILD=$(BUILD) bench/store-cluster.sh $(BENCH_STORE_ARGS)

# The web UI (ui/, DESIGN §10): vite builds ui/dist when npm is present (npm ci from the
# lockfile first); scripts/embed-ui.py compiles ui/dist into the http module, or a page saying
# the UI was not built when it is absent, so the server always builds.
NPM     := $(shell command -v npm 2>/dev/null)
UI_SRCS  = $(wildcard ui/src/*.ts ui/src/*/*.ts ui/src/*.css ui/public/*) ui/index.html ui/vite.config.ts \
           ui/tsconfig.json ui/package.json
ifneq ($(NPM),)
UI_DIST  = ui/dist/index.html
ui/node_modules/.ci-stamp: ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	touch $@
$(UI_DIST): ui/node_modules/.ci-stamp $(UI_SRCS)
	cd ui && npm run --silent build
endif
.PHONY: ui
ui: $(UI_DIST)
$(BUILD)/gen/ui_assets.c: scripts/embed-ui.py $(UI_DIST)
	@mkdir -p $(dir $@)
	python3 scripts/embed-ui.py ui/dist $@
$(BUILD)/obj/gen/ui_assets.o: $(BUILD)/gen/ui_assets.c server/src/http/ui.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(call lib,http): $(BUILD)/obj/gen/ui_assets.o

# Fuzz targets: tests/fuzz/fuzz_<name>.c, each defining LLVMFuzzerTestOneInput. `make fuzz`
# builds them with clang and libFuzzer into build/fuzz/bin/ and runs each for FUZZ_SECONDS;
# `make fuzz-replay` (a `make test` suite) builds them with $(CC) under ASan+UBSan with a
# small main (tests/fuzz/replay.c) and replays the checked-in crashes and seeds.
FUZZ_SECONDS ?= 60
FUZZ_SRCS  = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES = $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRCS))
FUZZ_HDRS  = $(wildcard tests/fuzz/*.h)
.PHONY: fuzz fuzz-bins fuzz-replay
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)
fuzz-bins: $(patsubst %,$(BUILD)/bin/%,$(FUZZ_NAMES))
$(BUILD)/bin/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HDRS) $(call libs_of,http)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/fuzz -fsanitize=fuzzer -o $@ $< $(call libs_of,http) $(LDFLAGS) \
	    $(LDLIBS)
fuzz-replay:
	$(MAKE) --no-print-directory SAN=1 fuzz-replay-bins
	scripts/fuzz-replay.sh build/san/fuzz-replay
.PHONY: fuzz-replay-bins
fuzz-replay-bins: $(patsubst %,$(BUILD)/fuzz-replay/%,$(FUZZ_NAMES))
$(BUILD)/fuzz-replay/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(FUZZ_HDRS) \
                             $(call libs_of,http)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/fuzz -o $@ $< tests/fuzz/replay.c $(call libs_of,http) $(LDFLAGS) \
	    $(LDLIBS)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
