/* idmap: a hash index over ids kept elsewhere (see idmap.h). */
#include "core/idmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int idmap_put(struct idmap *m, uint64_t h, size_t id)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        uint64_t *nh = calloc(nc, sizeof *nh);
        size_t *nid = calloc(nc, sizeof *nid);
        if (!nh || !nid) {
            free(nh);
            free(nid);
            return -ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (m->id1[i] == 0)
                continue;
            size_t j = m->h[i] & (nc - 1);
            while (nid[j])
                j = (j + 1) & (nc - 1);
            nh[j] = m->h[i];
            nid[j] = m->id1[i];
        }
        free(m->h);
        free(m->id1);
        m->h = nh;
        m->id1 = nid;
        m->cap = nc;
    }
    size_t j = h & (m->cap - 1);
    while (m->id1[j])
        j = (j + 1) & (m->cap - 1);
    m->h[j] = h;
    m->id1[j] = id + 1;
    m->n++;
    return 0;
}

void idmap_free(struct idmap *m)
{
    free(m->h);
    free(m->id1);
    memset(m, 0, sizeof *m);
}
