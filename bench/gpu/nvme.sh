#!/bin/bash
# The agent's NVMe tier vs fio on the device machine's disk, with a carried JRE and fio (the machine has neither):
# pack with bench/gpu/pack.sh plus FIO_BUNDLE=1, then device run with carry [".gpu"] and `bash .gpu/nvme.sh`.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nproc; lsblk -o NAME,SIZE,ROTA,MODEL,TYPE 2>&1 | head -12; df -h . /tmp 2>&1
mkdir -p /tmp/k && tar xJf .gpu/jre.tar.xz -C /tmp/k && J=/tmp/k/jre/bin/java
tar xJf .gpu/fio.tar.xz -C /tmp/k && FIO=/tmp/k/fio/fio
$FIO --version
CP="$(ls .gpu/lib/*.jar | tr '\n' :)"
DIR=${BENCH_DIR:-$PWD/.agent-bench}
$J --enable-native-access=ALL-UNNAMED -Xmx8g -cp "$CP" dev.kvpool.bench.agent.AgentBench disk --fio $FIO --dir $DIR \
  ${BENCH_ARGS:---pairs 4 --seconds 5} 2>&1 | tee $OUT/nvme-bench.txt
echo "bench exit: $?"
rm -rf "$DIR"
