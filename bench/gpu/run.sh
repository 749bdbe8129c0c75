#!/bin/bash
# GPU checks for the data agent on the device machine: JUnit GPU tests + the gpu bench, with a carried JRE.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi -L 2>&1; uname -r; nproc
J=$(command -v java); echo "system java: ${J:-none}"
mkdir -p /tmp/k && tar xJf .gpu/jre.tar.xz -C /tmp/k && J=/tmp/k/jre/bin/java
$J -version 2>&1 | head -1
CP="$(ls .gpu/lib/*.jar | tr '\n' :).gpu/agent-test-classes"
JOPT="--enable-native-access=ALL-UNNAMED -Xmx8g -Djava.io.tmpdir=/tmp"
$J $JOPT -cp "$CP" org.junit.platform.console.ConsoleLauncher execute --disable-banner --disable-ansi-colors --details=tree \
  --select-class dev.kvpool.agent.tier.GpuDeviceTest ${EXTRA_TESTS} 2>&1 | tee $OUT/gpu-tests.txt
echo "junit exit: $?"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  $J $JOPT -cp "$CP" dev.kvpool.bench.Main gpu ${BENCH_ARGS} 2>&1 | tee $OUT/gpu-bench.txt
  echo "bench exit: $?"
fi
