#!/bin/bash
# One rebuild of the large dist after a 1% edit (bench/build.ts's edit, seed "bench"), with the
# machine's CPU and disk sampled every second (sample.py). With KEEP_RELEASES=2 and two releases
# kept, it is written over the older one's tree (BUILD_RECYCLE), as the bench's third build is.
# Usage, from the project's root: bash bench/results/rebuild-s46/recycled.sh OUT_DIR
# (DATA_DIR /work/large/catalog, DIST_DIR /work/large/d and DISK, the disk sampled, vda unless set). Writes OUT_DIR/changed.txt,
# samples.tsv and build.log (the build's progress lines, then /usr/bin/time -v's figures).
set -e
out=${1:?usage: recycled.sh OUT_DIR}; mkdir -p "$out"
data=${DATA_DIR:-/work/large/catalog}; dist=${DIST_DIR:-/work/large/d}
DATA_DIR=$data OUT=$out/changed.txt npx vite-node bench/results/rebuild-s46/mutate.ts
python3 bench/results/rebuild-s46/sample.py "$out/samples.tsv" "${DISK:-vda}" & sampler=$!
KEEP_RELEASES=2 BUILD_CHANGED_FILES=$out/changed.txt DATA_DIR=$data DIST_DIR=$dist /usr/bin/time -v npm run --silent build > "$out/build.log" 2>&1 || status=$?
kill $sampler
tail -25 "$out/build.log"
exit ${status:-0}
