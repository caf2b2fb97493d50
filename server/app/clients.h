/* clients.h — the cutover's (docs/API.md) clients: per cluster, in memory, what each RK-Client id
 * holds (the version its own latest request named in If-None-Match, never merely what it was sent),
 * the version it was last offered, the one it last refused and why, its address, user agent and
 * when it was last seen. Bounded whatever ids a client invents: a cap per cluster and in total (the
 * id seen longest ago goes first), cut strings, and ids silent for the expiry forgotten.
 *
 * Shared (rkd_clients_share; fleet_share.c drives it): on a store several replicas share, the table
 * also holds the clients the other replicas serve, from the records they write, so that its report
 * counts the whole fleet; the caps then bound the whole fleet. An id's record is the latest
 * replica's to see it: this one writes the records of its own ids when the version one holds or
 * refuses changes (a version offered goes with the next such write: a cutover costs one write a
 * client), or when another replica's record of an id polling here is half an expiry old (the id
 * moved), and
 * deletes them when it forgets them; the others' go when they are deleted in the store (their
 * replica forgot them, or died and its lease expired), unless the id polled here within the expiry:
 * then this replica takes it over.
 *
 * Thread safety: every function may run on many threads at once for one table.
 */
#ifndef RKD_CLIENTS_H
#define RKD_CLIENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "ringkeeper.h"  /* rk_client_id_valid: the ids tracked */
#include "store_fleet.h" /* the records shared with other replicas */

#define RKD_CLIENTS_AGENT_MAX       128    /* bytes of a user agent kept; the rest is cut */
#define RKD_CLIENTS_REASON_MAX      160    /* bytes of a refusal's reason kept; the rest is cut */
#define RKD_CLIENTS_ADDR_MAX        64     /* a numeric IPv6 address with its scope fits */
#define RKD_CLIENTS_TOKEN_MAX       65     /* a token's name (auth.h: 64 bytes) and its NUL */
#define RKD_CLIENTS_EXPIRY_S        180    /* docs/API.md: an id silent this long is forgotten */
#define RKD_CLIENTS_MAX_TOTAL       100000 /* ids tracked at most, all clusters together */
#define RKD_CLIENTS_MAX_PER_CLUSTER 50000  /* ids tracked at most in one cluster */
#define RKD_CLIENTS_LIST_DEFAULT    100    /* clients listed by GET .../clients without ?limit */
#define RKD_CLIENTS_LIST_MAX        1000   /* largest ?limit */

typedef struct rkd_clients_limits {
    size_t max_total;       /* 0: RKD_CLIENTS_MAX_TOTAL */
    size_t max_per_cluster; /* 0: RKD_CLIENTS_MAX_PER_CLUSTER */
    unsigned expiry_s;      /* 0: RKD_CLIENTS_EXPIRY_S */
    int authenticated_only; /* for rkd_app_set_client_limits: with a token file, ids seen without
                               a client token are not recorded at all (else they are kept apart) */
} rkd_clients_limits;

typedef struct rkd_clients rkd_clients;

/* A new empty table, NULL when out of memory. Free with rkd_clients_free (NULL is fine). */
rkd_clients *rkd_clients_new(const rkd_clients_limits *limits);
void rkd_clients_free(rkd_clients *t);

/* What one ring request says of its client. Versions are of this server's store; 0 means none. */
typedef struct rkd_client_report {
    const char *id;     /* RK-Client */
    int64_t held;       /* the ring it holds (If-None-Match); 0: none, or another store's */
    int64_t offered;    /* the version this answer sends or confirms; 0: none yet (a held poll),
                           the last one offered is kept */
    int64_t refused;    /* the version RK-Refused names; 0: it refuses none */
    const char *reason; /* RK-Refused's reason; NULL when it refuses none */
    const char *addr;   /* numeric address, or NULL */
    const char *agent;  /* User-Agent, or NULL */
    const char *token;  /* the name of the client token that authenticated it, or NULL */
} rkd_client_report;

