#!/usr/bin/env bash
# Builds KVPool's OCI image archives without Docker: a Debian root from Debian's packages (mmdebstrap), a jlink'd
# Java 25 runtime, and one image per service assembled with buildah (vfs storage under target/, nothing cached
# outside it). Run by the kvpool-images Maven module (package phase); every setting comes from the environment,
# which that pom fills from its kvpool.images.* properties (k8s/images/README.md lists them).
#
# Why buildah and not Jib: Jib needs a base image from a registry or a Docker daemon, or a tar base plus its own
# Maven plugin (no quarkus-container-image-jib for Quarkus 3.30 is reachable here), and cannot build the base itself;
# buildah takes the Debian root tarball as it is, writes OCI archives, and `buildah push` sends the same images to a
# registry. Layers stay deterministic (--timestamp), so the base and runtime layers have one digest in every image.
set -euo pipefail

fail() { echo "kvpool-images: $*" >&2; exit 1; }

ROOT=${KVPOOL_ROOT:?KVPOOL_ROOT (the repository root) is required}
OUT=${KVPOOL_IMAGES_OUT:?KVPOOL_IMAGES_OUT (k8s/images/target) is required}
VERSION=${KVPOOL_IMAGES_VERSION:?KVPOOL_IMAGES_VERSION is required}
TAG=${KVPOOL_IMAGES_TAG:-$VERSION}
REPOSITORY=${KVPOOL_IMAGES_REPOSITORY:-ghcr.io/kvpool}
BASE=${KVPOOL_IMAGES_BASE:-debian}
SUITE=${KVPOOL_IMAGES_DEBIAN_SUITE:-bookworm}
MIRROR=${KVPOOL_IMAGES_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# libstdc++6: JCuda's JNI libraries (data agent) link it; Java itself needs only libc (it brings its own zlib,
# time zones and CA certificates)
INCLUDE=${KVPOOL_IMAGES_DEBIAN_INCLUDE:-libstdc++6}
# measured with jdeps over every jar of the four applications, plus what jdeps cannot see and a start proved missing:
# jdk.zipfs (without it quarkus-run.jar exits 1 without a word), java.rmi (the control plane: context propagation
# loads java.rmi.RemoteException);
# jdk.compiler is left out (only vertx-codegen,
# an annotation processor, refers to it)
MODULES=${KVPOOL_IMAGES_JLINK_MODULES:-java.base,java.compiler,java.desktop,java.instrument,java.logging,java.management,java.naming,java.net.http,java.scripting,java.security.jgss,java.security.sasl,java.sql,java.transaction.xa,java.xml,jdk.management,jdk.net,jdk.unsupported,jdk.zipfs,java.rmi}
PUSH=${KVPOOL_IMAGES_PUSH:-}
AGENT_NATIVE=${KVPOOL_IMAGES_AGENT_NATIVE:-}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
UID_GID=185 # the non-root user the operator's pod security context runs as (Workloads.RUN_AS_USER)

[ "$(id -u)" = 0 ] || fail "must run as root (buildah with vfs storage and mmdebstrap's root mode need it); skip explicitly with -Dkvpool.images.skip=true"
command -v buildah >/dev/null || fail "buildah is missing: apt-get install buildah (Debian); skip explicitly with -Dkvpool.images.skip=true"
[ "$BASE" != debian ] || command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing: apt-get install mmdebstrap (Debian), or set kvpool.images.base to a root tarball or image reference"
[ -x "$JAVA_HOME/bin/jlink" ] || fail "no jlink in JAVA_HOME=$JAVA_HOME (a JDK 25 is required)"
case "$TAG$REPOSITORY" in *[!A-Za-z0-9._/:-]*) fail "repository or tag has characters an image reference cannot hold: $REPOSITORY:$TAG" ;; esac

REVISION=${KVPOOL_IMAGES_REVISION:-$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)}
SOURCE=${KVPOOL_IMAGES_SOURCE:-$(git -C "$ROOT" remote get-url origin 2>/dev/null || echo unknown)}
LICENSES=${KVPOOL_IMAGES_LICENSES:-NOASSERTION}
# File times: the application layer and "created" carry the commit's time; the base OS, runtime and dependency layers
# a fixed one, so their digests change only when their content does (an upgrade ships the application layer only)
EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
FIXED_EPOCH=${KVPOOL_IMAGES_LAYER_EPOCH:-1767225600} # 2026-01-01
export SOURCE_DATE_EPOCH=$FIXED_EPOCH

