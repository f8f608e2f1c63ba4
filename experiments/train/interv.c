/* interventions on a trained model at evaluation (experiments/train/interv.h) */
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/train/interv.h"

int epar_interv_eval(struct epar_train_run *r, long n, const struct epar_interv *x, struct epar_train_eval *e)
{
    struct epar_nn *m = &r->model;
    int B = r->cfg.batch, T = r->cfg.task.length, st = EPAR_OK;
    if (x->boost_layer >= m->cfg.NL)
        return epar_err_set(EPAR_EINVAL, "boost layer %d: the model has %d layers", x->boost_layer, m->cfg.NL);
    m->head_mask = x->head_mask;
    if (x->boost_layer >= 0) {
        r->boost_keys = malloc((size_t)B * T * T);
        if (!r->boost_keys) st = epar_err_set(EPAR_ENOMEM, "out of memory for the boosted keys");
        m->boost = (struct epar_nn_boost){x->boost, x->boost_layer, x->boost_renorm, NULL};
    }
    if (!st) st = epar_exp_train_evaluate(r, n, e);
    free(r->boost_keys);
    r->boost_keys = NULL;
    m->head_mask = NULL;
    memset(&m->boost, 0, sizeof m->boost);
    return st;
}

int epar_interv_heads(struct epar_train_run *r, long n, struct epar_train_eval *masked)
{
    int NL = r->model.cfg.NL, NH = r->model.cfg.NH, st = EPAR_OK;
    unsigned char *mask = calloc((size_t)NL * NH, 1);
    if (!mask) return epar_err_set(EPAR_ENOMEM, "out of memory for a head mask");
    for (int k = 0; !st && k < NL * NH; k++) {
        memset(mask, 0, (size_t)NL * NH);
        mask[k] = 1;
        struct epar_interv x = {mask, 1.0, -1, 0};
        st = epar_interv_eval(r, n, &x, &masked[k]);
    }
    free(mask);
    return st;
}

int epar_interv_parse_heads(const char *s, int NL, int NH, unsigned char *mask)
{
    memset(mask, 0, (size_t)NL * NH);
    const char *p = s;
    if (!*p) return epar_err_set(EPAR_EINVAL, "no head given (expected L.H,... e.g. 0.1,1.3)");
    for (;;) {
        char *end;
        long l = strtol(p, &end, 10), h;
        if (end == p || *end != '.' || l < 0) goto bad;
        p = end + 1;
        h = strtol(p, &end, 10);
        if (end == p || h < 0 || (*end && *end != ',')) goto bad;
        if (l >= NL || h >= NH)
            return epar_err_set(EPAR_EINVAL, "head %ld.%ld is outside the model's %d layers x %d heads", l, h, NL, NH);
        if (mask[l * NH + h]) return epar_err_set(EPAR_EINVAL, "head %ld.%ld given twice", l, h);
        mask[l * NH + h] = 1;
        if (!*end) return EPAR_OK;
        p = end + 1;
    }
bad:
    return epar_err_set(EPAR_EINVAL, "'%s' is not a list of layer.head (expected L.H,... e.g. 0.1,1.3)", s);
}
