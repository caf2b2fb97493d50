/* rings.c — the built rings that plans, pictures and migration jobs share: the cache of
 * rings by version (built when missing, after rk_plan_check has refused what it surely would),
 * the plan between two versions over them, and the slots that bound how many are computed at once
 * (--plan-concurrency), all but one of them at most for one client address. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rings.h"

/* Builds the ring of version v from its topology `t` and caches it. */
static rkd_entry *ring_put(rkd_call *c, int64_t v, rk_topology *t, int *rc, rk_error *err)
{
    rk_ring *ring = rk_ring_build(t, err);
    rkd_entry *e = ring ? rkd_cache_put(c->app->rings, c->cluster, v, 0, ring, rk_ring_memory(ring),
                                        rkd_cache_gen(c->app->rings))
                        : NULL;
    *rc = e ? RK_OK : ring ? RK_ENOMEM : err->code;
    return e;
}

rkd_entry *rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err)
{
    rkd_entry *e = rkd_cache_get(c->app->rings, c->cluster, v);
    rkd_store_version *rec = NULL;
    *rc = RK_OK;
    if (e)
        return e;
    *rc = rkd_store_get(c->app->store, c->cluster, v, &rec, err);
    e = *rc == RK_OK ? ring_put(c, v, rec->topology, rc, err) : NULL;
    rkd_store_version_free(rec);
    return e;
}

/* RK_ETOOBIG (field "nodes", saying how many) when a plan between `a` and `b` would list more
 * than `max` nodes (0: any): its node rows alone would pass --max-plan-rows. */
static int check_nodes(const rk_topology *a, const rk_topology *b, size_t max, rk_error *err)
{
    size_t n = max ? rk_plan_node_count(a, b) : 0;
    return n > max ? rk_error_set(err, RK_ETOOBIG, "nodes", "the plan has %zu rows to render", n)
                   : RK_OK;
}

/* One side of a plan: its version, and what reading and building its ring gave. */
typedef struct side {
    rkd_call *c;
    int64_t v;
    rkd_entry *e;           /* the ring, cached or built; held */
    rkd_store_version *rec; /* its version, read when the ring was not cached */
    int rc;
    rk_error err;
} side;

static void *read_side(void *arg)
{
    side *s = arg;
    if (!s->e)
        s->rc = rkd_store_get(s->c->app->store, s->c->cluster, s->v, &s->rec, &s->err);
    return NULL;
}

static void *build_side(void *arg)
{
    side *s = arg;
    if (!s->e && s->rc == RK_OK)
        s->e = ring_put(s->c, s->v, s->rec->topology, &s->rc, &s->err);
    return NULL;
}

/* fn on both sides: when both have work, side 1 on a thread of its own meanwhile (a cold plan of
 * two 4M-point versions reads and builds each in about 0.3 s, and a plan slot may take two cores),
 * else, or when no thread starts, one after the other here. */
static void on_both(void *(*fn)(void *), side s[2])
{
    pthread_t t;
    int apart = !s[0].e && !s[1].e && pthread_create(&t, NULL, fn, &s[1]) == 0;
    fn(&s[0]);
    if (apart)
        pthread_join(t, NULL);
    else
        fn(&s[1]);
}

/* The first failure of the two sides into err; RK_OK when none. */
static int side_rc(const side s[2], rk_error *err)
{
    const side *bad = s[0].rc ? &s[0] : s[1].rc ? &s[1] : NULL;
    if (bad && err)
        *err = bad->err;
    return bad ? bad->rc : RK_OK;
}

/* The rings of a plan between two versions, cached or built. When one is not cached yet, the
 * topologies first refuse what the plan would surely refuse (rk_plan_check, and max_nodes), so
 * such a refusal builds no ring (two cold 4M-point rings cost 0.8 s to build besides the store
 * reads). */
