/* clients_internal.h — what the files of the table of clients share (clients.c: the table and
 * recording; clients_read.c: the report and the gauges; clients_share.c: the records other
 * replicas write and this one's to write). Not used outside them. */
#ifndef RKD_CLIENTS_INTERNAL_H
#define RKD_CLIENTS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "clients.h"

#define CLUSTER_BYTES 64 /* a cluster name (docs/RING.md: at most 63 bytes) and its NUL */
/* Names of other replicas kept; past them, records are shown as the last one's (the names are
 * for people: the store's own replicas, a handful). */
#define RKD_CLIENTS_REPLICAS 64

typedef struct group group;
typedef struct entry entry;

/* An entry's place in one of the lists, and a list: seen longest ago first. */
typedef struct lru_link {
    entry *prev, *next;
} lru_link;
typedef struct lru_list {
    entry *head, *tail;
} lru_list;

/* One id of one cluster. */
struct entry {
    entry *chain;                      /* next in its hash bucket */
    lru_link all;                      /* in rkd_clients.all, or .others when `replica` is set */
    lru_link peers;                    /* in its group's ids */
    lru_link queue;                    /* in rkd_clients.queue while `queued` */
    group *group;                      /* its cluster */
    uint64_t hash;                     /* of (cluster, id) */
    int64_t held;                      /* the version it says it holds; 0: none */
    int64_t offered;                   /* the version it was last sent or confirmed; 0: none */
    int64_t refused;                   /* the version it says it refuses; 0: none */
    char *reason;                      /* owned, cut and made printable; NULL unless refused */
    int64_t seen_ms;                   /* CLOCK_MONOTONIC when seen here (0: never): expiry */
    time_t seen_at;                    /* CLOCK_REALTIME: for people (another replica's: when it
                                          wrote the record) */
    char addr[RKD_CLIENTS_ADDR_MAX];   /* numeric address, or "" */
    char token[RKD_CLIENTS_TOKEN_MAX]; /* the client token's name, or "" */
    char *agent;                       /* owned, cut and made printable; NULL when none was sent */
    /* Sharing (clients_share.c): */
    const char *replica;     /* the replica whose record this is (one of rkd_clients.names); NULL:
                                this one's */
    int64_t rev;             /* the store's revision of its record; 0: none stored */
    time_t written;          /* when its record was last written, by whichever replica */
    uint32_t round;          /* the last full reading of the store that had it (another's) */
    unsigned char queued;    /* its record is to be written */
    unsigned char in_others; /* listed in rkd_clients.others (else in .all, or nowhere yet) */
    unsigned char listed;    /* in one of the two */
    char id[];               /* the id, NUL-terminated */
};

#define ALL   offsetof(entry, all)   /* the lists' `which`: the list of all ids ... */
#define PEERS offsetof(entry, peers) /* ... or of a cluster's */
#define QUEUE offsetof(entry, queue) /* ... or of the records to write */

/* How many ids of a cluster have one version (0: none) in one of their fields. */
typedef struct tally_row {
    int64_t version;
    size_t count;
} tally_row;

/* The counts of one field of a cluster's ids: rows sorted by version, none with a count of 0. A
 * client may claim any version in its headers, so there can be a row per id, no more. */
typedef struct tally {
    tally_row *rows;
    size_t n, cap;
} tally;

enum { T_HELD, T_OFFERED, T_REFUSED, TALLIES }; /* the fields counted */

/* The ids of one cluster; freed when its last id goes. */
struct group {
    group *next;              /* in rkd_clients.groups */
    lru_list ids;             /* its ids (entry.peers) */
    size_t count;             /* how many */
    tally tallies[TALLIES];   /* their counts by version held, offered, refused */
    int stale;                /* a count found no memory: counted again when next read */
    char name[CLUSTER_BYTES]; /* the cluster */
};

/* A record of this replica's that is gone from the table but not yet from the store. */
typedef struct tombstone {
    char cluster[CLUSTER_BYTES];
    char id[RK_CLIENT_ID_MAX + 1];
    int64_t rev;
} tombstone;

struct rkd_clients {
    pthread_mutex_t mu;        /* guards everything below */
    rkd_clients_limits limits; /* with the defaults applied */
    entry **buckets;           /* hash table, n_buckets (a power of two) long */
    size_t n_buckets;          /* at least max_total: chains stay short */
    uint64_t seed;             /* random: ids chosen to collide cannot be computed offline */
    lru_list all;              /* this replica's ids (entry.all), for the expiry */
    lru_list others;           /* the ids other replicas recorded (entry.all): they expire there */
    size_t total;              /* how many, in both */
    group *groups;             /* clusters with at least one id */
    /* Sharing (clients_share.c): */
    char *replica;    /* this replica's name while shared, else NULL */
    int stranger;     /* its records are the strangers' */
    lru_list queue;   /* this replica's ids whose records are to be written */
    tombstone *tombs; /* records to delete */
    size_t n_tombs, cap_tombs;
    char *names[RKD_CLIENTS_REPLICAS]; /* the other replicas' names, as entries point to them */
    size_t n_names;
};

int64_t rkd_clients_mono_ms(void);
/* The entry of (cluster, id) whose hash is `hash`, or NULL. */
entry *rkd_clients_find(rkd_clients *t, uint64_t hash, const char *cluster, const char *id);
uint64_t rkd_clients_hash(const rkd_clients *t, const char *cluster, const char *id);
group *rkd_clients_group(rkd_clients *t, const char *cluster);
/* A new entry of `cluster` (in no list of ids yet; room made first), NULL when out of memory. */
entry *rkd_clients_insert(rkd_clients *t, uint64_t hash, const char *cluster, const char *id);
/* Forgets `e` everywhere, and its cluster with its last id; a record of this replica's stored for
 * it is to be deleted (clients_share.c). */
void rkd_clients_drop(rkd_clients *t, entry *e);
/* Forgets this replica's ids silent for the expiry. */
void rkd_clients_expire(rkd_clients *t, int64_t now_ms);
/* Counts e in (up) or out of its cluster's tallies. */
void rkd_clients_count(entry *e, int up);
/* Counts g's ids again when its tallies are stale: 0, or -1 when out of memory still. */
int rkd_clients_fresh_tallies(group *g);
/* Moves e to the tail of its list of ids, this replica's or the others' (as e->replica says),
 * and of its cluster's: seen last. */
void rkd_clients_place(rkd_clients *t, entry *e);
/* Replaces *kept with `text` cut to `max` bytes and made printable, unless it is that already. */
void rkd_clients_keep_text(char **kept, const char *text, size_t max);
/* Removes e from whichever list holds it (`which`: ALL, PEERS or QUEUE). */
void rkd_clients_unlink(rkd_clients *t, entry *e, size_t which);
void rkd_clients_append(lru_list *l, entry *e, size_t which);

/* While shared: after a report here changed e's version held or refused (`changed`: a new id too),
 * or not, queues its record, taking it over from another replica when it changed or the other's
 * record is half an expiry old. */
void rkd_clients_share_seen(rkd_clients *t, entry *e, int changed);
/* While shared: before e is dropped, its stored record (this replica's) is to be deleted. */
void rkd_clients_share_drop(rkd_clients *t, entry *e);
/* Queues e's record to be written (once). */
void rkd_clients_queue(rkd_clients *t, entry *e);
/* A record of (cluster, id) at revision `rev` to delete (out of memory: it stays until the lease
 * expires). */
void rkd_clients_tomb(rkd_clients *t, const char *cluster, const char *id, int64_t rev);

#endif
