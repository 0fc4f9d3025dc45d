#!/bin/bash
# usage: one.sh CODE_DIR OUT_DIR
set -e
code=${1:?}; out=${2:?}; mkdir -p "$out"
data=/work/main/bench/.work/catalog-100000-bench; dist=/work/main/bench/.work/build-dist-100000
cd /work/main && DATA_DIR=$data OUT=$out/changed.txt npx vite-node bench/results/rebuild-s46/mutate.ts > /dev/null
cd "$code"
python3 /work/main/bench/results/rebuild-s46/sample.py "$out/samples.tsv" vda & sampler=$!
KEEP_RELEASES=2 BUILD_CHANGED_FILES=$out/changed.txt DATA_DIR=$data DIST_DIR=$dist /usr/bin/time -v npm run --silent build 2>&1 | python3 -u -c '
import sys,time
t0=time.time()
for l in sys.stdin: sys.stdout.write("%7.1f %s" % (time.time()-t0, l))
' > "$out/build.log"
kill $sampler
live=$(grep -o "live after [0-9.]*s" "$out/build.log"); u=$(grep "User time" "$out/build.log" | awk '{print $NF}'); s=$(grep "System time" "$out/build.log" | awk '{print $NF}'); fin=$(grep "File system inputs" "$out/build.log" | awk '{print $NF}')
reuse=$(grep -o "reused [0-9]* versions' JSON" "$out/build.log" || echo "no reuse"); chk=$(grep -o "checked by the SHA-256 [a-z ]*" "$out/build.log")
echo "$(basename $out) $live user $u sys $s inputs $fin | $reuse | $chk"
