# Samples the machine once a second until killed: python3 sample.py OUT.tsv [DISK] (DISK as named
# in /proc/diskstats, default vda). Columns of OUT.tsv: seconds since the start, CPU busy % of all
# cores, iowait %, MB read and MB written on DISK in that second, % of that second DISK was busy.
import sys, time
device = sys.argv[2] if len(sys.argv) > 2 else 'vda'
def disk():
    for line in open('/proc/diskstats'):
        f = line.split()
        if f[2] == device: return int(f[5]), int(f[9]), int(f[12])  # sectors read, sectors written, ms busy
    sys.exit(f'sample.py: no disk {device} in /proc/diskstats (name one as the second argument)')
def cpu():
    v = list(map(int, open('/proc/stat').readline().split()[1:]))
    return sum(v), v[3], v[4]  # all, idle, iowait (jiffies)
t0 = time.time(); d0 = disk(); c0 = cpu()
out = open(sys.argv[1], 'w')
while True:
    time.sleep(1)
    d = disk(); c = cpu(); dt = c[0] - c0[0]
    busy = 100 * (dt - (c[1] - c0[1]) - (c[2] - c0[2])) / dt; iowait = 100 * (c[2] - c0[2]) / dt
    out.write(f"{time.time() - t0:.0f}\t{busy:.0f}\t{iowait:.0f}\t{(d[0] - d0[0]) * 512 / 1e6:.0f}\t{(d[1] - d0[1]) * 512 / 1e6:.0f}\t{(d[2] - d0[2]) / 10:.0f}\n"); out.flush()
    d0 = d; c0 = c
