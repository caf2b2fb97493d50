"""The compiled part of the package: ringkeeper._native, cffi's API mode over ringkeeper.h
(ringkeeper/_build.py says where the header and the library are found)."""
from setuptools import setup

setup(cffi_modules=["ringkeeper/_build.py:ffibuilder"])
