#!/usr/bin/env bash
# Exports the committed HEAD (not the working tree) into .visit/ with the
# dependencies from .deps/, for scripts/h200_visit.sh on the device machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .deps ] || scripts/stage_deps.sh
rm -rf .visit && mkdir .visit
git archive HEAD | tar -x -C .visit
cp -r .deps .visit/.deps
git rev-parse HEAD > .visit/COMMIT
echo "staged $(cat .visit/COMMIT) into .visit"
