"""Shared fixtures of the tierjit Python tests: paths of the repository's models and test data.

The tests run with the venv's python and PYTHONPATH=<build>/python (CTest python_tests, or
scripts/python-dev.sh then `$venv/bin/python -m pytest python/tests`).
"""
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TIERJIT_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def demo_model():
    return str(SOURCE_DIR / "models" / "demo_mlp.onnx")


@pytest.fixture(scope="session")
def demo_ref():
    return SOURCE_DIR / "models" / "demo_ref"


@pytest.fixture(scope="session")
def data_dir():
    return DATA_DIR
