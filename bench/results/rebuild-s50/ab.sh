#!/bin/bash
# Rebuilds by two checkouts of the build code in pairs (A A B B A A B B): a rebuild reuses the live
# release's versions only when the build code is the one that built it (build/catalog-memo.ts, a
# hash of build/'s files), so the first of each pair renders every version and the second is the
# rebuild the bench measures. Usage, from the project's root:
#   bash bench/results/rebuild-s50/ab.sh A_CHECKOUT B_CHECKOUT OUT_DIR
# (each checkout with node_modules; DATA_DIR and DIST_DIR as rebuild.sh). Writes OUT_DIR/<run>/ and
# OUT_DIR/summary.txt: per run, the catalog phase's end and the static tree's (wall and the build
# process's CPU, s into the build), the manifest's end in the seal (and the build process's CPU in
# the seal by then), the snapshot's and the archive's end in the seal, when the release was live, and the user and
# system CPU of the build and its workers (/usr/bin/time).
set -e
a=${1:?}; b=${2:?}; out=$(realpath -m "${3:?usage: ab.sh A_CHECKOUT B_CHECKOUT OUT_DIR}"); mkdir -p "$out"
for run in ac1:$a aw1:$a bc1:$b bw1:$b ac2:$a aw2:$a bc2:$b bw2:$b; do
  name=${run%%:*}; CODE=${run#*:} bash bench/results/rebuild-s49/rebuild.sh "$out/$name" > "$out/$name.out" 2>&1
  f=$out/$name/build.log
  echo "$name catalog $(grep -o 'Wrote the catalog database in [0-9.]*s (CPU [0-9.]*s)' "$f" | grep -o '[0-9.]*' | tr '\n' ' ')" \
    "tree $(grep -o 'Wrote the static tree ([0-9]* files, [0-9]* bodies) in [0-9.]*s (CPU [0-9.]*s)' "$f" | grep -o 'in [0-9.]*s (CPU [0-9.]*' | grep -o '[0-9.]*' | tr '\n' ' ')" \
    "manifest $(grep -o 'Wrote the manifest and change file after [0-9.]*s of sealing (CPU [0-9.]*s)' "$f" | grep -o '[0-9.]*' | tr '\n' ' ')" \
    "snapshot $(grep -o 'Wrote the snapshot ([0-9.]* MB) after [0-9.]*s' "$f" | grep -o 'after [0-9.]*' | grep -o '[0-9.]*') archive $(grep -o 'Wrote the archive ([0-9.]* MB) after [0-9.]*s' "$f" | grep -o 'after [0-9.]*' | grep -o '[0-9.]*')" \
    "live $(grep -o 'live after [0-9.]*' "$f" | grep -o '[0-9.]*') user $(grep -o 'User time (seconds): [0-9.]*' "$f" | grep -o '[0-9.]*$') sys $(grep -o 'System time (seconds): [0-9.]*' "$f" | grep -o '[0-9.]*$')" \
    "$(grep -o "reused [0-9]* versions' JSON" "$f" || echo 'no JSON reused')" >> "$out/summary.txt"
done
