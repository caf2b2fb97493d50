/* clients_share.c — the table of clients shared with other replicas (clients.h, "Shared"): which
 * records of this replica's are to be written or deleted, and the others' records applied as the
 * store tells of them. Who owns an id's record: the replica that saw it last, with two rules that
 * keep a client that changes replicas counted without a gap: this replica takes over another's
 * record of an id polling here once that record is half an expiry old (so before the other forgets
 * it), and when the store deletes the record of an id seen here within the expiry. What a report
 * here queues, and what forgetting an id leaves to delete, are clients.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients_internal.h"

int rkd_clients_share(rkd_clients *t, const char *replica, int stranger)
{
    char *copy = strdup(replica);
    if (!copy)
        return RK_ENOMEM;
    pthread_mutex_lock(&t->mu);
    free(t->replica);
    t->replica = copy;
    t->stranger = stranger;
    pthread_mutex_unlock(&t->mu);
    return RK_OK;
}

/* ---- writing this replica's records ---- */

static void fill(rkd_clients_out *o, const char *cluster, const char *id, int stranger)
{
    memset(&o->rec, 0, sizeof o->rec);
    snprintf(o->cluster, sizeof o->cluster, "%s", cluster);
    snprintf(o->id, sizeof o->id, "%s", id);
    o->reason[0] = o->addr[0] = o->agent[0] = o->token[0] = '\0';
    o->rec = (rkd_fleet_record){.cluster = o->cluster,
                                .id = o->id,
                                .stranger = stranger,
                                .reason = o->reason,
                                .addr = o->addr,
                                .agent = o->agent,
                                .token = o->token};
}

static void fill_entry(rkd_clients_out *o, const entry *e, int stranger)
{
    fill(o, e->group->name, e->id, stranger);
    snprintf(o->reason, sizeof o->reason, "%s", e->reason ? e->reason : "");
    snprintf(o->addr, sizeof o->addr, "%s", e->addr);
    snprintf(o->agent, sizeof o->agent, "%s", e->agent ? e->agent : "");
    snprintf(o->token, sizeof o->token, "%s", e->token);
    o->rec.held = e->held;
    o->rec.offered = e->offered;
    o->rec.refused = e->refused;
}

size_t rkd_clients_take(rkd_clients *t, rkd_clients_out *out, size_t max)
{
    size_t n = 0;
    time_t now = time(NULL);
    pthread_mutex_lock(&t->mu);
    while (n < max && t->n_tombs > 0) {
        const tombstone *d = &t->tombs[--t->n_tombs];
        if (rkd_clients_find(t, rkd_clients_hash(t, d->cluster, d->id), d->cluster, d->id))
            continue; /* back since: its entry decides */
        fill(&out[n], d->cluster, d->id, t->stranger);
        out[n].rec.deleted = 1;
        out[n++].rec.rev = d->rev;
    }
    while (n < max && t->queue.head) {
        entry *e = t->queue.head;
        rkd_clients_unlink(t, e, QUEUE);
        fill_entry(&out[n++], e, t->stranger);
        e->written = now;
    }
    pthread_mutex_unlock(&t->mu);
    return n;
}

void rkd_clients_written(rkd_clients *t, const rkd_clients_out *out, size_t n, int ok)
{
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < n; i++) {
        const rkd_fleet_record *r = &out[i].rec;
        entry *e = rkd_clients_find(t, rkd_clients_hash(t, r->cluster, r->id), r->cluster, r->id);
        if (r->deleted && !ok && !e)
            rkd_clients_tomb(t, r->cluster, r->id, r->rev);
        else if (!r->deleted && e && !e->replica && ok)
            e->rev = r->rev;
        else if (!r->deleted && e && !e->replica)
            rkd_clients_queue(t, e);
    }
    pthread_mutex_unlock(&t->mu);
}

void rkd_clients_rewrite(rkd_clients *t)
{
    pthread_mutex_lock(&t->mu);
    for (entry *e = t->all.head; e; e = e->all.next) {
        e->rev = 0;
        rkd_clients_queue(t, e);
    }
    t->n_tombs = 0;
    pthread_mutex_unlock(&t->mu);
}

