/* lanes8: the horizontal sum and maximum of 8 float lanes, in the fixed orders lib/nn's AVX2 forms use (shared with the
 * mechanisms' own attention forms in lib/mechs/, whose bits must not move). Include <immintrin.h> and lib/target.h
 * first, outside any EPAR_TARGET_BEGIN region (this header opens its own). */
#ifndef EPAR_LANES8_H
#define EPAR_LANES8_H

EPAR_TARGET_BEGIN("avx2,fma")
static inline float hsum8(__m256 v)   /* fixed order: lanes (0+4), (1+5), ... then pairs */
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

static inline float hmax8(__m256 v)   /* the largest lane (exact: the order does not matter) */
{
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}
EPAR_TARGET_END

#endif
