/* store.c — the parts of the store interface that no backend owns: code names, state names,
 * freeing records and reading parameters. */
#include <stdlib.h>
#include <string.h>

#include "store.h"

static const char *const state_names[] = {"staged", "active", "retired", "superseded"};

const char *rkd_store_strerror(int code)
{
    switch (code) {
#define RKD_STORE_TEXT_(name, value, text)                                                         \
    case RKD_STORE_##name:                                                                         \
        return text;
        RKD_STORE_ERRNO_MAP(RKD_STORE_TEXT_)
#undef RKD_STORE_TEXT_
    }
    return rk_strerror(code);
}

const char *rkd_store_errname(int code)
{
    switch (code) {
#define RKD_STORE_NAME_(name, value, text)                                                         \
    case RKD_STORE_##name:                                                                         \
        return "RKD_STORE_" #name;
        RKD_STORE_ERRNO_MAP(RKD_STORE_NAME_)
#undef RKD_STORE_NAME_
    }
    return rk_errname(code);
}

const char *rkd_store_state_name(rkd_store_state state)
{
    if ((unsigned)state >= sizeof state_names / sizeof state_names[0])
        return NULL;
    return state_names[state];
}

/* Frees what a record owns, not the record itself (list items live in one array). */
static void version_deinit(rkd_store_version *v)
{
    free(v->cluster);
    free(v->author);
    free(v->comment);
    rk_topology_free(v->topology);
}

void rkd_store_version_free(rkd_store_version *v)
{
    if (!v)
        return;
    version_deinit(v);
    free(v);
}

void rkd_store_version_list_free(rkd_store_version_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++)
        version_deinit(&list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

void rkd_store_cluster_list_free(rkd_store_cluster_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i].name);
    free(list->items);
    free(list->next_after);
    list->items = NULL;
    list->count = 0;
    list->next_after = NULL;
}

const char *rkd_store_param_value(const rkd_store_param *p, size_t n, const char *name)
{
    const char *value = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(p[i].name, name) == 0)
            value = p[i].value;
    return value;
}
