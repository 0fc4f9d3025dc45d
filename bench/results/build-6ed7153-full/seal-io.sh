#!/bin/bash
# Every 2 s during the seal: per worker (snapshot, archive, build main) read/write bytes and CPU ticks, and the kernel's Dirty / Writeback (kB).
out=$1
echo -e "t\twho\tread_bytes\twrite_bytes\tutime\tstime\tdirty_kb\twriteback_kb" > $out
while true; do
  dirty=$(awk '/^Dirty:/{print $2}' /proc/meminfo); wb=$(awk '/^Writeback:/{print $2}' /proc/meminfo)
  for who in snapshot-worker archive-worker "build/cli.ts"; do
    pid=$(pgrep -f "$who" | head -1)
    if [ -n "$pid" ] && [ -r /proc/$pid/io ]; then
      rb=$(awk '/^read_bytes/{print $2}' /proc/$pid/io); wbytes=$(awk '/^write_bytes/{print $2}' /proc/$pid/io)
      read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
      echo -e "$(date +%s)\t$who\t$rb\t$wbytes\t$ut\t$st\t$dirty\t$wb" >> $out
    fi
  done
  sleep 2
done
