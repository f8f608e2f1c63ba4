# epar — build, test, run.   make | make test | make run-all | make test-asan | make bench
# Variables: CC, BUILD (object dir), SAN=1 (ASan+UBSan build into build-asan/), COV=1 (gcov build into build-cov/),
# MPI=1 (also ./epar-mpi: epar with Open MPI, for `mpirun -np N ./epar-mpi benchmark`; MPICC, default mpicc).

CC      ?= gcc
SAN     ?= 0
COV     ?= 0
ifeq ($(COV),1)
BUILD   ?= build-cov
SANFLAGS = --coverage
OPT      = -O0
else ifeq ($(SAN),1)
BUILD   ?= build-asan
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT      = -O1
else
BUILD   ?= build
SANFLAGS =
OPT      = -O2
endif

PKGS     = gsl jansson openblas
# GSL's own CBLAS (gslcblas) is ~30x slower here: link OpenBLAS as the CBLAS behind GSL.
DEPCFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wpointer-arith -Wvla
CFLAGS  ?= $(OPT) -g
ALLCFLAGS = $(CFLAGS) $(SANFLAGS) -std=gnu11 $(WARN) -fopenmp -I. -Ilib -I$(BUILD)/gen $(DEPCFLAGS) -MMD -MP
LDLIBS   = -lgsl -lopenblas -lcsv -ljansson -lm
# the flags the build needs are kept apart from LDFLAGS, so 'make LDFLAGS=...' adds to them instead of replacing them
EPAR_LDFLAGS = $(SANFLAGS) -fopenmp $(LDFLAGS)