/* Records `r` for its id in `cluster`. An id that breaks rk_client_id_valid's rule is ignored
 * rather than refused: the ring is served whatever the header says. The agent and the reason are
 * cut (RKD_CLIENTS_AGENT_MAX, RKD_CLIENTS_REASON_MAX bytes) with bytes outside 0x20..0x7e replaced
 * by '?'. Past a cap the id of that cluster (or of all) seen longest ago is forgotten to make
 * room. Out of memory: the id, or its agent or reason, is not recorded. 1 when what the report
 * counts changed (a new id, or the version it holds, was offered or refuses), 0 when not, and
 * RKD_CLIENTS_FOREIGN, recording nothing, when the id is another token's: an id is bound to the
 * client token that registered it (SPEC section 9) until it expires. */
int rkd_clients_seen(rkd_clients *t, const char *cluster, const rkd_client_report *r);
#define RKD_CLIENTS_FOREIGN (-1)

/* {"clients": [the `limit` first, stragglers first: lowest held version (none first), then seen
 *  longest ago; each {"id", "held", "offered", "refused", "reason", "addr", "user_agent",
 *  "token", "last_seen"}],
 *  "summary": {"by_version": {"3": 2, ...} (held versions), "none": ids holding none,
 *  "refusing": ids that refuse `active`, "active": `active` or null when < 1, "converged",
 *  "total": how many}} of `cluster`; the summary counts them all. converged: at least one client,
 * and every one holds `active`. New reference, NULL when out of memory. */
json_t *rkd_clients_json(rkd_clients *t, const char *cluster, int64_t active, size_t limit);

/* Appends the ringkeeper_clients{cluster,version} gauges of held versions (version "none" for ids
 * that hold none) and ringkeeper_clients_refusing{cluster,version}, ids by the version they
 * refuse, (Prometheus text) to `f`. */
void rkd_clients_metrics(rkd_clients *t, FILE *f);

/* ---- Shared with other replicas ---- */

#define RKD_CLIENTS_BATCH 1024 /* records one rkd_clients_take moves at most */

/* A record of this replica's taken to be written, with copies of its strings. */
typedef struct rkd_clients_out {
    rkd_fleet_record rec; /* its strings point into the fields below */
    char cluster[64];
    char id[RK_CLIENT_ID_MAX + 1];
    char reason[RKD_CLIENTS_REASON_MAX + 1];
    char addr[RKD_CLIENTS_ADDR_MAX];
    char agent[RKD_CLIENTS_AGENT_MAX + 1];
    char token[RKD_CLIENTS_TOKEN_MAX];
} rkd_clients_out;

/* Shares the table as replica `replica` (copied), its records those of the strangers when
 * `stranger` is set: from now on changes are queued for rkd_clients_take. RK_OK or RK_ENOMEM. */
int rkd_clients_share(rkd_clients *t, const char *replica, int stranger);
/* Moves up to `max` records to write (deletions first) into out[0 .. return value). */
size_t rkd_clients_take(rkd_clients *t, rkd_clients_out *out, size_t max);
/* After out[0 .. n) were written (`ok`, with the store's revisions in out[i].rec.rev) or not (they
 * are queued again, for the next take). */
void rkd_clients_written(rkd_clients *t, const rkd_clients_out *out, size_t n, int ok);
/* Applies a record another replica wrote or deleted (store_fleet.h's sink): 1 when what the table
 * counts changed. */
int rkd_clients_heard(rkd_clients *t, const rkd_fleet_record *r);
/* After full reading `round` of the store: forgets the others' ids it did not have (taking over
 * those polling here within the expiry). 1 when what the table counts changed. */
int rkd_clients_read_all(rkd_clients *t, uint64_t round);
/* Queues every record of this replica's again (its lease expired: they are gone from the store). */
void rkd_clients_rewrite(rkd_clients *t);

#endif
