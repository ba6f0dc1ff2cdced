#include "vmc_box_plan.h"

struct vmc_box_plan vmc_box_plan(const struct vmc_box_extent *e, uint64_t cap) {
    struct vmc_box_plan p = {1, 1, e->w};
    if (e->w == 0 || cap == 0)
        return p; /* an empty box (no chunk at all: its depth is 0 too) */
    if (e->dev_kind == DEV_LINEAR || e->w > cap) {
        p.piece = cap;
    } else {
        p.rows_per = cap / e->w;
        if (p.rows_per >= e->h && e->dev_kind != DEV_ARRAY_2D) {
            p.slices_per = p.rows_per / e->h;
            p.rows_per = e->h;
        } else if (p.rows_per > e->h) {
            p.rows_per = e->h;
        }
    }
    return p;
}

uint64_t vmc_box_next_chunk(const struct vmc_box_extent *e, const struct vmc_box_plan *p, struct vmc_box_cursor *c,
                            struct vmc_box_chunk *k) {
    if (c->z >= e->d)
        return 0;
    k->z0 = c->z;
    k->y0 = c->y;
    k->b0 = c->b;
    if (p->slices_per > 1 || (p->rows_per == e->h && c->y == 0 && p->piece == e->w)) {
        k->nz = e->d - c->z < p->slices_per ? e->d - c->z : p->slices_per;
        k->ny = e->h;
        k->nb = e->w;
        c->z += k->nz;
        return k->nz * k->ny * k->nb;
    }
    k->nz = 1;
    if (p->piece < e->w) {
        k->ny = 1;
        k->nb = e->w - c->b < p->piece ? e->w - c->b : p->piece;
        c->b += k->nb;
        if (c->b >= e->w) {
            c->b = 0;
            c->y++;
        }
    } else {
        k->ny = e->h - c->y < p->rows_per ? e->h - c->y : p->rows_per;
        k->nb = e->w;
        c->y += k->ny;
    }
    if (c->y >= e->h) {
        c->y = 0;
        c->z++;
    }
    return k->nz * k->ny * k->nb;
}
