"""ringkeeper — consistent-hashing rings from ringkeeperd for Python, through libringkeeper.

    from ringkeeper import Client
    with Client("http://127.0.0.1:7070", "sessions", expect_hash="xxh3_64") as ring:
        node = ring.lookup("user:42")

There is one implementation of the ring: this package calls the C library for every lookup, so a
Python service routes each key exactly as the C clients, the CLI and the server do (docs/CLIENT.md).
"""
from ringkeeper._client import Client, Status
from ringkeeper._errors import (CacheError, InvalidArgument, InvalidTopology, NoRing,
                                RingkeeperError, RingRefused, Unreachable)
from ringkeeper._native import ffi as _ffi
from ringkeeper._native import lib as _lib
from ringkeeper._offline import Node, Plan, Ring, Topology, Transfer, plan

__version__: str = _ffi.string(_lib.rk_version()).decode()

__all__ = ["Client", "Status", "Topology", "Ring", "Plan", "Transfer", "Node", "plan",
           "RingkeeperError", "InvalidArgument", "InvalidTopology", "Unreachable", "RingRefused",
           "NoRing", "CacheError"]
