#!/usr/bin/env bash
# Installs the pinned cargo-deny when it is missing, built in the persistent target directory so
# a rerun (CI's included) finds it there. Prints the path of the binary.
set -euo pipefail

VERSION="0.20.2"
root="${CARGO_TARGET_DIR:-target}/tools"
bin="$root/bin/cargo-deny"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q " $VERSION\$"; then
  echo "$bin"
  exit 0
fi
echo "installing cargo-deny $VERSION (once per target directory)" >&2
cargo install --locked --quiet "cargo-deny@$VERSION" --root "$root" \
  --target-dir "${CARGO_TARGET_DIR:-target}/tools-build" >&2
echo "$bin"
