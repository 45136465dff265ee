#!/usr/bin/env bash
# Exports the committed HEAD (not the working tree) into .visit/ with the
# dependencies from .deps/, for scripts/h200_visit.sh on the device machine.
# .visit/COMMIT names the commit: the export has no history of its own, and the
# build (cmake/build_commit.cmake) stamps the binary with this id, never with
# the commit of a checkout around the export.
set -euo pipefail
cd "$(dirname "$0")/.."
# .deps may hold only the staged toolchain (scripts/stage_toolchain.sh), which stays behind: the headers the
# H200 machine lacks are what must be there.
{ [ -f .deps/include/CLI/CLI.hpp ] && [ -d .deps/googletest ]; } || scripts/stage_deps.sh
rm -rf .visit && mkdir .visit
# results/ stays behind (13 MB and growing; nothing there reads it), so that the export, the
# staged binary and the checkout fit the 64 MiB a call carries.
git archive HEAD -- . ':(exclude)results' | tar -x -C .visit
# The staged ptxas/NVRTC wheels (.deps/toolchain) stay behind: the H200 machine has its own toolkit.
mkdir -p .visit/.deps && for d in .deps/*; do [ "$(basename "$d")" = toolchain ] || cp -r "$d" .visit/.deps/; done
# Each exported file takes its working-tree twin's time where the two are the
# same bytes (git archive stamps every file with the commit's time), so that
# a build kept on a warm H200 machine recompiles only what changed.
git ls-files -z | while IFS= read -r -d '' f; do
  [ -f ".visit/$f" ] && [ -f "$f" ] && cmp -s "$f" ".visit/$f" && touch -r "$f" ".visit/$f"
done
git rev-parse HEAD > .visit/COMMIT
echo "staged $(cat .visit/COMMIT) into .visit"
