#!/usr/bin/env bash
# Build safetensors-harness over the reference safetensors crate 0.8.0.
#
#   build.sh OUT [plain] [afl]     (default: both)
#     plain -> OUT/safetensors-harness      (release build, as the wheel's)
#     afl   -> OUT/safetensors-harness-afl  (AFL++ coverage and persistent mode)
#
# The crate is the one inside the PyPI sdist of safetensors 0.8.0 (pinned URL
# and sha256; cached, never committed); its dependencies come from Debian's
# crate sources under /usr/share/cargo/registry, through a cargo home of this
# build's own (OUT/.build/cargo-home), so nothing global changes and nothing
# is fetched from crates.io.  The one manifest patch is described in README.md.
#
# Exit 0 built; 3 a prerequisite is missing (cargo, the Debian crates, the
# AFL++ runtime, the download), with one line saying which; 1 anything else.
#
# Environment:
#   STCHECK_SAFETENSORS_SDIST  a local copy of the sdist (checked the same way)
#   STCHECK_RUST_CACHE         where the download is kept
#                              (default ${XDG_CACHE_HOME:-~/.cache}/stcheck/rust-harness)
#   STCHECK_DEBIAN_REGISTRY    Debian's crate sources (default /usr/share/cargo/registry)
#   AFL_RUNTIME                default /usr/lib/afl/afl-compiler-rt.o
set -euo pipefail