W=$OUT/images-work
IMAGES=$OUT/images
rm -rf "$W" "$IMAGES"
mkdir -p "$W" "$IMAGES"
B=(buildah --root "$W/storage" --runroot "$W/run" --storage-driver vfs)
TIMES=$IMAGES/build-times.txt
: > "$TIMES"
step_start=0
begin() { step_start=$(date +%s.%N); echo "kvpool-images: $1"; step_name=$1; }
end() { printf '%-40s %6.1f s\n' "$step_name" "$(echo "$(date +%s.%N) - $step_start" | bc)" | tee -a "$TIMES"; }

cleanup() { "${B[@]}" rm --all >/dev/null 2>&1 || true; }
trap cleanup EXIT

for app in control-plane metadata-plane data-agent k8s/operator; do
  [ -f "$ROOT/$app/target/quarkus-app/quarkus-run.jar" ] || fail "$app/target/quarkus-app is missing: build the services first (./mvnw -B package -DskipTests, or the whole reactor)"
done

# 1. the base OS layer
begin "base OS ($BASE)"
if [ "$BASE" = debian ]; then
  # essential: Debian's Essential:yes set with dpkg's database (scanners see every package, a shell for kubectl exec);
  # docs, man pages and translations left out
  mmdebstrap --quiet --variant=essential --include="$INCLUDE" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/* "$1"/etc/machine-id' \
    "$SUITE" "$W/base-rootfs.tar" "$MIRROR"
  ctr=$("${B[@]}" from scratch)
  "${B[@]}" add "$ctr" "$W/base-rootfs.tar" / >/dev/null
elif [ -f "$BASE" ]; then
  ctr=$("${B[@]}" from scratch) # a root file system tarball of the user's own
  "${B[@]}" add "$ctr" "$BASE" / >/dev/null
else
  ctr=$("${B[@]}" from "$BASE") # an image reference: docker://registry/image:tag, oci-archive:/path.tar, ...
fi
"${B[@]}" commit --quiet --timestamp "$FIXED_EPOCH" "$ctr" kvpool-base >/dev/null
"${B[@]}" rm "$ctr" >/dev/null
end

# 2. the Java runtime layer (shared by every JVM image): jlink'd Java 25, the kvpool user, the data dir
begin "jlink Java runtime"
"$JAVA_HOME/bin/jlink" --add-modules "$MODULES" --strip-debug --no-header-files --no-man-pages \
  --output "$W/java"
end
begin "runtime layer"
ctr=$("${B[@]}" from kvpool-base)
mnt=$("${B[@]}" mount "$ctr")
mkdir -p "$mnt/opt"
cp -a "$W/java" "$mnt/opt/java"
grep -q "^[^:]*:[^:]*:$UID_GID:" "$mnt/etc/passwd" 2>/dev/null \
  || echo "kvpool:x:$UID_GID:$UID_GID:KVPool:/var/lib/kvpool:/usr/sbin/nologin" >> "$mnt/etc/passwd"
grep -q "^[^:]*:[^:]*:$UID_GID:" "$mnt/etc/group" 2>/dev/null || echo "kvpool:x:$UID_GID:" >> "$mnt/etc/group"
mkdir -p "$mnt/var/lib/kvpool" "$mnt/tmp"
chown "$UID_GID:$UID_GID" "$mnt/var/lib/kvpool"
chmod 0750 "$mnt/var/lib/kvpool"
chmod 1777 "$mnt/tmp"
"${B[@]}" umount "$ctr" >/dev/null
"${B[@]}" config --env JAVA_HOME=/opt/java \
  --env PATH=/opt/java/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
"${B[@]}" commit --quiet --timestamp "$FIXED_EPOCH" "$ctr" kvpool-java >/dev/null
"${B[@]}" rm "$ctr" >/dev/null
end

# The control plane's jar fixes its database kind at build time: the image gets PostgreSQL by re-augmenting a copy of
# the packaged mutable-jar (Quarkus' own rebuild of the same jars; ./kvpool up and the tests keep the H2 one). Quinoa
# takes part in the rebuild: it is handed the console exactly as the control plane's build produced it
# (control-plane/target/quinoa/build) behind a package.json whose build does nothing, so npm neither downloads nor
# rebuilds anything.
begin "control plane re-augmented for postgresql"
pg=$W/control-plane-postgresql
mkdir -p "$pg/console/node_modules"
cp -a "$ROOT/control-plane/target/quarkus-app" "$pg/quarkus-app"
[ -f "$ROOT/control-plane/target/quinoa/build/index.html" ] || fail "control-plane/target/quinoa/build is missing: rebuild the control plane"
cp -a "$ROOT/control-plane/target/quinoa/build" "$pg/console/dist"
echo '{"name":"kvpool-console-prebuilt","private":true,"scripts":{"build":"node -e 0"}}' > "$pg/console/package.json"
echo '{"name":"kvpool-console-prebuilt","lockfileVersion":3,"requires":true,"packages":{"":{"name":"kvpool-console-prebuilt"}}}' \
  > "$pg/console/package-lock.json"
(cd "$pg/quarkus-app" && "$JAVA_HOME/bin/java" -Dquarkus.launch.rebuild=true -Dquarkus.datasource.db-kind=postgresql \
  -Dquarkus.quinoa.ui-dir="$pg/console" -jar quarkus-run.jar > "$pg/rebuild.log" 2>&1) \
  || { tail -30 "$pg/rebuild.log" >&2; fail "re-augmenting the control plane for postgresql failed ($pg/rebuild.log)"; }
# the deployment jars only serve a rebuild, which the read-only root of the pod cannot do anyway
rm -rf "$pg/quarkus-app/lib/deployment"
end

# 3 + 4. one image per service: its third-party dependencies (lib/ without KVPool's own jars), then the application:
# quarkus-run.jar, app/, quarkus/ and KVPool's own jars (dev.kvpool.*, rebuilt with every commit)
# args: name app-dir description ports health-json jvm-flags...
image() {
  local name=$1 app=$2 desc=$3 ports=$4 health=$5; shift 5
  local dir=/opt/kvpool/$name ref=$REPOSITORY/kvpool-$name:$TAG archive=$IMAGES/kvpool-$name.tar
  begin "image kvpool-$name"
  local ctr mnt
  ctr=$("${B[@]}" from kvpool-java)
  mnt=$("${B[@]}" mount "$ctr")
  mkdir -p "$mnt$dir/lib/main"
  cp -a "$app/lib/boot" "$mnt$dir/lib/"
  find "$app/lib/main" -maxdepth 1 -type f ! -name 'dev.kvpool.*' -exec cp -a {} "$mnt$dir/lib/main/" \;
  "${B[@]}" umount "$ctr" >/dev/null
  "${B[@]}" commit --quiet --timestamp "$FIXED_EPOCH" "$ctr" "kvpool-$name-deps" >/dev/null
  "${B[@]}" rm "$ctr" >/dev/null
  ctr=$("${B[@]}" from "kvpool-$name-deps")
  mnt=$("${B[@]}" mount "$ctr")
  cp -a "$app/quarkus-run.jar" "$app/app" "$app/quarkus" "$app/quarkus-app-dependencies.txt" "$mnt$dir/"
  find "$app/lib/main" -maxdepth 1 -type f -name 'dev.kvpool.*' -exec cp -a {} "$mnt$dir/lib/main/" \;
  "${B[@]}" umount "$ctr" >/dev/null
  local entry='["/opt/java/bin/java"' f p
  for f in "$@" -jar "$dir/quarkus-run.jar"; do entry+=",\"$f\""; done
  entry+=']'
  local cfg=(--entrypoint "$entry" --user "$UID_GID:$UID_GID" --workingdir /var/lib/kvpool
    --env KVPOOL_DATA_DIR=/var/lib/kvpool --env "JDK_JAVA_OPTIONS=$HEAP"
    --label "org.opencontainers.image.title=kvpool-$name" --label "org.opencontainers.image.description=$desc"
    --label "org.opencontainers.image.version=$VERSION" --label "org.opencontainers.image.revision=$REVISION"
    --label "org.opencontainers.image.source=$SOURCE" --label "org.opencontainers.image.licenses=$LICENSES"
    --label "org.opencontainers.image.created=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
    --label "org.opencontainers.image.ref.name=$TAG" --label "dev.kvpool.health=$health")
  for p in $ports; do cfg+=(--port "$p/tcp"); done
  "${B[@]}" config "${cfg[@]}" "$ctr"
  "${B[@]}" commit --quiet --timestamp "$EPOCH" "$ctr" "$ref" >/dev/null
  "${B[@]}" rm "$ctr" >/dev/null
  "${B[@]}" push --quiet --disable-compression "$ref" "oci-archive:$archive:$ref" >/dev/null
  [ -z "$PUSH" ] || "${B[@]}" push --quiet "$ref" "$PUSH/kvpool-$name:$TAG"
  end
}

HEAP=-Xmx512m image control-plane "$pg/quarkus-app" "KVPool control plane (PostgreSQL): REST, web console, KVCM admin" \
  "6492 6491" '{"port":6492,"startup":"/q/health/started","readiness":"/q/health/ready","liveness":"/q/health/live"}' \
  -Djava.util.logging.manager=org.jboss.logmanager.LogManager
HEAP=-Xmx2g image metadata-plane "$ROOT/metadata-plane/target/quarkus-app" "KVPool metadata plane: KVCM meta HTTP and gRPC" \
  "6382 6381" '{"port":6382,"startup":"/q/health/started","readiness":"/q/health/ready","liveness":"/q/health/live"}' \
  -Djava.util.logging.manager=org.jboss.logmanager.LogManager
# the agent: FFM downcalls (io_uring over raw syscalls, shared memory) need native access; JCuda's JNI too
HEAP=-Xmx512m image data-agent "$ROOT/data-agent/target/quarkus-app" "KVPool data agent: engine API, local tiers" \
  "6390 6389" '{"port":6390,"readiness":"/v1/status","metrics":"6389/q/metrics"}' \
  --enable-native-access=ALL-UNNAMED -Djava.util.logging.manager=org.jboss.logmanager.LogManager
HEAP=-Xmx256m image operator "$ROOT/k8s/operator/target/quarkus-app" "KVPool Kubernetes operator" \
  "8080" '{"port":8080}' -Djava.util.logging.manager=org.jboss.logmanager.LogManager

# The native data agent (hook for a GraalVM/Mandrel build made elsewhere): the base OS layer and the binary, no Java
if [ -n "$AGENT_NATIVE" ]; then
  [ -x "$AGENT_NATIVE" ] || fail "kvpool.images.agent-native names no executable file: $AGENT_NATIVE"
  begin "image kvpool-data-agent-native"
  ctr=$("${B[@]}" from kvpool-base)
  "${B[@]}" copy --chmod 0755 "$ctr" "$AGENT_NATIVE" /opt/kvpool/data-agent/kvpool-data-agent >/dev/null
  mnt=$("${B[@]}" mount "$ctr")
  grep -q "^[^:]*:[^:]*:$UID_GID:" "$mnt/etc/passwd" \
    || echo "kvpool:x:$UID_GID:$UID_GID:KVPool:/var/lib/kvpool:/usr/sbin/nologin" >> "$mnt/etc/passwd"
  mkdir -p "$mnt/var/lib/kvpool" && chown "$UID_GID:$UID_GID" "$mnt/var/lib/kvpool"
  "${B[@]}" umount "$ctr" >/dev/null
  ref=$REPOSITORY/kvpool-data-agent-native:$TAG
  "${B[@]}" config --entrypoint '["/opt/kvpool/data-agent/kvpool-data-agent"]' --user "$UID_GID:$UID_GID" \
    --workingdir /var/lib/kvpool --env KVPOOL_DATA_DIR=/var/lib/kvpool --port 6390/tcp --port 6389/tcp \
    --label org.opencontainers.image.title=kvpool-data-agent-native --label "org.opencontainers.image.version=$VERSION" \
    --label "org.opencontainers.image.revision=$REVISION" --label "org.opencontainers.image.source=$SOURCE" \
    --label "org.opencontainers.image.licenses=$LICENSES" \
    --label 'dev.kvpool.health={"port":6390,"readiness":"/v1/status","metrics":"6389/q/metrics"}' "$ctr"
  "${B[@]}" commit --quiet --timestamp "$EPOCH" "$ctr" "$ref" >/dev/null
  "${B[@]}" push --quiet --disable-compression "$ref" "oci-archive:$IMAGES/kvpool-data-agent-native.tar:$ref" >/dev/null
  [ -z "$PUSH" ] || "${B[@]}" push --quiet "$ref" "$PUSH/kvpool-data-agent-native:$TAG"
  end
fi

# what the test and the README read: archives and their sizes
ls -l "$IMAGES"/*.tar | awk '{printf "%-40s %8.1f MiB\n", $NF, $5/1048576}' | sed "s|$IMAGES/||" > "$IMAGES/sizes.txt"
du -sm "$W/java" | awk '{print "java runtime (jlink)                     " $1 " MiB"}' >> "$IMAGES/sizes.txt"
cat "$TIMES" "$IMAGES/sizes.txt"
# the storage is a cache of this build only: drop it (vfs keeps a full copy per layer)
"${B[@]}" rm --all >/dev/null 2>&1 || true
"${B[@]}" rmi --all --force >/dev/null 2>&1 || true
rm -rf "$W/storage" "$W/run"
