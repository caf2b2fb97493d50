/* clients.h — the cutover's (docs/API.md) clients: per cluster, in memory, the version each
 * RK-Client id was last sent or already had, its address, user agent and when it was last seen.
 * Bounded whatever ids a client invents: a cap per cluster and in total (the id seen longest ago
 * goes first), cut strings, and ids silent for the expiry forgotten.
 *
 * Thread safety: every function may run on many threads at once for one table.
 */
#ifndef RKD_CLIENTS_H
#define RKD_CLIENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "ringkeeper.h" /* rk_client_id_valid: the ids tracked */

#define RKD_CLIENTS_AGENT_MAX       128    /* bytes of a user agent kept; the rest is cut */
#define RKD_CLIENTS_ADDR_MAX        64     /* a numeric IPv6 address with its scope fits */
#define RKD_CLIENTS_EXPIRY_S        180    /* docs/API.md: an id silent this long is forgotten */
#define RKD_CLIENTS_MAX_TOTAL       100000 /* ids tracked at most, all clusters together */
#define RKD_CLIENTS_MAX_PER_CLUSTER 50000  /* ids tracked at most in one cluster */
#define RKD_CLIENTS_LIST_DEFAULT    100    /* clients listed by GET .../clients without ?limit */
#define RKD_CLIENTS_LIST_MAX        1000   /* largest ?limit */

typedef struct rkd_clients_limits {
    size_t max_total;       /* 0: RKD_CLIENTS_MAX_TOTAL */
    size_t max_per_cluster; /* 0: RKD_CLIENTS_MAX_PER_CLUSTER */
    unsigned expiry_s;      /* 0: RKD_CLIENTS_EXPIRY_S */
} rkd_clients_limits;

typedef struct rkd_clients rkd_clients;

/* A new empty table, NULL when out of memory. Free with rkd_clients_free (NULL is fine). */
rkd_clients *rkd_clients_new(const rkd_clients_limits *limits);
void rkd_clients_free(rkd_clients *t);

/* Records that client `id` of `cluster` has `version` now. An id that breaks rk_client_id_valid's
 * rule is ignored rather than refused: the ring is served whatever the header says. `addr` and
 * `agent` may be NULL; the agent is cut to RKD_CLIENTS_AGENT_MAX bytes with bytes outside
 * 0x20..0x7e replaced by '?'. Past a cap the id of that cluster (or of all) seen longest ago is
 * forgotten to make room. Out of memory: the id is not recorded. */
void rkd_clients_seen(rkd_clients *t, const char *cluster, const char *id, int64_t version,
                      const char *addr, const char *agent);

/* {"clients": [the `limit` first, stragglers first: lowest version, then seen longest ago],
 *  "summary": {"by_version": {"3": 2, ...}, "active": `active` or null when < 1, "converged",
 *  "total": how many}} of `cluster`; the summary counts them all. converged: at least one client,
 * and every one at `active`. New reference, NULL when out of memory. */
json_t *rkd_clients_json(rkd_clients *t, const char *cluster, int64_t active, size_t limit);

/* Appends the ringkeeper_clients{cluster,version} gauges (Prometheus text) to `f`. */
void rkd_clients_metrics(rkd_clients *t, FILE *f);

#endif
