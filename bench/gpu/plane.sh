#!/bin/bash
# The metadata-plane benchmarks (issue 3's Redis-store targets: replay getCacheLocation vs MGET, writes vs
# pipelined HSET, prefix match vs MGET) on the 16-core device machine, which has no JDK, no Redis and no network.
# Pack with `PLANE_BUNDLE=1 bench/gpu/pack.sh`, then device run with carry [".gpu"] and `bash .gpu/plane.sh`.
# STEPS picks what runs (default below); each step's output goes to $OUT/plane-<store>.txt.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
G=$PWD/.gpu
{ nproc; lscpu | grep -E 'Model name|Thread|Socket|NUMA node\(s\)'; cat /sys/devices/system/cpu/cpuidle/current_driver 2>&1
  uname -r; free -g | head -2; } 2>&1 | tee $OUT/machine.txt
mkdir -p /tmp/k && tar xJf $G/jre.tar.xz -C /tmp/k && J=/tmp/k/jre/bin/java
tar xJf $G/redis.tar.xz -C /tmp/k && R=/tmp/k/redis
tar xJf $G/plane.tar.xz -C /tmp/k && K=/tmp/k
RCLI() { "$R/ld-linux-x86-64.so.2" --library-path "$R" "$R/redis-cli" "$@"; }
OWN_REDIS=0
RCLI ping 2>/dev/null | grep -q PONG || { OWN_REDIS=1
"$R/ld-linux-x86-64.so.2" --library-path "$R" "$R/redis-server" --port 6379 --bind 127.0.0.1 --save "" --appendonly no \
  --daemonize yes --logfile /tmp/redis.log --dir /tmp || { echo "redis did not start"; exit 1; }; }
for i in $(seq 50); do RCLI ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
RCLI info server | grep -E 'redis_version|process_id'
export KVPOOL_SHARED=$K/shared
CP="$(ls $K/bench/*.jar $K/plane/app/*.jar $K/plane/lib/main/*.jar | tr '\n' :)"
bench() { $J -Xmx2g -cp "$CP" dev.kvpool.bench.Main "$@"; }
PLANE_PID=
PLANE=$K/plane
plane_up() { # $1 = store; the plane in $PLANE
  rm -rf /tmp/bp && mkdir -p /tmp/bp
  $J -Xmx8g $PLANE_OPTS -Dkvpool.meta.store=$1 -Dkvpool.meta.redis.prefix=kvp-bench -Dkvpool.data-dir=/tmp/bp/data \
    -jar $PLANE/quarkus-run.jar > /tmp/bp/plane.log 2>&1 &
  PLANE_PID=$!
  for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/6382) 2>/dev/null && break; sleep 0.1; done
  sleep 1; echo "plane ($1) up after ~$((i / 10)) s"
}
plane_down() { kill $PLANE_PID; wait $PLANE_PID 2>/dev/null; tail -5 /tmp/bp/plane.log; }
run_store() { # $1 = store, rest = steps: each on an empty Redis and a fresh plane, so no step fills another's quota
  local store=$1; shift
  for step in "$@"; do
    RCLI flushall > /dev/null
    plane_up $store
    echo "=== $store: bench ${step//_/ } ($(date +%T))"
    bench ${step//_/ } || echo "step failed: $?"
    plane_down
  done
}
STEPS=${STEPS-"replay prefix_--keys_24_--rounds_8_--iters_2000 prefix_--keys_1024_--rounds_8_--iters_300 writes_--batch_512_--batches_50_--rounds_8 writes_--batch_64_--rounds_6 writes_--threads_16_--batch_512_--batches_25_--rounds_6"}
[ -n "$STEPS" ] && run_store redis $STEPS 2>&1 | tee $OUT/plane-redis.txt
# AB_STEPS="<step> …": each step on the plane with the jars of $K/old (an earlier build's changed jars, same names,
# packed with OLD_JARS) and on the plane as packed, alternated AB_PAIRS times: a change's effect on 16 cores, with
# the machine's drift spread over both. RECLAIM_AB=<args> adds the step reclaim_<args> (pairs: RECLAIM_PAIRS).
[ -n "${RECLAIM_AB:-}" ] && AB_STEPS="${AB_STEPS:-} reclaim_${RECLAIM_AB}" && AB_PAIRS=${AB_PAIRS:-${RECLAIM_PAIRS:-1}}
if [ -n "${AB_STEPS:-}" ] && [ -d $K/old ]; then
  cp -r $K/plane $K/plane-old && for f in $K/old/*.jar; do
    find $K/plane-old -name "$(basename $f)" -exec cp $f {} \; ; done
  for r in $(seq ${AB_PAIRS:-1}); do
    for v in plane-old plane; do
      PLANE=$K/$v; echo "##### $v"; run_store redis $AB_STEPS
    done
  done 2>&1 | tee $OUT/plane-ab.txt
  PLANE=$K/plane
fi
# RECLAIM_DUTIES="1.0 0.5 …": the reclaim bench on the packed plane at each kvpool.meta.reclaim.duty-cycle
if [ -n "${RECLAIM_DUTIES:-}" ]; then
  for r in $(seq ${RECLAIM_PAIRS:-1}); do
    for d in $RECLAIM_DUTIES; do
      echo "##### duty-cycle $d"; PLANE_OPTS="-Dkvpool.meta.reclaim.duty-cycle=$d" run_store redis reclaim_${RECLAIM_ARGS:---blocks_1000000_--fill-seconds_60}
    done
  done 2>&1 | tee $OUT/plane-duty.txt
fi
[ -n "${EMBEDDED_STEPS-replay}" ] && run_store embedded ${EMBEDDED_STEPS-replay} 2>&1 | tee $OUT/plane-embedded.txt
cp /tmp/redis.log $OUT/redis.log 2>/dev/null
RCLI info commandstats > $OUT/redis-commandstats.txt 2>&1
[ $OWN_REDIS = 1 ] && RCLI shutdown nosave 2>/dev/null
grep -hE '^ratio|^=== |^##### |^  evicted .* blocks in|^write throughput|^RESULT|^reclaim|^another client' $OUT/plane-*.txt | head -80
