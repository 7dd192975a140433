"""What the wheel holds, found rather than listed: a folder added under tui/ ships by itself, with every file in it.

The project's metadata is in pyproject.toml; this file only computes the packages and their files. themes/ and
sample_sessions/ stay at the top of the repository and ship inside the package as tui.themes and tui.sample_sessions.
tests/test_installed_wheel.py checks the built wheel against the source tree, file by file.
"""

from setuptools import find_namespace_packages, setup

FOLDERS_AT_THE_TOP = {"tui.themes": "themes", "tui.sample_sessions": "sample_sessions"}

setup(
    # namespace packages too: a folder of data files (encodings, templates) needs no __init__.py to be found
    packages=find_namespace_packages(include=["tui", "tui.*"], exclude=["*.__pycache__"]) + list(FOLDERS_AT_THE_TOP),
    package_dir=FOLDERS_AT_THE_TOP,
    package_data={"": ["*"]},  # every file of every package, whatever its kind
    exclude_package_data={"": ["*.pyc", "*.pyo"]},
)
