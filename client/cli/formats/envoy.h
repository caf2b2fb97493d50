/* envoy.h — what the envoy format's reader (envoy_read.c) gives its writer (envoy.c): an Envoy
 * Cluster (CDS) and its ClusterLoadAssignment (EDS), JSON or YAML, read into a topology of the
 * envoy_ring_hash or maglev scheme (docs/ENVOY.md, "Import and export"). */
#ifndef RK_CLI_FORMAT_ENVOY_H
#define RK_CLI_FORMAT_ENVOY_H

#include <stddef.h>

#include <jansson.h>

#include "format.h"

#define RK_ENVOY_MAX_WEIGHT 1000 /* the schemes' largest weight (docs/ENVOY.md) */

/* The format's import (format.h): the topology of Envoy cluster `name` (NULL: the file's only
 * one) in `text` (len bytes), a Cluster with its load_assignment, a list or `resources` of
 * Clusters and ClusterLoadAssignments, or a bootstrap's static_resources; NULL with a sentence in
 * msg naming the field a ring cannot say. */
json_t *rk_envoy_import(const char *text, size_t len, const char *name,
                        char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX]);

#endif
