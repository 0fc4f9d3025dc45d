#!/bin/bash
# One rebuild of the large dist after the bench's 1% edit (bench/results/rebuild-s46/mutate.ts, seed
# "bench"), by the build code in CODE (a checkout with node_modules; default: this one), over the
# older kept release's tree (KEEP_RELEASES=2), optionally under `node --cpu-prof` (PROF=1).
# Usage, from the project's root: bash bench/results/rebuild-s49/rebuild.sh OUT_DIR
# (DATA_DIR /work/large/catalog and DIST_DIR /work/large/d unless set; EXTRA_CHANGED: a list of
# record files changed before, added to this edit's, for a data folder an interrupted run edited).
# Writes OUT_DIR/changed.txt, build.log (the build's lines, then /usr/bin/time -v's) and with
# PROF=1 OUT_DIR/cpu/*.cpuprofile (the build's process and its threads).
set -e
root=$(pwd)
out=$(realpath -m "${1:?usage: rebuild.sh OUT_DIR}"); mkdir -p "$out"
data=${DATA_DIR:-/work/large/catalog}; dist=${DIST_DIR:-/work/large/d}
DATA_DIR=$data OUT=$out/changed-new.txt npx vite-node bench/results/rebuild-s46/mutate.ts
sort -u "$out/changed-new.txt" ${EXTRA_CHANGED:-/dev/null} | grep -v '^$' > "$out/changed.txt"
cd "${CODE:-$root}"
KEEP_RELEASES=2 BUILD_CHANGED_FILES=$out/changed.txt DATA_DIR=$data DIST_DIR=$dist /usr/bin/time -v \
  node ${PROF:+--cpu-prof --cpu-prof-dir=$out/cpu} node_modules/vite-node/dist/cli.mjs build/cli.ts > "$out/build.log" 2>&1 || status=$?
tail -3 "$out/build.log"
exit ${status:-0}
