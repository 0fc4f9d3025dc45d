// Cache policy simulation for bench/results/PROFILE.md, Session 18: CLOCK vs S3-FIFO vs TinyLFU vs
// W-TinyLFU on a trace shaped as bench:serve's (static Zipf list, then cycled bulk lookups whose
// plans are valid only while all their hashes are kept, then update answers). Run: node bench/cache-sim.mjs
// Synthetic trace: static phase (Zipf over 42k URLs, ~3.2 KB bodies), then bulk-hashes loop
// (1000 requests x 100 Zipf-drawn hashes out of ~60k, plans of 15.6 KB admitted at 2nd ask),
// then bulk-update loop (1000 answers of ~12 KB). Compare CLOCK vs S3-FIFO hit rates.
const OVER = 1200
function rng(seed){ let s=seed>>>0; return ()=>{ s=(s+0x6D2B79F5)>>>0; let t=s; t=Math.imul(t^(t>>>15),t|1); t^=t+Math.imul(t^(t>>>7),t|61); return ((t^(t>>>14))>>>0)/4294967296 } }
function zipfSampler(n, s, r){ const c=new Float64Array(n); let acc=0; for(let i=0;i<n;i++){acc+=1/Math.pow(i+1,s); c[i]=acc} return ()=>{ const u=r()*acc; let lo=0,hi=n-1; while(lo<hi){const m=(lo+hi)>>1; if(c[m]<u) lo=m+1; else hi=m} return lo } }
function clock(max){ const m=new Map(); let bytes=0
  return { get(k){ const e=m.get(k); if(!e) return false; e.u=true; return true },
    put(k,sz){ if(m.has(k)) return; m.set(k,{sz,u:false}); bytes+=sz; for(const [kk,e] of m){ if(bytes<=max) break; m.delete(kk); if(e.u){e.u=false; m.set(kk,e)} else bytes-=e.sz } } } }
function tlfu(max){ const m=new Map(); let bytes=0; const f=new Map(); let adds=0
  const inc=(k)=>{ f.set(k,Math.min(15,(f.get(k)||0)+1)); if(++adds>=1310720){ adds=0; for(const [kk,v] of f){ if(v>>1) f.set(kk,v>>1); else f.delete(kk)} } }
  const est=(k)=>f.get(k)||0
  return { get(k){ const e=m.get(k); if(!e) return false; e.u=true; inc(k); return true },
    put(k,sz){ if(m.has(k)) return; inc(k)
      if(bytes+sz>max){ for(const [kk,e] of m){ if(e.u){ e.u=false; m.delete(kk); m.set(kk,e); continue } if(est(k)<=est(kk)) return; break } }
      m.set(k,{sz,u:false}); bytes+=sz; for(const [kk,e] of m){ if(bytes<=max) break; m.delete(kk); if(e.u){e.u=false; m.set(kk,e)} else bytes-=e.sz } } } }
function wtlfu(max, wfrac, sample){ const win=new Map(), main=new Map(); let wb=0, mb=0; const f=new Map(); let adds=0
  const inc=(k)=>{ f.set(k,Math.min(15,(f.get(k)||0)+1)); if(++adds>=sample){ adds=0; for(const [kk,v] of f){ if(v>>1) f.set(kk,v>>1); else f.delete(kk)} } }
  const est=(k)=>f.get(k)||0
  const wmax=max*wfrac
  function evictMain(){ for(const [kk,e] of main){ if(mb+wb<=max) break; main.delete(kk); if(e.u){e.u=false; main.set(kk,e)} else mb-=e.sz } }
  return { get(k){ const e=win.get(k)||main.get(k); if(!e) return false; e.u=true; inc(k); return true },
    put(k,sz){ if(win.has(k)||main.has(k)) return; inc(k); win.set(k,{sz,u:false}); wb+=sz
      while(wb>wmax){ const [ck,ce]=win.entries().next().value; win.delete(ck); wb-=ce.sz
        if(mb+wb+ce.sz<=max){ main.set(ck,ce); mb+=ce.sz; continue }
        // find victim
        let admit=false
        for(const [kk,e] of main){ if(e.u){ e.u=false; main.delete(kk); main.set(kk,e); continue } admit = est(ck)>est(kk); break }
        if(admit){ ce.u=false; main.set(ck,ce); mb+=ce.sz; evictMain() }
      }
      evictMain() } } }
