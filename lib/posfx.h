/* posfx: the EPAR position effect m(i,j) that multiplies the scaled content score (docs/MECHANISMS.md §3-4).
 *
 *   basic:    m = alpha * exp(-beta |i-j| / L)
 *   enhanced: m = alpha * (1 + gamma exp(-beta |i-j| / L)) / (1 + gamma)
 *   none:     m = 1 (no position effect, and no alpha: the measured baseline)
 *
 * L is the number of keys in the sequence. Distances are passed as doubles so the same functions serve
 * the continuous analysis (Theorem 1) and the integer matrix. */
#ifndef EPAR_POSFX_H
#define EPAR_POSFX_H

enum epar_form { EPAR_FORM_NONE = 0, EPAR_FORM_BASIC = 1, EPAR_FORM_ENHANCED = 2, EPAR_FORM_COUNT };

struct epar_posfx {
    enum epar_form form;
    double alpha, beta, gamma;
};

/* "none" | "basic" | "enhanced" -> form. EPAR_EINVAL with a message naming the value otherwise. */
int epar_posfx_form_parse(const char *name, enum epar_form *form);
const char *epar_posfx_form_name(enum epar_form form);

/* Validates alpha > 0, beta >= 0, gamma >= 0, all finite. */
int epar_posfx_validate(const struct epar_posfx *p);

/* m at distance d (>= 0) in a sequence of length L. */
double epar_posfx_value(const struct epar_posfx *p, double d, double L);
/* dm/dd, analytic. */
double epar_posfx_deriv(const struct epar_posfx *p, double d, double L);
/* Partial derivatives of m at distance d with respect to (alpha, beta, gamma) -> g[0..2], analytic
 * (training: learned position-effect parameters). basic: dm/dgamma = 0; none: all 0. */
void epar_posfx_param_grad(const struct epar_posfx *p, double d, double L, double g[3]);
/* P (L,L) row-major: P[i*L+j] = m(|i-j|). */
void epar_posfx_matrix(const struct epar_posfx *p, int L, double *P);
/* Scalar parameters the form reads: none 0, basic 2 (alpha, beta), enhanced 3 (alpha, beta, gamma). */
int epar_posfx_nparams(enum epar_form form);
/* Infimum over all distances: alpha/(1+gamma) enhanced, 0 basic, 1 none. */
double epar_posfx_infimum(const struct epar_posfx *p);

/* Summaries of the (L,L) matrix used by the sensitivity experiment (docs/PROTOCOLS.md Experiment 3),
 * exact, from the L distinct values (no matrix needed):
 *   strength = mean over all L^2 pairs of P(i,j) = (L m(0) + 2 sum_{d=1}^{L-1} (L-d) m(d)) / L^2;
 *   decay_speed = mean of P[c, c+k] = m(k) for c = L/2 (integer division), k = 1 .. c-1
 *                 (the reference's window; NaN when it is empty, L < 4). */
double epar_posfx_strength(const struct epar_posfx *p, int L);
double epar_posfx_decay_speed(const struct epar_posfx *p, int L);

#endif
