"""What the wheel holds, found rather than listed: a folder added under tui/ ships by itself, with every file in it.

The project's metadata is in pyproject.toml; this file only computes the packages and their files. themes/ and
sample_sessions/ stay at the top of the repository and ship inside the package as tui.themes and tui.sample_sessions.
tests/test_installed_wheel.py checks the built wheel against the source tree, file by file.
"""

import shutil

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

FOLDERS_AT_THE_TOP = {"tui.themes": "themes", "tui.sample_sessions": "sample_sessions"}
# every file of every package, whatever its kind, in its subfolders too (a folder whose name is no package name,
# such as qwen2.5/, is its parent package's data) and dotfiles too; never bytecode
EVERY_FILE = ["*", ".*", "**/*", "**/.*"]
BYTECODE = ["*.pyc", "*.pyo", "**/*.pyc", "**/*.pyo", "**/__pycache__/*"]


class FreshBuild(build_py):
    """Build from an empty build/: a file deleted from the tree must not ship because an earlier build left it."""

    def run(self) -> None:
        shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()


setup(
    # namespace packages too: a folder of data files (encodings, templates) needs no __init__.py to be found
    packages=find_namespace_packages(include=["tui", "tui.*"], exclude=["*.__pycache__"]) + list(FOLDERS_AT_THE_TOP),
    package_dir=FOLDERS_AT_THE_TOP,
    package_data={"": EVERY_FILE},
    exclude_package_data={"": BYTECODE},
    cmdclass={"build_py": FreshBuild},
)