int rkd_plan_rings(rkd_call *c, const int64_t v[2], const rk_plan_options *opt, size_t max_nodes,
                   rkd_entry *e[2], rk_error *err)
{
    int rc = RK_OK;
    if (v[0] == v[1]) { /* nothing moves: no arc to check, and one ring */
        e[0] = rkd_ring_entry(c, v[0], &rc, err);
        e[1] = e[0] ? rkd_ring_entry(c, v[1], &rc, err) : NULL;
        if (rc == RK_OK) {
            const rk_topology *one = rk_ring_topology(e[0]->value);
            rc = check_nodes(one, one, max_nodes, err);
        }
        return rc;
    }
    side s[2] = {{.c = c, .v = v[0]}, {.c = c, .v = v[1]}};
    for (int k = 0; k < 2; k++)
        s[k].e = rkd_cache_get(c->app->rings, c->cluster, v[k]);
    on_both(read_side, s);
    rc = side_rc(s, err);
    const rk_topology *t[2];
    for (int k = 0; k < 2 && rc == RK_OK; k++)
        t[k] = s[k].e ? rk_ring_topology(s[k].e->value) : s[k].rec->topology;
    if (rc == RK_OK)
        rc = check_nodes(t[0], t[1], max_nodes, err);
    if (rc == RK_OK && (s[0].rec || s[1].rec))
        rc = rk_plan_check(t[0], t[1], opt, err);
    if (rc == RK_OK) {
        on_both(build_side, s);
        rc = side_rc(s, err);
    }
    for (int k = 0; k < 2; k++) {
        e[k] = s[k].e;
        rkd_store_version_free(s[k].rec);
    }
    return rc;
}

int rkd_plan_between(rkd_call *c, int64_t from, int64_t to, const rk_plan_options *opt,
                     rk_plan **out, rk_error *err)
{
    rkd_entry *ring[2] = {NULL, NULL};
    int rc = rkd_plan_rings(c, (int64_t[2]){from, to}, opt, 0, ring, err);
    *out = rc == RK_OK ? rk_plan_new(ring[0]->value, ring[1]->value, opt, err) : NULL;
    rc = rc ? rc : *out ? RK_OK : err->code;
    rkd_cache_release(c->app->rings, ring[1]);
    rkd_cache_release(c->app->rings, ring[0]);
    return rc;
}

/* The address a client's plan slots are counted by, into `out`: an IPv6 address by its /64, which
 * one host is commonly given whole (so it cannot pass for 2^64 clients), an IPv4-mapped one as
 * the IPv4 address, an unknown one as "-" (one address for all of them). */
static void slot_owner(const char *addr, char out[INET6_ADDRSTRLEN])
{
    struct in6_addr a;
    if (!addr || inet_pton(AF_INET6, addr, &a) != 1) {
        snprintf(out, INET6_ADDRSTRLEN, "%.*s", INET6_ADDRSTRLEN - 1, addr ? addr : "-");
        return;
    }
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
        inet_ntop(AF_INET, &a.s6_addr[12], out, INET6_ADDRSTRLEN);
        return;
    }
    memset(&a.s6_addr[8], 0, 8);
    inet_ntop(AF_INET6, &a, out, INET6_ADDRSTRLEN);
}

/* All slots but one: one address cannot take them all, and a console, which asks for a plan and
 * its picture at once, gets both at the default (3). Half of 2 had refused the console its
 * picture. */
unsigned rkd_plan_share(unsigned concurrency)
{
    return concurrency > 1 ? concurrency - 1 : 1;
}

int rkd_plan_slot_take(rkd_app *app, const char *addr)
{
    char owner[INET6_ADDRSTRLEN];
    slot_owner(addr, owner);
    return rkd_budget_take(app->plan_slots, owner, 1);
}

void rkd_plan_slot_give(rkd_app *app, const char *addr)
{
    char owner[INET6_ADDRSTRLEN];
    slot_owner(addr, owner);
    rkd_budget_give(app->plan_slots, owner, 1);
}
