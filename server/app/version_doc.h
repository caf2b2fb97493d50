/* version_doc.h — the JSON documents of the HTTP API (docs/API.md) built from store records
 * (version_doc.c): version documents, the ring document, the version and cluster lists, and the
 * one way every body is serialized. Each function returns a new reference the caller owns.
 */
#ifndef RKD_VERSION_DOC_H
#define RKD_VERSION_DOC_H

#include <stddef.h>

#include <jansson.h>

#include "store.h"

/* One set of dump flags for every JSON body: compact, and reals with 17 significant digits so a
 * fraction parses back to the very double the server computed. */
#define RKD_JSON_FLAGS JSON_COMPACT /* for rk_json_dumps: reals in their shortest exact form */

/* The version document of docs/RING.md; with_nodes == 0 leaves "nodes" out (lists; `v` may then
 * have no topology). New reference, NULL when out of memory. */
json_t *rkd_version_json(const rkd_store_version *v, int with_nodes);

/* The ring document of GET .../ring: the version document of the active version `v` with
 * "previous": {"version", "fingerprint"} while a migration window is open, else null. New
 * reference, NULL when out of memory. */
json_t *rkd_ring_json(const rkd_store_version *v);

/* {"clusters": [{"cluster", "active_version" (null when none), "latest_version"}], "next_after":
 * the last name when another page follows, else null}. */
json_t *rkd_clusters_json(const rkd_store_cluster_list *list);

/* {"versions": [... without nodes ...], "next_before": N or null}. */
json_t *rkd_versions_json(const rkd_store_version_list *list);

/* Serialises `doc` (stolen: decref'd here, NULL allowed) with RKD_JSON_FLAGS into a new string
 * ending in a newline; RK_OK with *body and *len set, RK_ENOMEM otherwise. */
int rkd_json_dump(json_t *doc, char **body, size_t *len);

#endif
