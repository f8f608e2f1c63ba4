/* rng: unit tests of lib/rng (worked values, round trips, error paths). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/rng.h"
#include "lib/err.h"
#include "check.h"

int main(void)
{
    /* rng: streams reproducible and independent of creation order */
    gsl_rng *a = epar_rng_alloc(42, 3, EPAR_RNG_DATA), *b = epar_rng_alloc(42, 4, EPAR_RNG_DATA),
            *c = epar_rng_alloc(42, 3, EPAR_RNG_DATA);
    double x = gsl_rng_uniform(a), y = gsl_rng_uniform(b), z = gsl_rng_uniform(c);
    check_true(x == z, "same (seed, run, tag) -> same numbers");
    check_true(x != y, "different run -> different numbers");
    double W[64 * 16], bias[64];
    epar_rng_linear_init(a, W, bias, 64, 16);
    double lo = 1, hi = -1;
    for (int i = 0; i < 64 * 16; i++) { if (W[i] < lo) lo = W[i]; if (W[i] > hi) hi = W[i]; }
    check_true(lo >= -0.25 && hi <= 0.25 && hi > 0.24 && lo < -0.24, "nn.Linear init in U(+-1/sqrt(fan_in)) = 0.25");
    double O[12 * 5];
    check_int(epar_rng_orthogonal(a, O, 12, 5), EPAR_OK, "orthogonal init");
    double worst = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int r = 0; r < 12; r++) s += O[r * 5 + i] * O[r * 5 + j];
            if (fabs(s - (i == j)) > worst) worst = fabs(s - (i == j));
        }
    check_true(worst < 1e-12, "W^T W = I to 1e-12 (worst %g)", worst);
    epar_rng_free(a); epar_rng_free(b); epar_rng_free(c);
    return check_summary("test_rng");
}
