/* store_fleet.c — store_fleet.h over a backend's fleet operations (store_backend.h). */
#include <string.h>

#include "store_backend.h"
#include "store_domain_internal.h"

int rkd_store_fleet_shared(rkd_store *s)
{
    return s->ops->fleet_share && s->ops->fleet_write && s->ops->fleet_unshare;
}

int rkd_store_fleet_share(rkd_store *s, const char *replica, unsigned ttl_s,
                          const rkd_fleet_sink *sink, rk_error *err)
{
    if (!rkd_store_fleet_shared(s))
        return rk_error_set(err, RK_EINVAL, NULL, "this store is one server's: no fleet to share");
    if (!replica || !replica[0] || !ttl_s || !sink || !sink->record || !sink->read_all)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "sharing the fleet needs a replica name, an "
                            "expiry and where to hear of the others");
    return s->ops->fleet_share(s->b, replica, ttl_s, sink, err);
}

int rkd_store_fleet_write(rkd_store *s, rkd_fleet_record *recs, size_t n, int *lost, rk_error *err)
{
    *lost = 0;
    if (!rkd_store_fleet_shared(s))
        return rk_error_set(err, RK_EINVAL, NULL, "this store is one server's: no fleet to share");
    return s->ops->fleet_write(s->b, recs, n, lost, err);
}

void rkd_store_fleet_unshare(rkd_store *s)
{
    if (rkd_store_fleet_shared(s))
        s->ops->fleet_unshare(s->b);
}