SDIST_URL=https://files.pythonhosted.org/packages/45/06/f955dbbb1859e3bd23c8ac6141af5106e7ad5fedec4a3a6e3d60f94b7001/safetensors-0.8.0.tar.gz
SDIST_SHA256=fabaf3e0f18a6618d9b36560682562157f77c2b71fcffc7b432be2baed9d753d
DEBIAN_REGISTRY=${STCHECK_DEBIAN_REGISTRY:-/usr/share/cargo/registry}
# The crates the build resolves, as Debian names its source directories.
DEBIAN_CRATES=(serde-1 serde_derive-1 serde_json-1 hashbrown-0.12 tempfile-3)
APT_LINE="apt-get install librust-serde-dev librust-serde-derive-dev librust-serde-json-dev librust-hashbrown-dev librust-tempfile-dev"
AFL_RUNTIME=${AFL_RUNTIME:-/usr/lib/afl/afl-compiler-rt.o}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
missing() { echo "build.sh: $*" >&2; exit 3; }
fail() { echo "build.sh: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || fail "usage: build.sh OUT [plain] [afl]"
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
shift
VARIANTS=("$@")
[[ ${#VARIANTS[@]} -gt 0 ]] || VARIANTS=(plain afl)
for v in "${VARIANTS[@]}"; do
    [[ $v == plain || $v == afl ]] || fail "unknown variant '$v' (plain, afl)"
done

# --- prerequisites -----------------------------------------------------------
command -v cargo >/dev/null 2>&1 || missing "cargo is not on PATH (install Rust: https://rustup.rs)"
for crate in "${DEBIAN_CRATES[@]}"; do
    compgen -G "$DEBIAN_REGISTRY/$crate*/Cargo.toml" >/dev/null \
        || missing "the Debian crate source $crate* is not under $DEBIAN_REGISTRY ($APT_LINE)"
done
if [[ " ${VARIANTS[*]} " == *" afl "* ]]; then
    [[ -f $AFL_RUNTIME ]] || missing "the AFL++ runtime $AFL_RUNTIME is missing (apt-get install afl++)"
fi

# --- the sdist ---------------------------------------------------------------
sha_ok() { [[ -f $1 ]] && [[ $(sha256sum "$1" | cut -d' ' -f1) == "$SDIST_SHA256" ]]; }
CACHE=${STCHECK_RUST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stcheck/rust-harness}
SDIST=$CACHE/safetensors-0.8.0.tar.gz
if [[ -n ${STCHECK_SAFETENSORS_SDIST:-} ]]; then
    sha_ok "$STCHECK_SAFETENSORS_SDIST" \
        || fail "$STCHECK_SAFETENSORS_SDIST is not the safetensors 0.8.0 sdist (sha256 must be $SDIST_SHA256)"
    SDIST=$STCHECK_SAFETENSORS_SDIST
elif ! sha_ok "$SDIST"; then
    mkdir -p "$CACHE"
    part=$(mktemp "$CACHE/download.XXXXXX")
    trap 'rm -f "$part"' EXIT
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 2 --max-time 120 -o "$part" "$SDIST_URL" 2>/dev/null \
            || missing "cannot download the safetensors 0.8.0 sdist from $SDIST_URL (no network? set STCHECK_SAFETENSORS_SDIST to a local copy)"
    else
        python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
            "$SDIST_URL" "$part" 2>/dev/null \
            || missing "cannot download the safetensors 0.8.0 sdist from $SDIST_URL (no network? set STCHECK_SAFETENSORS_SDIST to a local copy)"
    fi
    sha_ok "$part" || fail "the download from $SDIST_URL does not have sha256 $SDIST_SHA256"
    chmod 644 "$part"
    mv "$part" "$SDIST"
    trap - EXIT
fi

# --- the crate, patched, and this build's cargo home -------------------------
WORK=$OUT/.build
CRATE=$WORK/safetensors
mkdir -p "$WORK"
if [[ ! -f $CRATE/.stcheck-patched ]]; then
    rm -rf "$CRATE" "$WORK/extract"
    mkdir -p "$WORK/extract"
    tar -xzf "$SDIST" -C "$WORK/extract" safetensors-0.8.0/safetensors
    mv "$WORK/extract/safetensors-0.8.0/safetensors" "$CRATE"
    rm -rf "$WORK/extract"
    # The one patch (README.md): hashbrown 0.16 -> 0.12, the version Debian
    # has.  With the default feature `std` the crate takes std's HashMap and
    # never uses hashbrown; the line only has to resolve.
    sed -i 's/^hashbrown = { version = "0.16", features = \["serde"\] }$/hashbrown = { version = "0.12", features = ["serde"] }/' \
        "$CRATE/Cargo.toml"
    grep -q '^hashbrown = { version = "0.12", features = \["serde"\] }$' "$CRATE/Cargo.toml" \
        || fail "the sdist's Cargo.toml does not have the expected hashbrown line; not patched"
    touch "$CRATE/.stcheck-patched"
fi

# The harness is built from a copy, so that the checkout gets no Cargo.lock
# or target/ and two builds into different OUT folders cannot collide.
rm -rf "$WORK/harness"
mkdir -p "$WORK/harness"
cp -p "$HERE/Cargo.toml" "$WORK/harness/"
cp -pR "$HERE/src" "$WORK/harness/"

export CARGO_HOME=$WORK/cargo-home
mkdir -p "$CARGO_HOME"
cat >"$CARGO_HOME/config.toml" <<EOF
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$DEBIAN_REGISTRY"

[net]
offline = true

[patch.crates-io]
safetensors = { path = "$CRATE" }
EOF
# rustup's cargo and rustc find their toolchain through RUSTUP_HOME, which
# defaults to a path under the user's own cargo home: keep it there.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}

build() { # variant target-dir [cargo args...]
    local variant=$1 target=$2
    shift 2
    if ! cargo build --release --quiet --manifest-path "$WORK/harness/Cargo.toml" \
        --target-dir "$target" "$@" 2>"$WORK/$variant.log"; then
        cat "$WORK/$variant.log" >&2
        fail "the $variant build failed (log: $WORK/$variant.log)"
    fi
}

for v in "${VARIANTS[@]}"; do
    case $v in
    plain)
        build plain "$WORK/target-plain"
        cp "$WORK/target-plain/release/safetensors-harness" "$OUT/safetensors-harness"
        ;;
    afl)
        # AFL++ edge coverage from rustc's own SanitizerCoverage pass (no
        # afl-cc, no cargo-afl): trace-pc-guard callbacks, which the AFL++
        # runtime implements; debug assertions and overflow checks on, as
        # cargo-afl builds.  --target keeps these flags off build scripts and
        # serde_derive (a proc macro), which are not linked with the runtime.
        host=$(rustc -vV | sed -n 's/^host: //p')
        RUSTFLAGS="-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3 \
-C llvm-args=-sanitizer-coverage-trace-pc-guard -C llvm-args=-sanitizer-coverage-prune-blocks=0 \
-C codegen-units=1 -C debug-assertions -C overflow-checks -C link-arg=$AFL_RUNTIME" \
            build afl "$WORK/target-afl" --features afl --target "$host"
        cp "$WORK/target-afl/$host/release/safetensors-harness" "$OUT/safetensors-harness-afl"
        ;;
    esac
done
