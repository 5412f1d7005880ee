#!/usr/bin/env bash
# Installs libflexio (mlx5-dpa's FlexIO host API) under PREFIX (default /usr/local):
#   PREFIX/lib/libflexio.so, PREFIX/lib/libflexio.a, PREFIX/include/libflexio/flexio.h and
#   flexio_ver.h,
#   PREFIX/lib/pkgconfig/libflexio.pc
# so that `pkg-config --cflags --libs libflexio` (and meson's dependency('libflexio')) finds
# it. PROFILE=debug installs a debug build (default: release).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
profile="${PROFILE:-release}"
case "$profile" in
  release) cargo build -q --release -p mlx5-dpa-flexio ;;
  debug) cargo build -q -p mlx5-dpa-flexio ;;
  *) echo "install.sh: PROFILE is release or debug" >&2; exit 2 ;;
esac
target="${CARGO_TARGET_DIR:-target}/$profile"
install -d "$prefix/lib/pkgconfig" "$prefix/include/libflexio"
install -m 0755 "$target/libflexio.so" "$prefix/lib/libflexio.so"
install -m 0644 "$target/libflexio.a" "$prefix/lib/libflexio.a"
install -m 0644 flexio/include/libflexio/flexio.h "$prefix/include/libflexio/flexio.h"
install -m 0644 flexio/include/libflexio/flexio_ver.h "$prefix/include/libflexio/flexio_ver.h"
sed "s|@PREFIX@|$prefix|" flexio/libflexio.pc.in >"$prefix/lib/pkgconfig/libflexio.pc"
echo "libflexio installed under $prefix (PKG_CONFIG_PATH=$prefix/lib/pkgconfig)"
