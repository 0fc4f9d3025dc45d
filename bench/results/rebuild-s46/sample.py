# samples disk (vda) and CPU once a second: t, cpu busy %, iowait %, read MB/s, write MB/s, disk util %
# Columns of samples.tsv: seconds since the start, CPU busy % of both cores, iowait %, MB read and MB written on vda in that second, % of that second the disk was busy (io_ticks).
import time, sys
def disk():
    for l in open('/proc/diskstats'):
        f=l.split()
        if f[2]=='vda': return int(f[5]), int(f[9]), int(f[12])
def cpu():
    f=open('/proc/stat').readline().split()[1:]
    v=list(map(int,f)); return sum(v), v[3], v[4]
t0=time.time(); d0=disk(); c0=cpu()
out=open(sys.argv[1],'w')
while True:
    time.sleep(1)
    d=disk(); c=cpu(); dt=c[0]-c0[0]
    busy=100*(dt-(c[1]-c0[1])-(c[2]-c0[2]))/dt; iow=100*(c[2]-c0[2])/dt
    out.write(f"{time.time()-t0:.0f}\t{busy:.0f}\t{iow:.0f}\t{(d[0]-d0[0])*512/1e6:.0f}\t{(d[1]-d0[1])*512/1e6:.0f}\t{(d[2]-d0[2])/10:.0f}\n"); out.flush()
    d0=d; c0=c
