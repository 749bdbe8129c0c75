#!/bin/bash
# Packs what the GPU checks need into .gpu/ (git-ignored) for the device machine, which has no JDK and no network:
# a jlink'd JRE, the agent/api/bench jars, the agent's test classes, JCuda (runtime natives only), JUnit's
# console launcher and libcufile (.gpu/native, from the nvidia-cufile wheel). Then: device run with carry [".gpu"] and command `bash .gpu/run.sh` (see docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
M=${MAVEN_REPO:-$HOME/.m2/repository}
[ "${PACK_BUILD:-1}" = 0 ] || ./mvnw -B -q -pl api,data-agent,bench -am install -DskipTests
./mvnw -B -q dependency:get -Dartifact=org.junit.platform:junit-platform-console-standalone:1.13.4 >/dev/null
X=$(git rev-parse --git-common-dir)/info/exclude # a worktree shares the main checkout's
grep -qx "/.gpu/" "$X" 2>/dev/null || { mkdir -p "$(dirname "$X")"; echo "/.gpu/" >> "$X"; }
rm -rf .gpu && mkdir -p .gpu/lib
cp data-agent/target/kvpool-data-agent-*.jar api/target/kvpool-api-*.jar bench/target/kvpool-bench.jar .gpu/lib/
# the agent's own logging API, at the version its packaged app uses
cp data-agent/target/quarkus-app/lib/boot/org.jboss.logging.jboss-logging-*.jar .gpu/lib/
cp "$M"/com/google/protobuf/protobuf-java/4.32.1/protobuf-java-4.32.1.jar \
   "$M"/com/google/protobuf/protobuf-java-util/4.32.1/protobuf-java-util-4.32.1.jar \
   "$M"/com/fasterxml/jackson/core/jackson-core/2.20.1/jackson-core-2.20.1.jar \
   "$M"/com/fasterxml/jackson/core/jackson-databind/2.20.1/jackson-databind-2.20.1.jar \
   "$M"/com/fasterxml/jackson/core/jackson-annotations/2.20/jackson-annotations-2.20.jar \
   "$M"/org/jcuda/jcuda/12.6.0/jcuda-12.6.0.jar \
   "$M"/org/junit/platform/junit-platform-console-standalone/1.13.4/junit-platform-console-standalone-1.13.4.jar .gpu/lib/
# JCuda's natives jar is 26 MB; the runtime library (cudart linked in statically) is the 1 MB we use
tmp=$(mktemp -d)
(cd "$tmp" && unzip -q "$M"/org/jcuda/jcuda-natives/12.6.0/jcuda-natives-12.6.0-linux-x86_64.jar 'lib/libJCudaRuntime*' 'META-INF/MANIFEST.MF' \
  && zip -q -r "$OLDPWD/.gpu/lib/jcuda-natives-runtime-only.jar" .)
cp -r data-agent/target/test-classes .gpu/agent-test-classes
# libcufile (cuFile 1.15, CUDA 13) for the GDS checks, from the nvidia-cufile wheel of the local mirror: carried,
# never fetched on the device machine; the agent loads it lazily (-Dkvpool.agent.gds.library, see run.sh)
w=$(mktemp -d)
pip download -q --no-deps nvidia-cufile -d "$w" >"$w/pip.log" 2>&1 || { cat "$w/pip.log"; exit 1; }
mkdir -p .gpu/native
(cd "$w" && unzip -q -o nvidia_cufile-*.whl 'nvidia/cu13/lib/libcufile*.so*') # libcufile.so.0 (+ its RDMA plug-in)
cp "$w"/nvidia/cu13/lib/libcufile*.so* .gpu/native/
rm -rf "$w"
"$JAVA_HOME"/bin/jlink --add-modules java.base,java.logging,jdk.unsupported,java.management,jdk.management,java.net.http,java.xml,java.sql,java.naming \
  --strip-debug --no-header-files --no-man-pages --output "$tmp/jre"
tar cJf .gpu/jre.tar.xz -C "$tmp" jre
rm -rf "$tmp"
cp bench/gpu/run.sh bench/gpu/nvme.sh .gpu/
# FIO_BUNDLE=1: fio and every library it links (with the loader), for the agent-vs-fio disk bench (nvme.sh)
if [ "${FIO_BUNDLE:-0}" = 1 ]; then
  . bench/gpu/bundle.sh
  f=$(mktemp -d) && bundle_bins "$f/fio" /usr/bin/fio && mv "$f/fio/fio" "$f/fio/fio.bin"
  printf '#!/bin/sh\nD=$(dirname "$(readlink -f "$0")")\nexec "$D/ld-linux-x86-64.so.2" --library-path "$D" "$D/fio.bin" "$@"\n' > "$f/fio/fio"
  chmod +x "$f/fio/fio" && tar cJf .gpu/fio.tar.xz -C "$f" fio && rm -rf "$f"
fi
du -sh .gpu
