import sys, collections
rows=[l.rstrip('\n').split('\t') for l in open(sys.argv[1])][1:]
by=collections.defaultdict(list)
for t,who,rb,wb,ut,st,d,w in rows: by[who].append((int(t),int(rb),int(wb),int(ut),int(st),int(d),int(w)))
for who,s in by.items():
    if len(s)<2: continue
    t0,t1=s[0][0],s[-1][0]
    print(f"{who}: {t1-t0}s alive, read {(s[-1][1]-s[0][1])/1e9:.2f} GB, wrote {(s[-1][2]-s[0][2])/1e9:.2f} GB, cpu {(s[-1][3]+s[-1][4]-s[0][3]-s[0][4])/100:.1f}s")
    # 10 s buckets
    out=[]
    for i in range(0,len(s)-5,5):
        a,b=s[i],s[i+5]; dt=b[0]-a[0] or 1
        out.append(f"{a[0]-t0:>4}s r{(b[1]-a[1])/dt/1e6:5.0f} w{(b[2]-a[2])/dt/1e6:5.0f} MB/s cpu{((b[3]+b[4])-(a[3]+a[4]))/dt:4.0f}% dirty{a[5]/1e6:4.1f}G wb{a[6]/1e3:5.0f}M")
    print("\n".join(out))
