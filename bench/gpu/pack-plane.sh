#!/bin/bash
# Packs the metadata-plane benchmarks for the 16-core device machine (no JDK, no Redis, no network) into .gpu/
# (git-ignored): a jlink'd JRE, the packaged plane, the bench jar, redis-server/redis-cli with every library they
# link (and the loader), and the Mooncake traces. Jars are re-stored uncompressed so that one xz pass over the
# whole bundle compresses the classes well; natives for other platforms are dropped. Then: device run with carry
# [".gpu"] and `bash .gpu/plane.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
SHARED=${KVPOOL_SHARED:-../shared}
[ "${SKIP_BUILD:-0}" = 1 ] || ./mvnw -B -q -pl metadata-plane,bench -am install -DskipTests
X=$(git rev-parse --git-common-dir)/info/exclude # a worktree shares the main checkout's
grep -qx "/.gpu/" "$X" 2>/dev/null || { mkdir -p "$(dirname "$X")"; echo "/.gpu/" >> "$X"; }
rm -rf .gpu && mkdir -p .gpu
tmp=$(mktemp -d)
# the plane as packaged; the bench runs on the plane's own libraries plus its jar
cp -r metadata-plane/target/quarkus-app "$tmp/plane"
mkdir -p "$tmp/bench" && cp bench/target/kvpool-bench.jar "$tmp/bench/"
for j in $(find "$tmp/plane" -name '*.jar'); do
  d=$(mktemp -d) && (cd "$d" && unzip -q -o "$j" \
    && find . -path './META-INF/versions' -prune -o \( -name '*.so' -o -name '*.dll' -o -name '*.dylib' -o -name '*.jnilib' -o -name '*.a' \) -print \
       | { grep -vE 'linux[-/_](amd64|x86_64|x86-64)|/Linux/x86_64/|linux-x86_64' || true; } | xargs -r rm -f \
    && rm -f "$j" && zip -q -0 -r -X "$j" .) && rm -rf "$d"
done
# OLD_JARS="a.jar b.jar": an earlier build's jars (quarkus-app names) for plane.sh's AB_STEPS and RECLAIM_AB comparisons
if [ -n "${OLD_JARS:-}" ]; then mkdir -p "$tmp/old" && cp $OLD_JARS "$tmp/old/"; fi
mkdir -p "$tmp/shared/data/mooncake" && cp "$SHARED"/data/mooncake/*.jsonl "$tmp/shared/data/mooncake/"
"$JAVA_HOME"/bin/jlink --add-modules java.base,java.logging,jdk.unsupported,java.management,jdk.management,java.net.http,java.xml,java.sql,java.naming,java.instrument,jdk.zipfs \
  --strip-debug --no-header-files --no-man-pages --output "$tmp/jre"
. bench/gpu/bundle.sh
bundle_bins "$tmp/redis" /usr/bin/redis-server /usr/bin/redis-cli
tar cf - -C "$tmp" jre | xz -9 -T0 > .gpu/jre.tar.xz
tar cf - -C "$tmp" redis | xz -9 -T0 > .gpu/redis.tar.xz
tar cf - -C "$tmp" plane bench shared $( [ -d "$tmp/old" ] && echo old ) | xz -9 -T0 > .gpu/plane.tar.xz
rm -rf "$tmp"
cp bench/gpu/plane.sh .gpu/
du -sh .gpu/*