LIB_SRC  = $(wildcard lib/*.c) $(wildcard lib/mechs/*.c) $(wildcard experiments/*.c) $(wildcard experiments/*/*.c)
CMD_SRC  = $(wildcard cmd/*.c)
TEST_SRC = $(wildcard tests/unit/test_*.c)
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  = $(CMD_SRC:%.c=$(BUILD)/%.o)
TEST_BIN = $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%) $(FUZZ_REPLAY)
# the fuzz harnesses replayed over their seed corpus and regressions by make test (tests/fuzz/replay.c)
FUZZ_NAMES  = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY = $(FUZZ_NAMES:%=$(BUILD)/tests/test_fuzz_%)
DEPSTAMP = $(BUILD)/.deps-ok

ifneq ($(SAN)$(COV),00)
EPAR_BIN = $(BUILD)/epar
else
EPAR_BIN = epar
endif
LIBEPAR  = $(BUILD)/libepar.a

.SECONDARY:
.PHONY: install-files all deps test test-unit test-cli test-browser test-asan test-valgrind coverage run-all regress regress-update summary-update bench fuzz fuzz-build install clean
all: $(EPAR_BIN) libepar.a $(if $(filter 1,$(MPI)),epar-mpi)

# epar-mpi: the same objects, but cmd/benchmark.c compiled with -DEPAR_MPI (ranks share the grid's cells, rank 0
# writes the tables) and everything linked by the MPI compiler wrapper (Debian: libopenmpi-dev, openmpi-bin).
MPICC ?= mpicc
$(BUILD)/mpi/cmd/benchmark.o: cmd/benchmark.c | $(DEPSTAMP)
	@command -v $(MPICC) >/dev/null || { echo "make: $(MPICC) not found: scripts/install-deps --with-mpi" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(MPICC) $(ALLCFLAGS) -DEPAR_MPI -c $< -o $@
epar-mpi: $(filter-out $(BUILD)/cmd/benchmark.o,$(CMD_OBJ)) $(BUILD)/mpi/cmd/benchmark.o $(LIBEPAR)
	$(MPICC) $(EPAR_LDFLAGS) -o $@ $^ $(LDLIBS)

# Missing libraries are installed (or the exact apt-get line printed) before anything compiles.
$(DEPSTAMP):
	@mkdir -p $(BUILD)
	@if pkg-config --exists $(PKGS) && [ -f /usr/include/csv.h ] && command -v gnuplot >/dev/null; then :; \
	 else echo "make: some dependencies are missing; running scripts/install-deps"; scripts/install-deps || exit 1; fi
	@touch $@
deps: $(DEPSTAMP)

# plots/epar.gp compiled in as a C string: every .gp script carries the style (lib/plot.c)
$(BUILD)/gen/plot_style.h: plots/epar.gp
	@mkdir -p $(dir $@)
	@{ echo '/* generated from plots/epar.gp by the Makefile: do not edit */'; \
	   echo 'static const char epar_plot_style_text[] ='; \
	   sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/lib/plot.o: $(BUILD)/gen/plot_style.h

$(BUILD)/%.o: %.c | $(DEPSTAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

$(LIBEPAR): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

libepar.a: $(LIBEPAR)
	@if [ "$(SAN)$(COV)" = 00 ]; then cp $(LIBEPAR) libepar.a; fi

$(EPAR_BIN): $(CMD_OBJ) $(LIBEPAR)
	$(CC) $(EPAR_LDFLAGS) -o $@ $(CMD_OBJ) $(LIBEPAR) $(LDLIBS)

$(BUILD)/tests/test_fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/replay.o $(BUILD)/cmd/options.o $(LIBEPAR)
	@mkdir -p $(dir $@)
	$(CC) $(EPAR_LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBEPAR)
	@mkdir -p $(dir $@)
	$(CC) $(EPAR_LDFLAGS) -o $@ $< $(LIBEPAR) $(LDLIBS)

# the full-disk shim of tests/cli/test_full_disk.sh: LD_PRELOAD'ed into epar and, inherited, its gnuplot children, so
# it is built without the sanitizers (tests/shim/enospc.c)
ENOSPC_SHIM = $(BUILD)/tests/libenospc.so
$(ENOSPC_SHIM): tests/shim/enospc.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 $(WARN) -fPIC -shared -o $@ $< -ldl

# The test command: unit programs and CLI tests against the real binary, TEST_JOBS of them at a time (default: 2 on
# two or more CPUs); ends "N passed, N failed".
# (with an MPI compiler on PATH, epar-mpi is built first so tests/cli/test_benchmark.sh runs its mpirun part; not in the
# sanitizer and coverage builds: ./epar-mpi is an -O2 build, whose float results need not match an -O1/-O0 epar's)
test: $(EPAR_BIN) $(TEST_BIN) $(ENOSPC_SHIM)
	@if command -v $(MPICC) >/dev/null && [ "$(SAN)$(COV)" = 00 ]; then $(MAKE) --no-print-directory epar-mpi >/dev/null; fi
	@EPAR=./$(EPAR_BIN) EPAR_MPI=$(if $(filter 00,$(SAN)$(COV)),./epar-mpi,) EPAR_OPT=$(if $(filter 00,$(SAN)$(COV)),1,0) TESTBIN=$(BUILD)/tests tests/run.sh

# index.html and REPORT.html in headless Chromium (links, images, 420 px layout, the verdict filter, screenshots into
# $(BROWSER_OUT)/screenshots/); installs chromium, chromium-driver and python3-selenium when missing
BROWSER_OUT ?= build/browser
test-browser: $(EPAR_BIN)
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null || \
	    ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then scripts/install-deps --with-browser || exit 1; fi
	@EPAR=./$(EPAR_BIN) tests/browser/run.sh $(BROWSER_OUT)

# allocator_may_return_null: a size that cannot fit must reach epar's own "out of memory" (exit 4)
test-asan:
	@ASAN_OPTIONS=$${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1} \
	 UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} $(MAKE) --no-print-directory SAN=1 test

# line coverage of the whole suite (gcov, part of gcc): a summary per directory, then per file, into
# build-cov/coverage.txt; the .gcov files stay in build-cov/gcov/
coverage:
	@rm -rf build-cov/gcov; find build-cov -name '*.gcda' -delete 2>/dev/null || true
	@$(MAKE) --no-print-directory COV=1 test || true
	@scripts/coverage build-cov | tee build-cov/coverage.txt

# unit programs under valgrind, then epar itself on a small run and on every kind of error path
test-valgrind: $(EPAR_BIN) $(TEST_BIN)
	@command -v valgrind >/dev/null || scripts/install-deps --with-valgrind
	@VALGRIND=1 EPAR=./$(EPAR_BIN) TESTBIN=$(BUILD)/tests tests/run.sh unit
	@EPAR=./$(EPAR_BIN) tests/valgrind_cli.sh

# the build on every core unless make was given -j (a clean clone's `make run-all` compiled serially: ~30 s of the run)
NPROC := $(shell nproc 2>/dev/null || echo 1)
run-all:
	@$(MAKE) --no-print-directory $(if $(findstring j,$(MAKEFLAGS)),,-j$(NPROC)) $(EPAR_BIN)
	./$(EPAR_BIN) run-all

regress: $(EPAR_BIN)
	./$(EPAR_BIN) run-all --check --no-render

regress-update: $(EPAR_BIN)
	./$(EPAR_BIN) run-all --update-golden --no-render

# README's headline numbers: a full run-all (quick benchmark; finished cells in output/ are reused), its
# report/SUMMARY.md pinned to docs/ and spliced into README.md (tests/cli/test_summary.sh checks they agree)
summary-update: $(EPAR_BIN)
	EPAR=./$(EPAR_BIN) scripts/summary-update

bench: $(EPAR_BIN)
	@if [ -x bench/run.sh ]; then bench/run.sh; else echo "bench: no benchmarks yet"; fi

# libFuzzer harnesses (clang, tests/fuzz/README.md): lib/ and experiments/ (and cmd/options.c) compiled with the
# sanitizers and fuzzer coverage into build-fuzz/libepar.a, one binary per tests/fuzz/fuzz_*.c.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS    = -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                -std=gnu11 $(WARN) -Wno-unknown-pragmas -Wno-pass-failed -Wno-string-concatenation -I. -Ilib -I$(BUILD)/gen $(DEPCFLAGS) -fopenmp
FUZZ_SRC      = $(LIB_SRC) cmd/options.c
FUZZ_OBJ      = $(FUZZ_SRC:%.c=build-fuzz/obj/%.o)
build-fuzz/obj/%.o: %.c $(wildcard lib/*.h lib/mechs/*.h experiments/*.h experiments/*/*.h cmd/cli.h) | $(DEPSTAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
build-fuzz/obj/lib/plot.o: $(BUILD)/gen/plot_style.h
build-fuzz/libepar.a: $(FUZZ_OBJ)
	ar rcs $@ $^
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c build-fuzz/libepar.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< build-fuzz/libepar.a $(LDLIBS)
fuzz-build: $(FUZZ_NAMES:%=build-fuzz/fuzz_%)
fuzz: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)

PREFIX ?= /usr/local
# the manual page and the completions are generated by the binary from its command table (cmd/docgen.c).
# install-files installs an already built EPAR_BIN without building anything (the CLI tests use it).
install: $(EPAR_BIN)
	@$(MAKE) --no-print-directory install-files EPAR_BIN=$(EPAR_BIN)
install-files:
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/epar $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 755 $(EPAR_BIN) $(DESTDIR)$(PREFIX)/bin/epar
	install -m 644 paper_protocol.json $(DESTDIR)$(PREFIX)/share/epar/
	$(abspath $(EPAR_BIN)) --man > $(DESTDIR)$(PREFIX)/share/man/man1/epar.1
	$(abspath $(EPAR_BIN)) --completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/epar
	$(abspath $(EPAR_BIN)) --completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_epar

clean:
	rm -rf build build-asan build-cov build-fuzz epar epar-mpi libepar.a

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%.d) $(BUILD)/mpi/cmd/benchmark.d $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/fuzz_%.d) $(BUILD)/tests/fuzz/replay.d
