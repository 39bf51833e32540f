# scrapyd-deploy runs `setup.py bdist_egg`; everything else lives in pyproject.toml.
from setuptools import setup

setup()
