"""_errors.py — the library's failures as exceptions, each with its code and the field to blame."""
from typing import Dict, Type

from ringkeeper._native import ffi, lib


class RingkeeperError(Exception):
    """A failure of libringkeeper: `code` is the library's (RK_E..., negative), `name` its name
    ("EEXPECT"), `field` the JSON path to blame or "" when none is, `message` the sentence."""

    def __init__(self, code: int, field: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.name = ffi.string(lib.rk_errname(code)).decode()
        self.field = field
        self.message = message


class InvalidArgument(RingkeeperError):
    """An argument the library refuses (RK_EINVAL): a server URL, a cluster name, a client id."""


class InvalidTopology(RingkeeperError):
    """A topology document that breaks a rule (RK_EJSON, RK_ETOPOLOGY, RK_ETOOBIG)."""


class Unreachable(RingkeeperError):
    """The server could not be reached, or answered with an unexpected status (RK_EUNREACHABLE,
    RK_EHTTP, RK_EIO)."""


class RingRefused(RingkeeperError):
    """A ring refused by the client's checks: too large, not a version document, another cluster,
    not the expected scheme, hash or vnode_factor, an unknown hash, a wrong fingerprint, older than
    one accepted (RK_ETOOLARGE ... RK_EOLDVERSION, RK_EHASHMISMATCH)."""


class NoRing(RingkeeperError):
    """No ring has been accepted yet (RK_ENORING)."""


class CacheError(RingkeeperError):
    """The last-known-good file is unreadable, corrupt, or could not be saved (RK_ECACHE)."""


_BY_CODE: Dict[int, Type[RingkeeperError]] = {
    lib.RK_EINVAL: InvalidArgument,
    lib.RK_EJSON: InvalidTopology,
    lib.RK_ETOPOLOGY: InvalidTopology,
    lib.RK_ETOOBIG: InvalidTopology,
    lib.RK_EIO: Unreachable,
    lib.RK_EUNREACHABLE: Unreachable,
    lib.RK_EHTTP: Unreachable,
    lib.RK_EHASHMISMATCH: RingRefused,
    lib.RK_ETOOLARGE: RingRefused,
    lib.RK_EDOCUMENT: RingRefused,
    lib.RK_ECLUSTER: RingRefused,
    lib.RK_EEXPECT: RingRefused,
    lib.RK_EUNKNOWNHASH: RingRefused,
    lib.RK_EFINGERPRINT: RingRefused,
    lib.RK_EOLDVERSION: RingRefused,
    lib.RK_ENORING: NoRing,
    lib.RK_ECACHE: CacheError,
}


def error_from(code: int, err) -> RingkeeperError:
    """The exception for `code` with the details of the rk_error `err` (a cdata pointer)."""
    field = ffi.string(err.field).decode() if err != ffi.NULL else ""
    message = ffi.string(err.message).decode() if err != ffi.NULL else ""
    if not message:
        message = ffi.string(lib.rk_errname(code)).decode()
    return _BY_CODE.get(code, RingkeeperError)(code, field, message)


def check(code: int, err) -> None:
    """Raises the exception for `code` unless it is RK_OK."""
    if code != lib.RK_OK:
        raise error_from(code, err)