/* ---- the others' records ---- */

/* The table's copy of another replica's name (the last one kept when there are too many). */
static const char *name_of(rkd_clients *t, const char *replica)
{
    replica = replica && replica[0] ? replica : "?";
    for (size_t i = 0; i < t->n_names; i++)
        if (strcmp(t->names[i], replica) == 0)
            return t->names[i];
    char *copy = t->n_names < RKD_CLIENTS_REPLICAS ? strdup(replica) : NULL;
    if (copy)
        t->names[t->n_names++] = copy;
    return copy ? copy : t->n_names ? t->names[t->n_names - 1] : "?";
}

/* e's record is gone from the store: taken over when the id polled here within the expiry, else
 * forgotten. 1 when the counts changed. */
static int gone(rkd_clients *t, entry *e)
{
    int64_t ttl = (int64_t)t->limits.expiry_s * 1000;
    e->rev = 0; /* nothing stored to delete any more */
    if (e->seen_ms && rkd_clients_mono_ms() - e->seen_ms < ttl) {
        e->replica = NULL;
        rkd_clients_place(t, e);
        rkd_clients_queue(t, e);
        return 0;
    }
    rkd_clients_drop(t, e);
    return 1;
}

/* Applies another replica's record r to e (NULL: a new id). 1 when the counts changed. */
static int put(rkd_clients *t, entry *e, const rkd_fleet_record *r)
{
    int fresh = !e;
    e = e ? e : rkd_clients_insert(t, rkd_clients_hash(t, r->cluster, r->id), r->cluster, r->id);
    if (!e)
        return 0;
    int64_t held = e->held, offered = e->offered, refused = e->refused;
    rkd_clients_count(e, 0);
    e->held = r->held > 0 ? r->held : 0;
    e->offered = r->offered > 0 ? r->offered : 0;
    e->refused = r->refused > 0 ? r->refused : 0;
    rkd_clients_count(e, 1);
    rkd_clients_keep_text(&e->reason, e->refused ? r->reason : NULL, RKD_CLIENTS_REASON_MAX);
    rkd_clients_keep_text(&e->agent, r->agent && r->agent[0] ? r->agent : NULL,
                          RKD_CLIENTS_AGENT_MAX);
    snprintf(e->addr, sizeof e->addr, "%s", r->addr ? r->addr : "");
    snprintf(e->token, sizeof e->token, "%s", r->token ? r->token : "");
    e->seen_at = e->written = (time_t)r->at;
    e->rev = r->rev;
    e->round = r->round ? (uint32_t)r->round : e->round;
    e->replica = name_of(t, r->replica);
    rkd_clients_place(t, e);
    return fresh || held != e->held || offered != e->offered || refused != e->refused;
}

int rkd_clients_heard(rkd_clients *t, const rkd_fleet_record *r)
{
    if (!r->cluster || strlen(r->cluster) >= CLUSTER_BYTES || !rk_client_id_valid(r->id))
        return 0;
    int changed = 0;
    pthread_mutex_lock(&t->mu);
    entry *e = rkd_clients_find(t, rkd_clients_hash(t, r->cluster, r->id), r->cluster, r->id);
    if (e && r->round && e->rev == r->rev)
        e->round = (uint32_t)r->round; /* read again as it was */
    else if (e && (e->queued || r->rev < e->rev))
        ; /* this replica's newer write is on its way, or r is older than what is here */
    else if (r->deleted)
        changed = e ? gone(t, e) : 0;
    else
        changed = put(t, e, r);
    pthread_mutex_unlock(&t->mu);
    return changed;
}

int rkd_clients_read_all(rkd_clients *t, uint64_t round)
{
    int changed = 0;
    pthread_mutex_lock(&t->mu);
    for (entry *e = t->others.head, *next; e; e = next) {
        next = e->all.next;
        if (e->round != (uint32_t)round)
            changed |= gone(t, e);
    }
    pthread_mutex_unlock(&t->mu);
    return changed;
}
