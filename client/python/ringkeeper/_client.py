"""_client.py — the verifying ring client (docs/CLIENT.md) for Python: rk_client underneath, so
the checks, refusals, last-known-good file, long polls and the fleet report are the C library's."""
import threading
from array import array
from typing import Iterable, List, NamedTuple, Optional, Tuple

from ringkeeper._errors import NoRing, check, error_from
from ringkeeper._native import ffi, lib
from ringkeeper._offline import Key, key_bytes, replicas


class Status(NamedTuple):
    """rk_client_status: the version in service and what the client's fetches came to."""
    version: int
    from_cache: bool
    accepted: int
    refused: int
    errors: int
    discarded: int
    last_error: int
    last_message: str


def _text(value: Optional[str]):
    return ffi.new("char[]", value.encode()) if value is not None else ffi.NULL


class Client:
    """The active ring of `cluster` from the ringkeeperd at `server`, verified, and kept fresh by a
    background long poll (refresh=True; `wait` seconds each). The constructor fetches: it raises
    RingRefused, Unreachable ... when no ring can be put in service (from the server or the
    `cache` file). Thread-safe: lookups may run on any threads while the ring is refreshed.
    Use as a context manager, or call close()."""

    def __init__(self, server: str, cluster: str, *, expect_hash: Optional[str] = None,
                 expect_vnode_factor: int = 0, expect_scheme: Optional[str] = None,
                 cache: Optional[str] = None, client_id: Optional[str] = None,
                 token: Optional[str] = None, timeout: float = 10.0, refresh: bool = True,
                 wait: int = 25, reset_cache: bool = False) -> None:
        self._c = None
        self._view: Tuple[int, Tuple[str, ...]] = (0, ())
        self._mu = threading.Lock()
        keep = [_text(v) for v in (server, cluster, expect_hash, token, cache, expect_scheme, client_id)]
        cfg = ffi.new("rk_client_config *")
        (cfg.server, cfg.cluster, cfg.expect_hash, cfg.token, cfg.cache_file, cfg.expect_scheme,
         cfg.client_id) = keep
        cfg.expect_vnode_factor = expect_vnode_factor
        cfg.timeout_ms = int(timeout * 1000)
        cfg.reset_cache = int(reset_cache)
        err = ffi.new("rk_error *")
        c = lib.rk_client_new(cfg, err)
        if c == ffi.NULL:
            raise error_from(err.code, err)
        # freed with the last reference: a lookup running when close() is called holds one
        c = self._c = ffi.gc(c, lib.rk_client_free)
        try:
            check(lib.rk_client_fetch(c, err), err)
            if refresh:
                check(lib.rk_client_start_refresher(c, wait, 0, err), err)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stops the refresher and lets go of the client; calls after this raise NoRing. A lookup
        still running on another thread finishes safely: the library's client is freed with the
        last reference to it, at once when none runs."""
        with self._mu:
            c, self._c = self._c, None
        if c is not None:
            lib.rk_client_stop_refresher(c)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _client(self):
        c = self._c
        if c is None:
            raise NoRing(lib.RK_ENORING, "", "the client is closed")
        return c

    def _snapshot(self):
        s = lib.rk_client_acquire(self._client())
        if s == ffi.NULL:
            raise NoRing(lib.RK_ENORING, "", "no ring has been accepted yet")
        return ffi.gc(s, lib.rk_snapshot_release)

    def lookup(self, key: Key) -> str:
        """The id of the node that owns `key` (bytes, or str as UTF-8) in the ring in service."""
        k = key.encode() if type(key) is str else key
        serial, ids = self._view
        i = lib.rk_client_lookup_index(self._client(), serial, k, len(k))
        return ids[i] if i >= 0 else self._lookup_anew(k)

    def _lookup_anew(self, key: bytes) -> str:
        """A new snapshot is in service: keep its node ids, and look up in it."""
        s = self._snapshot()
        ring = lib.rk_snapshot_ring(s)
        ids = _ids(ring)
        self._view = (lib.rk_snapshot_serial(s), ids)
        return ids[lib.rk_ring_lookup(ring, key, len(key))]

    def lookup_many(self, keys: Iterable[Key]) -> List[str]:
        """lookup() of each key, in order, in one call into the library: the keys packed into one
        buffer, their owners out of one array, all from one snapshot."""
        ks = [k.encode() if type(k) is str else k for k in keys]
        lens, out = array("Q", map(len, ks)), array("I", bytes(4 * len(ks)))
        packed = b"".join(ks)
        for _ in range(3):  # a new snapshot between the two calls: look again
            serial, ids = self._view
            if lib.rk_client_lookup_many(self._client(), serial, packed, ffi.from_buffer("size_t[]", lens),
                                         len(ks), ffi.from_buffer("uint32_t[]", out)) == 0:
                return [ids[i] for i in out]
            self._lookup_anew(b"")
        return [self.lookup(k) for k in ks]

    def lookup_replicas(self, key: Key, r: int) -> List[str]:
        """Up to r distinct nodes clockwise from the key, owner first."""
        ring = lib.rk_snapshot_ring(self._snapshot())
        return replicas(ring, _ids(ring), key, r)

    def owners(self, key: Key) -> Tuple[str, Optional[str]]:
        """The key's owner now and under the previous ring while one is kept (a migration window:
        read there what has not moved yet), else None."""
        s, k = self._snapshot(), key_bytes(key)
        ring, prev = lib.rk_snapshot_ring(s), lib.rk_snapshot_previous(s)
        now = _ids(ring)[lib.rk_ring_lookup(ring, k, len(k))]
        return now, (_ids(prev)[lib.rk_ring_lookup(prev, k, len(k))] if prev != ffi.NULL else None)

    @property
    def version(self) -> int:
        """The version of the ring in service."""
        return lib.rk_snapshot_version(self._snapshot())

    @property
    def previous_version(self) -> int:
        """The version of the previous ring kept, 0 when there is none."""
        return lib.rk_snapshot_previous_version(self._snapshot())

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the ring in service (16 hex digits, docs/RING.md)."""
        return ffi.string(lib.rk_ring_fingerprint_hex(lib.rk_snapshot_ring(self._snapshot()))).decode()

    def refresh(self, wait: int = 0) -> bool:
        """Asks for a newer ring now (a long poll of up to `wait` seconds); True when one was
        accepted. Not while the background refresher runs (refresh=False)."""
        err, changed = ffi.new("rk_error *"), ffi.new("int *")
        check(lib.rk_client_refresh(self._client(), wait, changed, err), err)
        return bool(changed[0])

    def status(self) -> Status:
        st = ffi.new("rk_client_status *")
        lib.rk_client_status_get(self._client(), st)
        return Status(st.version, bool(st.from_cache), st.accepted, st.refused, st.errors,
                      st.discarded, st.last_error, ffi.string(st.last_message).decode())


def _ids(ring) -> Tuple[str, ...]:
    t = lib.rk_ring_topology(ring)
    return tuple(ffi.string(lib.rk_topology_node(t, i).id).decode()
                 for i in range(lib.rk_topology_node_count(t)))
