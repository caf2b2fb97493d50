/* pass.h — what a copy and a verify share (copy.c, verify.c): one walk over a source's scan in
 * batches, each key through the rule of copy.h, the ones that move handed to the kind of pass,
 * the cursor moved and the progress told at each batch boundary, a failed batch undone.
 * Internal to the mover. */
#ifndef RKM_PASS_H
#define RKM_PASS_H

#include "copy.h"

typedef struct rkm_pass rkm_pass;

/* The keys of one scan step that move, kept for a batched kind's flush. */
typedef struct rkm_moving {
    rkm_key *keys; /* keys[i].key points into `bytes` when the flush is called */
    uint32_t *to;  /* keys[i]'s new owner: an index into cfg->dest */
    size_t n, cap; /* entries, and room for them */
    char *bytes;   /* the keys' bytes, one after another */
    size_t used, room;
} rkm_moving;

/* What a kind of pass does; each embeds an rkm_pass as its first member. */
typedef struct rkm_pass_ops {
    /* A key that moves, and the connection to its new owner. RK_OK, or an error that stops the
     * pass (`err` always set: the pass's own, never NULL). */
    int (*move)(rkm_pass *p, const rkm_key *key, rkm_conn *dest, rk_error *err);
    /* Instead of move when not NULL: the moving keys of a scan step, all at once after it, so
     * that they travel in a few round trips. As move's, its errors stop the pass. */
    int (*flush)(rkm_pass *p, const rkm_moving *moving, rk_error *err);
    void (*mark)(rkm_pass *p); /* a batch begins: remember the state */
    void (*undo)(rkm_pass *p); /* it failed: back to what mark remembered */
    /* A batch ended: the caller's progress callback's answer (RK_OK, RKM_STOP, an error). */
    int (*report)(rkm_pass *p);
} rkm_pass_ops;

struct rkm_pass {
    const rkm_copy_config *cfg; /* borrowed */
    const rkm_pass_ops *ops;    /* the kind's */
    rkm_cursor *cursor;         /* the state's: moved at each boundary */
    rkm_rule_counts *rule;      /* the state's: what the rule said */
    bool *stopped;              /* the state's: set when the progress callback stopped the pass */
    bool verifies;              /* a verify, which alone may delete_matched or catch_up */
    const char *source_id;      /* private: the source's node id */
    rkm_moving moving;          /* private: the step's moving keys, for ops->flush */
};

/* Walks from *p->cursor until the scan is done or the progress callback stops it (RK_OK, and
 * *p->stopped). A failed batch is undone (cursor and ops->undo) and its error returned; so is a
 * progress callback's error, after its batch. */
int rkm_pass_run(rkm_pass *p, rk_error *err);

/* Values held at once by a kind's flush: a chunk's keys are as many as RKM_CHUNK_BYTES holds by
 * the sizes the scan hinted (the size cap for a key it gave none), and never more than
 * RKM_CHUNK_GROWTH times what it holds at the cap: a value grown since the scan (or a store that
 * hints nothing) keeps a chunk within RKM_CHUNK_GROWTH * RKM_CHUNK_BYTES. */
#define RKM_CHUNK_BYTES  (32u << 20)
#define RKM_CHUNK_GROWTH 4

/* The most keys a chunk takes: RKM_CHUNK_GROWTH times as many values as RKM_CHUNK_BYTES holds at
 * the source's size cap, at least one, at most a batch. */
size_t rkm_pass_chunk_keys(const rkm_copy_config *cfg);
/* How many of mv's keys from `from` on the next chunk takes, 1 .. max: as many as fit
 * RKM_CHUNK_BYTES by their hinted sizes. */
size_t rkm_pass_chunk_len(const rkm_copy_config *cfg, const rkm_moving *mv, size_t from,
                          size_t max);

/* The keys of a chunk (n of mv's from `from` on) not yet `taken` whose new owner is that of key
 * `first`: into keys[0 .. m) with their places in `at`, marked taken. Returns m. */
size_t rkm_pass_owner_keys(const rkm_moving *mv, size_t from, size_t n, size_t first, bool *taken,
                           rkm_key *keys, size_t *at);

/* For a kind's move: a failure of one key alone (RK_EIO, RK_EINVAL) is counted in *errors and
 * listed in `failed` with its message, and the pass goes on (RK_OK); any other is returned. */
int rkm_pass_key_failed(rkm_keylist *failed, uint64_t *errors, const rkm_key *key, int rc,
                        rk_error *err);

#endif
