#include <math.h>
#include <string.h>
#include "err.h"
#include "posfx.h"

static const char *const form_names[EPAR_FORM_COUNT] = {"none", "basic", "enhanced"};

int epar_posfx_form_parse(const char *name, enum epar_form *form)
{
    for (int f = 0; f < EPAR_FORM_COUNT; f++)
        if (strcmp(name, form_names[f]) == 0) {
            *form = (enum epar_form)f;
            return EPAR_OK;
        }
    epar_err_set(EPAR_EINVAL, "unknown position-effect form '%s'", name);
    struct epar_nearest near;
    epar_nearest_init(&near, name);
    for (int f = 0; f < EPAR_FORM_COUNT; f++) epar_nearest_add(&near, form_names[f]);
    if (near.best) epar_err_hint("did you mean %s? (forms: basic, enhanced, none)", epar_nearest_text(&near, ""));
    else epar_err_hint("use one of: basic, enhanced, none");
    return EPAR_EINVAL;
}

const char *epar_posfx_form_name(enum epar_form form)
{
    return (form >= 0 && form < EPAR_FORM_COUNT) ? form_names[form] : "?";
}

int epar_posfx_validate(const struct epar_posfx *p)
{
    if (!isfinite(p->alpha) || p->alpha <= 0)
        return epar_err_set(EPAR_EINVAL, "alpha must be a finite number > 0, got '%g'", p->alpha);
    if (!isfinite(p->beta) || p->beta < 0)
        return epar_err_set(EPAR_EINVAL, "beta must be a finite number >= 0, got '%g'", p->beta);
    if (!isfinite(p->gamma) || p->gamma < 0)
        return epar_err_set(EPAR_EINVAL, "gamma must be a finite number >= 0, got '%g'", p->gamma);
    return EPAR_OK;
}

double epar_posfx_value(const struct epar_posfx *p, double d, double L)
{
    double e = exp(-p->beta * d / L);
    switch (p->form) {
    case EPAR_FORM_BASIC: return p->alpha * e;
    case EPAR_FORM_ENHANCED: return p->alpha * ((1.0 + p->gamma * e) / (1.0 + p->gamma)); /* finite for any finite alpha */
    default: return 1.0;
    }
}

double epar_posfx_deriv(const struct epar_posfx *p, double d, double L)
{
    double e = exp(-p->beta * d / L), k = -p->beta / L;
    switch (p->form) {
    case EPAR_FORM_BASIC: return p->alpha * k * e;
    case EPAR_FORM_ENHANCED: return p->alpha * (p->gamma / (1.0 + p->gamma)) * k * e;
    default: return 0.0;
    }
}

void epar_posfx_param_grad(const struct epar_posfx *p, double d, double L, double g[3])
{
    double e = exp(-p->beta * d / L), u = d / L;
    g[0] = g[1] = g[2] = 0.0;
    switch (p->form) {
    case EPAR_FORM_BASIC:              /* m = alpha e */
        g[0] = e;
        g[1] = -p->alpha * u * e;
        break;
    case EPAR_FORM_ENHANCED:           /* m = alpha (1 + gamma e) / (1 + gamma) */
        g[0] = (1.0 + p->gamma * e) / (1.0 + p->gamma);
        g[1] = -p->alpha * p->gamma / (1.0 + p->gamma) * u * e;
        g[2] = p->alpha * (e - 1.0) / ((1.0 + p->gamma) * (1.0 + p->gamma));
        break;
    default: break;
    }
}

void epar_posfx_matrix(const struct epar_posfx *p, int L, double *P)
{
    /* one value per distance, then fill: L exp() calls instead of L^2 */
    double *row0 = P; /* row 0 holds m(j) for j = 0..L-1 */
    for (int d = 0; d < L; d++) row0[d] = epar_posfx_value(p, (double)d, (double)L);
    for (int i = 1; i < L; i++) {
        double *r = P + (size_t)i * L;
        for (int j = 0; j < L; j++) r[j] = row0[j > i ? j - i : i - j];
    }
}

double epar_posfx_infimum(const struct epar_posfx *p)
{
    switch (p->form) {
    case EPAR_FORM_BASIC: return p->beta > 0 ? 0.0 : p->alpha;
    case EPAR_FORM_ENHANCED: return p->beta > 0 ? p->alpha / (1.0 + p->gamma) : p->alpha;
    default: return 1.0;
    }
}

double epar_posfx_strength(const struct epar_posfx *p, int L)
{
    double Ld = (double)L, s = Ld * epar_posfx_value(p, 0.0, Ld);
    for (int d = 1; d < L; d++) s += 2.0 * (Ld - d) * epar_posfx_value(p, (double)d, Ld);
    return s / (Ld * Ld);
}

double epar_posfx_decay_speed(const struct epar_posfx *p, int L)
{
    int c = L / 2;
    if (c < 2) return NAN;
    double s = 0.0;
    for (int k = 1; k < c; k++) s += epar_posfx_value(p, (double)k, (double)L);
    return s / (c - 1);
}

int epar_posfx_nparams(enum epar_form form)
{
    return form == EPAR_FORM_ENHANCED ? 3 : form == EPAR_FORM_BASIC ? 2 : 0;
}