function s3(max, ghostKeys){ const m=new Map(); let bytes=0, sb=0; const S=[],M=[]; let sh=0, mh=0
  let gNew=new Set(), gOld=new Set()
  const smallMax = max*0.1
  function evict(){ while(bytes>max){ if(sb>smallMax || mh>=M.length){ const e=S[sh++]; if(e.dead) continue; if(e.f>0){ e.f=0; sb-=e.sz; M.push(e) } else { m.delete(e.k); bytes-=e.sz; sb-=e.sz; e.dead=true; gNew.add(e.k); if(gNew.size>=ghostKeys){gOld=gNew; gNew=new Set()} } }
      else { const e=M[mh++]; if(e.dead) continue; if(e.f>0){ e.f--; M.push(e) } else { m.delete(e.k); bytes-=e.sz; e.dead=true } } }
    if(sh>100000){S.splice(0,sh); sh=0} if(mh>100000){M.splice(0,mh); mh=0} }
  return { get(k){ const e=m.get(k); if(!e) return false; if(e.f<3) e.f++; return true },
    put(k,sz){ if(m.has(k)) return; const e={k,sz,f:0,dead:false}; m.set(k,e); bytes+=sz; if(gNew.has(k)||gOld.has(k)){ M.push(e) } else { S.push(e); sb+=sz } evict() } } }
function run(cache, label, hashPool, hashSkew){
  const r=rng(42); const statZ=zipfSampler(42000,1,r)
  const statList=[]; for(let i=0;i<100000;i++) statList.push(statZ())
  for(let pass=0;pass<3;pass++) for(const k of statList){ if(!cache.get('s'+k)) cache.put('s'+k, 3200+OVER) }
  // bulk-hashes list
  const hz=zipfSampler(hashPool,hashSkew,r); const reqs=[]; const distinct=new Set()
  for(let i=0;i<1000;i++){ const hs=new Set(); while(hs.size<100) hs.add(hz()); reqs.push([...hs]); hs.forEach(h=>distinct.add(h)) }
  const seen=new Set()
  let hh=0,ht=0,ph=0,pt=0
  const bulk=(measure)=>{ for(let i=0;i<reqs.length;i++){ const pk='p'+i; pt+=measure; if(cache.get(pk)){ let all=true; for(const h of reqs[i]) if(!cache.get('h'+h)) all=false; if(all){ph+=measure; continue} } for(const h of reqs[i]){ ht+=measure; if(cache.get('h'+h)) hh+=measure; else cache.put('h'+h,1037+OVER) } if(seen.has(pk)) { if(!cache.get(pk)) cache.put(pk,15600+OVER) } else seen.add(pk) } }
  // update list
  const upd=(n)=>{ for(let i=0;i<1000;i++){ const uk='u'+i; if(!cache.get(uk)) { if(seen.has(uk)) cache.put(uk, 12000+OVER); else seen.add(uk) } } }
  for(let rep=0;rep<3;rep++){ bulk(0); bulk(0); hh=ht=ph=pt=0; for(let k=0;k<5;k++) bulk(1); const res=[`${label} rep${rep}: distinct ${distinct.size} plan hits ${(ph/pt*100).toFixed(1)}% hash hits ${(ht?hh/ht*100:100).toFixed(1)}% sql/req ${((ht-hh)/1000/5).toFixed(1)}`]; upd(); upd(); console.log(res[0]) }
}
const max=134217728
for (const [pool,skew] of [[300000,0.85],[300000,0.8],[300000,0.6]]) {
  console.log('pool',pool,'skew',skew)
  run(clock(max),'clock',pool,skew)
  run(s3(max, 65536),'s3fifo',pool,skew)
  run(tlfu(max),'tinylfu',pool,skew)

  run(wtlfu(max,0.01,131072),'wtlfu1% s131k',pool,skew)
  run(wtlfu(max,0.01,262144),'wtlfu1% s262k',pool,skew)

}
