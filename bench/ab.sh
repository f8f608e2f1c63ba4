#!/usr/bin/env bash
# bench/ab.sh REV_A REV_B [ab_step options]: the training step of two git revisions (or "." for the work tree) in one
# process, steps alternated (bench/ab_step.c): the way to see a change of a few percent on a shared machine, where
# separate runs move by 5-10 %. Builds each revision's lib/ as a shared library under build/ab/ (-O2 -fPIC, the
# project's flags otherwise). Example: bash bench/ab.sh HEAD~1 HEAD --length 32 --batch 32 --pairs 60
# Not run by make bench (it compares revisions); never part of make test.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/ab.sh REV_A REV_B [ab_step options]"; exit 2; }
A=$1 B=$2
shift 2
root=build/ab
mkdir -p "$root"
build() { # REV NAME -> $root/NAME.so
    local rev=$1 name=$2 src=$root/$2-src
    rm -rf "$src"
    mkdir -p "$src"
    if [ "$rev" = . ]; then
        tar -cf - --exclude=./build --exclude=./build-asan --exclude=./build-cov --exclude=./output . | tar -xf - -C "$src"
    else
        git archive "$rev" | tar -xf - -C "$src"
    fi
    make -s -C "$src" BUILD=build-ab CFLAGS="-O2 -g -fPIC" build-ab/libepar.a >/dev/null
    gcc -shared -fopenmp -o "$root/$name.so" -Wl,--whole-archive "$src/build-ab/libepar.a" -Wl,--no-whole-archive \
        -lgsl -lopenblas -lcsv -ljansson -lm
}
build "$A" a
build "$B" b
gcc -O2 -std=gnu11 -Wall -Wextra -fopenmp -I. -Ilib $(pkg-config --cflags gsl openblas) bench/ab_step.c -o "$root/ab_step" \
    -ldl -lgsl -lopenblas -lm
echo "A = $A, B = $B"
"$root/ab_step" "$root/a.so" "$root/b.so" "$@"
