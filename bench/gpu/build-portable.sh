#!/usr/bin/env bash
# build-portable.sh: builds a carma binary that runs on another x86-64 Linux with glibc >= the
# one of this machine (Debian 12: 2.36) and without libjansson or libcrypto installed there:
# jansson and OpenSSL's libcrypto are linked statically (Debian ships libjansson.a and
# libcrypto.a), glibc stays dynamic (carma dlopens libnvidia-ml.so.1 at run time, which needs
# the dynamic loader). The result is stripped.
#
# usage: bash bench/gpu/build-portable.sh [OUT_DIR]        (default OUT_DIR: build-portable)
#
#   OUT_DIR/meson/   the meson build directory (release, tests off)
#   OUT_DIR/carma    the stripped binary: the one bench/gpu/h200-check.sh falls back to, and
#                    the one path to carry to the GPU machine (carry: ["build-portable/carma"])
#   OUT_DIR/carma.info   how it was built: date, commit, glibc, NEEDED libraries, size
#
# Static linking goes through a private pkg-config directory whose jansson.pc and libcrypto.pc
# name the .a files by path, so meson links exactly those archives and nothing else changes
# (libm and libdl stay glibc's shared ones: a static libm would tie the binary to this glibc).
# The check at the end fails the script when the binary needs anything but libc, libm, libdl,
# libpthread, libgcc_s and the dynamic loader, or needs a glibc symbol version above 2.36.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-build-portable}
case $out in /*) ;; *) out=$repo/$out ;; esac
builddir=$out/meson
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch
max_glibc=${PORTABLE_MAX_GLIBC:-2.36}

if [[ ! -f $libdir/libjansson.a ]]; then
    echo "build-portable.sh: $libdir/libjansson.a is missing (apt-get install libjansson-dev)" >&2
    exit 2
fi
for t in gcc meson ninja pkg-config strip readelf; do
    if ! command -v "$t" >/dev/null; then
        echo "build-portable.sh: $t is missing" >&2
        exit 2
    fi
done

pc=$out/pkgconfig
mkdir -p "$pc"
jv=$(pkg-config --modversion jansson 2>/dev/null || echo 2.14)
cat >"$pc/jansson.pc" <<EOF
Name: Jansson
Description: jansson, linked statically ($libdir/libjansson.a)
Version: $jv
Libs: $libdir/libjansson.a
Cflags: -I/usr/include
EOF
# libcrypto is optional in carma's meson.build; offer the static one when it exists
if [[ -f $libdir/libcrypto.a ]]; then
    cv=$(pkg-config --modversion libcrypto 2>/dev/null || echo 3.0.0)
    cat >"$pc/libcrypto.pc" <<EOF
Name: OpenSSL-libcrypto
Description: libcrypto, linked statically ($libdir/libcrypto.a)
Version: $cv
Libs: $libdir/libcrypto.a -ldl -pthread
Cflags: -I/usr/include
EOF
else
    echo "build-portable.sh: $libdir/libcrypto.a not found: libcrypto left out if optional" >&2
fi

export PKG_CONFIG_PATH=$pc
opts=(--buildtype=release -Dtests=disabled "-Dpkg_config_path=$pc")
if [[ -f $builddir/build.ninja ]]; then
    meson setup --reconfigure "${opts[@]}" "$builddir" "$repo" >"$out/setup.log" 2>&1 ||
        { cat "$out/setup.log" >&2; exit 1; }
else
    rm -rf "$builddir"
    meson setup "${opts[@]}" "$builddir" "$repo" >"$out/setup.log" 2>&1 ||
        { cat "$out/setup.log" >&2; exit 1; }
fi
ninja -C "$builddir" carma >"$out/ninja.log" 2>&1 || { tail -40 "$out/ninja.log" >&2; exit 1; }

cp "$builddir/carma" "$out/carma.tmp"
strip --strip-all "$out/carma.tmp"
mv -f "$out/carma.tmp" "$out/carma"

# the checks: NEEDED libraries, glibc symbol versions, and that it runs
needed=$(readelf -d "$out/carma" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
bad=""
for n in $needed; do
    case $n in
        libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | libgcc_s.so.* | ld-linux*) ;;
        *) bad="$bad $n" ;;
    esac
done
if [[ -n $bad ]]; then
    echo "build-portable.sh: $out/carma needs libraries a bare machine may lack:$bad" >&2
    exit 1
fi
top_glibc=$(readelf -V "$out/carma" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
    sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)
if [[ -n $top_glibc ]] &&
    [[ $(printf '%s\n%s\n' "$top_glibc" "$max_glibc" | sort -t. -k1,1n -k2,2n -k3,3n | tail -1) != \
        "$max_glibc" ]]; then
    echo "build-portable.sh: $out/carma needs GLIBC_$top_glibc > $max_glibc" >&2
    exit 1
fi
"$out/carma" sensors --sample 100ms >/dev/null 2>"$out/sensors.err" || {
    echo "build-portable.sh: $out/carma sensors failed:" >&2
    cat "$out/sensors.err" >&2
    exit 1
}
size=$(stat -c %s "$out/carma")
{
    echo "built $(date -u '+%Y-%m-%dT%H:%M:%SZ') on $(uname -srm), $(ldd --version | head -1)"
    echo "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        "$(git -C "$repo" diff --quiet 2>/dev/null || echo '(with uncommitted changes)')"
    echo "static: $libdir/libjansson.a" \
        "$([[ -f $libdir/libcrypto.a ]] && echo "$libdir/libcrypto.a")"
    echo "NEEDED: $needed"
    echo "highest glibc symbol version: GLIBC_${top_glibc:-none}"
    echo "size: $size bytes (stripped)"
} >"$out/carma.info"
cat "$out/carma.info"
echo "$out/carma"
