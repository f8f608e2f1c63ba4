/* posfx: worked numbers of docs/MECHANISMS.md §3-4 as oracles (relative tolerance 1e-5). */
#include "lib/posfx.h"
#include "lib/err.h"
#include "check.h"

int main(void)
{
    struct epar_posfx b = {EPAR_FORM_BASIC, 1, 1, 0}, e = {EPAR_FORM_ENHANCED, 1, 1, 0.5};
    const double frac[] = {0, 0.25, 0.5, 1}, wb[] = {1, 0.778801, 0.606531, 0.367879};
    for (int k = 0; k < 4; k++) check_rel(epar_posfx_value(&b, frac[k] * 100, 100), wb[k], 1e-5, "basic m at d/L=%g", frac[k]);
    check_rel(epar_posfx_value(&b, 7, 8), 0.416862, 1e-5, "basic L=8 d=7");
    const double we[] = {0.926267, 0.868844, 0.789293};
    for (int k = 1; k < 4; k++) check_rel(epar_posfx_value(&e, frac[k] * 100, 100), we[k - 1], 1e-5, "enhanced m at d/L=%g", frac[k]);
    check_rel(epar_posfx_value(&e, 7, 8), 0.805621, 1e-5, "enhanced L=8 d=7");
    struct epar_posfx code = {EPAR_FORM_ENHANCED, 1, 2, 1.5};
    check_rel(epar_posfx_value(&code, 64, 64), 0.481201, 1e-5, "s0_code preset at distance L");
    check_rel(epar_posfx_infimum(&e), 2.0 / 3.0, 1e-12, "enhanced infimum alpha/(1+gamma)");
    check_rel(epar_posfx_infimum(&b), 0.0, 1e-12, "basic infimum 0");
    /* gamma = 0 is EPAR off: constant alpha; gamma -> inf gives back basic */
    struct epar_posfx g0 = {EPAR_FORM_ENHANCED, 1.7, 3, 0}, ginf = {EPAR_FORM_ENHANCED, 1, 1, 1e12};
    check_rel(epar_posfx_value(&g0, 33, 64), 1.7, 1e-15, "gamma 0 -> constant alpha");
    check_rel(epar_posfx_value(&ginf, 50, 100), 0.606531, 1e-5, "gamma -> inf -> basic");
    /* derivative against a central difference, both forms, high-entropy parameters */
    struct epar_posfx h = {EPAR_FORM_ENHANCED, 1.385, 2.718, 0.6931};
    for (int f = 1; f <= 2; f++) {
        h.form = (enum epar_form)f;
        for (double d = 0.5; d < 60; d += 7.3) {
            double num = (epar_posfx_value(&h, d + 1e-5, 61) - epar_posfx_value(&h, d - 1e-5, 61)) / 2e-5;
            check_rel(epar_posfx_deriv(&h, d, 61), num, 1e-6, "derivative form %d d=%g", f, d);
        }
    }
    /* matrix: symmetric Toeplitz with the values on the diagonals */
    double P[25];
    epar_posfx_matrix(&code, 5, P);
    check_rel(P[0 * 5 + 3], epar_posfx_value(&code, 3, 5), 1e-15, "matrix (0,3)");
    check_rel(P[4 * 5 + 1], epar_posfx_value(&code, 3, 5), 1e-15, "matrix (4,1)");
    check_rel(P[2 * 5 + 2], 1.0, 1e-15, "matrix diagonal = alpha");
    struct epar_posfx none = {EPAR_FORM_NONE, 5, 5, 5};
    check_rel(epar_posfx_value(&none, 3, 8), 1.0, 0, "form none is 1");
    /* parsing and validation */
    enum epar_form f;
    check_int(epar_posfx_form_parse("enhanced", &f), EPAR_OK, "parse enhanced");
    check_int(f, EPAR_FORM_ENHANCED, "parse enhanced value");
    check_int(epar_posfx_form_parse("fancy", &f), EPAR_EINVAL, "parse unknown form");
    struct epar_posfx bad = {EPAR_FORM_BASIC, 0, 1, 0};
    check_int(epar_posfx_validate(&bad), EPAR_EINVAL, "alpha 0 rejected");
    bad.alpha = 1; bad.beta = -1;
    check_int(epar_posfx_validate(&bad), EPAR_EINVAL, "beta < 0 rejected");
    bad.beta = 0; bad.gamma = NAN;
    check_int(epar_posfx_validate(&bad), EPAR_EINVAL, "gamma NaN rejected");
    return check_summary("test_posfx");
}
