#!/bin/bash
# Sourced by the pack scripts: bundle_bins DIR BIN... copies programs with every library they link and the loader
# into DIR, for a device machine that has none of them (run as: DIR/ld-linux-x86-64.so.2 --library-path DIR DIR/prog).
bundle_bins() {
  local dir=$1; shift
  mkdir -p "$dir"
  for b in "$@"; do cp -L "$b" "$dir/"; done
  for l in $(ldd "$@" | awk '$3 ~ /^\// {print $3}' | sort -u); do cp -L "$l" "$dir/"; done
  cp -L /lib64/ld-linux-x86-64.so.2 "$dir/"
}
