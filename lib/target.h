/* CPU-target regions that gcc and clang both honour. The code between EPAR_TARGET_BEGIN("avx2,fma") and
 * EPAR_TARGET_END is compiled for that target, whatever -march the file gets; the caller checks the CPU at run time
 * (__builtin_cpu_supports) before calling into it. gcc reads "#pragma GCC target"; clang ignores that pragma and
 * reads "#pragma clang attribute" instead (without it, clang needs the target flags for the whole file, and
 * then emits AVX-512 in code that runs on every CPU). Regions do not nest; include <immintrin.h> before one. */
#ifndef EPAR_TARGET_H
#define EPAR_TARGET_H

#define EPAR_TARGET_PRAGMA(...) _Pragma(#__VA_ARGS__)
#if defined(__clang__)
#define EPAR_TARGET_BEGIN(t) \
    EPAR_TARGET_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
#define EPAR_TARGET_END EPAR_TARGET_PRAGMA(clang attribute pop)
#else
#define EPAR_TARGET_BEGIN(t) EPAR_TARGET_PRAGMA(GCC push_options) EPAR_TARGET_PRAGMA(GCC target(t))
#define EPAR_TARGET_END EPAR_TARGET_PRAGMA(GCC pop_options)
#endif

#endif
