#!/usr/bin/env bash
# mypy cannot follow setuptools' package-dir mapping, so lay out the import tree it expects
# (build/typecheck/pybmq = runtime/ + generated/ + codegen/) as symlinks, then check that.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=build/typecheck/pybmq
rm -rf build/typecheck
mkdir -p "$tree"
for entry in runtime/*; do
  ln -s "../../../$entry" "$tree/$(basename "$entry")"
done
ln -s ../../../generated "$tree/generated"
ln -s ../../../codegen "$tree/codegen"
