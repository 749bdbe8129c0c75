#!/bin/bash
# GPU checks for the data agent on the device machine: JUnit GPU tests (GPU tier, GDS) + the gpu and gds benches,
# with a carried JRE and libcufile. Switches: SKIP_BENCH=1 (no bench), SKIP_GPU_BENCH=1, SKIP_GDS_BENCH=1,
# SKIP_GDS_TEST=1, EXTRA_TESTS, BENCH_ARGS (bench gpu), GDS_BENCH_ARGS (bench gds), GDS_BENCH_TIMEOUT (s, 300),
# GDS_DIR (slot files of the GDS test and bench; on the machine's disk, not a tmpfs).
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi -L 2>&1; uname -r; nproc
J=$(command -v java); echo "system java: ${J:-none}"
mkdir -p /tmp/k && tar xJf .gpu/jre.tar.xz -C /tmp/k && J=/tmp/k/jre/bin/java
$J -version 2>&1 | head -1
CP="$(ls .gpu/lib/*.jar | tr '\n' :).gpu/agent-test-classes"
GDS_DIR=${GDS_DIR:-/var/tmp/kvpool-gds}; mkdir -p "$GDS_DIR"
# --- test harness only, not something the agent does or needs on a real node --------------------------------------
# cuFile asks udev for the filesystem of the disk holding a file (ID_FS_USAGE, ...) before it registers the file;
# this VM runs no udev, so cuFileHandleRegister fails with CU_FILE_HANDLE_NOT_REGISTERED (seen in the probe of
# 2026-11-27). A minimal udev record for the disk (and its parent, for a partition) is written where none exists.
# cufile.json: compat mode allowed (no nvidia-fs here), no poll mode, its log in /tmp (copied to $OUT).
if [ "$(id -u)" = 0 ]; then
  d=$(stat -c %d "$GDS_DIR"); mm=$(( (d >> 8) & 0xfff )):$(( (d & 0xff) | ((d >> 12) & 0xfff00) )); recs=$mm
  [ -e /sys/dev/block/$mm/partition ] && recs="$recs $(cat "$(readlink -f /sys/dev/block/$mm/..)/dev")"
  fst=$(findmnt -n -o FSTYPE --target "$GDS_DIR" 2>/dev/null); fst=${fst:-ext4}
  mkdir -p /run/udev/data
  for r in $recs; do
    n=$(basename "$(readlink -f /sys/dev/block/$r)")
    if [ ! -e /run/udev/data/b$r ]; then
      printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\nE:ID_FS_UUID=0\nE:ID_SERIAL=%s\nE:ID_WWN=%s\n' "$fst" "$n" "$n" > /run/udev/data/b$r
      echo "harness: wrote udev record /run/udev/data/b$r for $n ($fst)"
    fi
  done
fi
cat > /tmp/cufile.json <<'JSON'
{"logging": {"dir": "/tmp", "level": "INFO"},
 "properties": {"allow_compat_mode": true, "use_poll_mode": false, "max_direct_io_size_kb": 16384}}
JSON
export CUFILE_ENV_PATH_JSON=/tmp/cufile.json
ls -la /proc/driver/nvidia-fs 2>&1 | head -2
# --------------------------------------------------------------------------------------------------------------------
JOPT="--enable-native-access=ALL-UNNAMED -Xmx8g -Djava.io.tmpdir=/tmp -Dkvpool.agent.gds.library=$PWD/.gpu/native/libcufile.so.0 -Dkvpool.test.gds.dir=$GDS_DIR"
GDS_TESTS=""
[ "${SKIP_GDS_TEST:-0}" != 1 ] && GDS_TESTS="--select-class dev.kvpool.agent.io.gds.CuFileLibraryTest --select-class dev.kvpool.agent.io.gds.GdsIoTest --select-class dev.kvpool.agent.io.gds.GdsFallbackTest --select-class dev.kvpool.agent.io.gds.GdsDeadlineTest --select-class dev.kvpool.agent.io.gds.CuFileLayoutTest --select-class dev.kvpool.agent.store.GpuPromotionTest"
# the tests' temporary directories (slot files) on the disk the udev record covers, not a tmpfs
mkdir -p "$GDS_DIR/tmp"
$J $JOPT -Djava.io.tmpdir="$GDS_DIR/tmp" -cp "$CP" org.junit.platform.console.ConsoleLauncher execute --disable-banner --disable-ansi-colors --details=tree \
  --select-class dev.kvpool.agent.tier.GpuDeviceTest $GDS_TESTS ${EXTRA_TESTS} 2>&1 | tee $OUT/gpu-tests.txt
echo "junit exit: $?"
if [ "${SKIP_BENCH:-0}" != 1 ] && [ "${SKIP_GPU_BENCH:-0}" != 1 ]; then
  $J $JOPT -cp "$CP" dev.kvpool.bench.Main gpu ${BENCH_ARGS} 2>&1 | tee $OUT/gpu-bench.txt
  echo "bench exit: $?"
fi
if [ "${SKIP_BENCH:-0}" != 1 ] && [ "${SKIP_GDS_BENCH:-0}" != 1 ]; then
  # each stage of the bench has its own deadline (--pass-timeout-s, 60) and prints its stack when it passes it; this
  # outer one (GDS_BENCH_TIMEOUT s) is the backstop: SIGQUIT makes the JVM print every thread's stack, KILL 10 s later
  timeout -k 10 -s QUIT "${GDS_BENCH_TIMEOUT:-300}" $J $JOPT -cp "$CP" dev.kvpool.bench.Main gds --dir "$GDS_DIR" \
    ${GDS_BENCH_ARGS:---file-mib 256 --rounds 2} 2>&1 | tee $OUT/gds-bench.txt
  echo "gds bench exit: ${PIPESTATUS[0]}"
fi
cp /tmp/cufile.log $OUT/ 2>/dev/null || true
