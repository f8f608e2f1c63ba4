#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/rng.h"
#include "lib/runrec.h"
#include "experiments/common.h"

int epar_exp_model_alloc(struct epar_exp_model *m, const struct epar_params *prm)
{
    memset(m, 0, sizeof *m);
    m->prm = *prm;
    int L = prm->length, D = prm->hidden, H = prm->heads;
    m->cfg = (struct epar_attn_cfg){
        .L = L, .D = D, .heads = H,
        .scale = 1.0 / sqrt(prm->score_scale_head ? (double)D / H : (double)D),
        .inv_temp = 1.0 / prm->temperature, .causal = 0, .empty = EPAR_EMPTY_SELF};
    int st = epar_attn_cfg_validate(&m->cfg);
    if (st) return st;
    if ((st = epar_attn_layer_alloc(&m->layer, L, D, 1))) return st;
    if ((st = epar_attn_ws_alloc(&m->ws, L, D))) goto fail;
    m->P = epar_err_alloc((size_t)L * L, sizeof *m->P, "position-effect matrix");
    m->Ah = epar_err_alloc((size_t)H * L * L, sizeof *m->Ah, "attention matrices");
    if (!m->P || !m->Ah) { st = EPAR_ENOMEM; goto fail; }
    struct epar_posfx fx = {prm->form, prm->alpha, prm->beta, prm->gamma};
    epar_exp_model_set_effect(m, &fx);
    return EPAR_OK;
fail:
    epar_exp_model_free(m);
    return st;
}

void epar_exp_model_set_effect(struct epar_exp_model *m, const struct epar_posfx *fx)
{
    m->fx = *fx;
    epar_posfx_matrix(fx, m->cfg.L, m->P);
    m->mods.factor = fx->form == EPAR_FORM_NONE ? NULL : m->P;
}

int epar_exp_model_init(struct epar_exp_model *m, unsigned long seed, unsigned long run)
{
    gsl_rng *r = epar_rng_alloc(seed, run, EPAR_RNG_WEIGHTS);
    if (!r) return EPAR_ENOMEM;
    epar_attn_layer_init(&m->layer, r);
    epar_rng_free(r);
    return EPAR_OK;
}

void epar_exp_model_free(struct epar_exp_model *m)
{
    epar_attn_layer_free(&m->layer);
    epar_attn_ws_free(&m->ws);
    free(m->P);
    free(m->Ah);
    m->P = m->Ah = NULL;
}

int epar_exp_data(const struct epar_params *prm, unsigned long seed, unsigned long run, double *X)
{
    gsl_rng *r = epar_rng_alloc(seed, run, EPAR_RNG_DATA);
    if (!r) return EPAR_ENOMEM;
    epar_rng_normal(r, X, (size_t)prm->batch * prm->length * prm->hidden, 1.0);
    epar_rng_free(r);
    return EPAR_OK;
}

void epar_exp_attention(struct epar_exp_model *m, const double *X, int B, double *A)
{
    int L = m->cfg.L, D = m->cfg.D, H = m->cfg.heads;
    size_t LL = (size_t)L * L;
    for (int b = 0; b < B; b++) {
        const double *Xb = X + (size_t)b * L * D;
        if (H == 1) {
            epar_attn_forward(&m->cfg, &m->layer, &m->mods, Xb, A + (size_t)b * LL, &m->ws, NULL);
        } else {
            epar_attn_forward(&m->cfg, &m->layer, &m->mods, Xb, m->Ah, &m->ws, NULL);
            epar_attn_head_average(m->Ah, H, L, A + (size_t)b * LL);
        }
    }
}

int epar_exp_write_run_json(struct epar_out *o, const char *experiment, const char *protocol_path,
                            const struct epar_params *prm, json_t *extra)
{
    return epar_runrec_write(epar_out_path(o, "run.json"), experiment, protocol_path, prm, extra);
}

void epar_exp_mech_param_rows(enum epar_mech_id id, struct epar_field rows[EPAR_MECH_MAX_PARAMS + 1])
{
    const struct epar_mech_param *q = epar_mech_row(id)->params;
    int n = 0;
    for (; n < EPAR_MECH_MAX_PARAMS && q[n].name; n++)
        rows[n] = (struct epar_field){.key = q[n].name, .type = EPAR_FIELD_DOUBLE,
                                      .offset = (size_t)n * sizeof(double)};
    rows[n] = (struct epar_field){0};
}

int epar_exp_write_table(struct epar_out *o, const char *name, const struct epar_table *t)
{
    return epar_csv_write(t, epar_out_path(o, name));
}

int epar_exp_write_tables(struct epar_out *o, const struct epar_exp_file *files, size_t n)
{
    int st = EPAR_OK;
    for (size_t i = 0; i < n && !st; i++) st = epar_exp_write_table(o, files[i].name, files[i].t);
    return st;
}

struct epar_table *epar_exp_matrix_table(const char *cols, const double *M, int R, int C)
{
    struct epar_table *t = epar_csv_new(cols);
    if (!t) return NULL;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            if (epar_csv_append(t, "iid", i, j, M[(size_t)i * C + j])) {
                epar_csv_free(t);
                return NULL;
            }
    return t;
}

int epar_exp_heatmap(struct epar_out *o, const char *name, const char *title, const char *csv,
                     const char *xlabel, const char *ylabel, const char *cblabel)
{
    return epar_plot_scriptf(o, name, title,
                             "set title '%s'\n"
                             "set xlabel '%s'\nset ylabel '%s'\nset cblabel '%s'\n"
                             "@epar_heatmap\n"
                             "set autoscale xfix\nset autoscale yfix\n"
                             "eval epar_cells('%s', '2', '1', '3')\n",
                             title, xlabel, ylabel, cblabel, csv);
}

int epar_exp_finish(struct epar_out *o, int no_render, int jobs)
{
    int st = EPAR_OK;
    if (!no_render) st = epar_plot_render(o, jobs > 0 ? jobs : 2, NULL);
    if (st) {
        epar_out_abort(o);
        return st;
    }
    return epar_out_commit(o);
}

int epar_exp_sets(const struct epar_protocol *p, const json_t *set, const char *path,
                  int (*fn)(void *ctx, const char *assignment), void *ctx)
{
    if (!set) return EPAR_OK;
    if (!json_is_object(set))
        return epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s: expected an object", p->path, path);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)set, k, v) {
        char a[256];
        if (!json_is_number(v))
            return epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.%s: expected a number", p->path, path, k);
        snprintf(a, sizeof a, "%s=%.17g", k, json_number_value(v));
        if (fn(ctx, a)) {
            char jp[512];
            snprintf(jp, sizeof jp, "%s.%s", path, k);
            return epar_protocol_blame(p, jp);
        }
    }
    return EPAR_OK;
}
