#!/usr/bin/env bash
# Check the layer contract (.importlinter) with import-linter.
#
# import-linter (grimp) finds a package's modules by walking the folder of its top package, but
# tcgen's folders are mapped into the namespace by pyproject.toml (tcgen.hw = hw/, ...), so the
# walk of tcgen/ alone would miss them.  This builds the installed layout as a tree of symbolic
# links under build/import-view/ -- read from pyproject.toml's package-dir, the one source of
# truth -- and runs lint-imports there.
set -euo pipefail
cd "$(dirname "$0")/.."
view=build/import-view
rm -rf "$view"
mkdir -p "$view"
.venv/bin/python - "$view" <<'PY'
import os, sys, tomllib
view = sys.argv[1]
cfg = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]
dirs = cfg["package-dir"]
for pkg in sorted(dirs, key=lambda p: p.count(".")):
    target = os.path.join(view, *pkg.split("."))
    src = os.path.abspath(dirs[pkg])
    if pkg == "tcgen":                  # the app layer: its own files; subpackages linked below
        os.makedirs(target)
        for name in os.listdir(src):    # its modules, and its subpackages in its own folder
            if name.endswith(".py") or (f"tcgen.{name}" in cfg["packages"]
                                        and f"tcgen.{name}" not in dirs):
                os.symlink(os.path.join(src, name), os.path.join(target, name))
    else:
        os.symlink(src, target)
PY
cd "$view"
exec ../../.venv/bin/lint-imports --config ../../.importlinter --no-cache
