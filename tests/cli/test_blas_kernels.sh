#!/usr/bin/env bash
# Same numbers on every x86-64 CPU: 'epar run-all --check' passes with OpenBLAS forced to each kernel this CPU
# can run (OPENBLAS_CORETYPE). Decisions (argmax, ties, thresholds) must come out exactly as pinned, plain
# floating-point sums within the pins' tolerance. A kernel the CPU cannot run is skipped with a printed note;
# a kernel OpenBLAS does not actually switch to is a failure (the check would otherwise run the default twice).
. "$(dirname "$0")/lib.sh"

if [ "$(uname -m)" != x86_64 ]; then
    echo "# note: $(uname -m): OPENBLAS_CORETYPE kernels are x86-64 names; skipped"
    finish; exit
fi
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { case " $flags " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
kernels="Prescott Nehalem"
has avx && kernels="$kernels Sandybridge"
if has avx2 && has fma; then kernels="$kernels Haswell Zen"; else echo "# note: no AVX2+FMA: Haswell and Zen skipped"; fi
if has avx512f && has avx512bw && has avx512vl; then kernels="$kernels SkylakeX"; else echo "# note: no AVX-512: SkylakeX skipped"; fi
if has avx512_bf16; then kernels="$kernels Cooperlake"; else echo "# note: no AVX-512 BF16: Cooperlake skipped"; fi

for k in $kernels; do
    got=$(OPENBLAS_CORETYPE=$k "$EPAR" --version | sed -n 's/.*(kernel \(.*\))$/\1/p')
    [ "$got" = "$k" ] && ok || fail "OPENBLAS_CORETYPE=$k: OpenBLAS runs kernel '$got'"
    OPENBLAS_CORETYPE=$k expect_exit 0 "run-all --check with kernel $k" -- "$EPAR" run-all --check --no-render -q
    expect_grep '^regress: [0-9]+ pinned numbers checked: [0-9]+ unchanged, 0 moved, 0 missing' "$T_TMP/out"
done
echo "# kernels checked: $kernels"
finish
