"""The compiled part of the package: ringkeeper._native, cffi's API mode over ringkeeper.h
(ringkeeper/_build.py says where the header and the library are found)."""
import importlib.util
import sys

from setuptools import setup


def _missing():
    """The build requirements this interpreter lacks. With --no-build-isolation (docs/CLIENT.md,
    "Installing") they come from the interpreter pip runs under; without cffi setuptools drops
    cffi_modules with a mere warning, and without wheel the build ends in "invalid command
    'bdist_wheel'": neither names the cause. setuptools 70.1 and later carry bdist_wheel."""
    have = importlib.util.find_spec
    wheel = have("wheel") or have("setuptools.command.bdist_wheel")
    return [name for name, found in (("cffi", have("cffi")), ("wheel", wheel)) if not found]


if _missing():
    sys.exit("ringkeeper: %s cannot import %s, which building this package needs: use Debian's "
             "/usr/bin/python3 (python3-cffi and python3-wheel are installed for it alone), or "
             "install them for this interpreter" % (sys.executable, " and ".join(_missing())))
setup(cffi_modules=["ringkeeper/_build.py:ffibuilder"])
