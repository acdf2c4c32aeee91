# Sourced by the studies that run on emulated hosts (place-study.sh,
# scale-study.sh): `lab_start TAG SPEC BIN...` sets the machine up
# (scripts/setup.sh), builds mheta and the apps, copies mheta and the
# named binaries to a private directory $BIN (so that a rebuild during the
# study cannot change them; $M is its mheta), and brings SPEC's hosts up.
# At exit the hosts go down again if they were down, and $BIN is removed;
# `lab_switch SPEC` (below) moves to another spec's hosts.
# Run from the repository's root.
source scripts/setup.sh

lab_start() {
    local tag=$1 bins=(mheta)
    LAB_SPEC=$2
    shift 2
    bins+=("$@")
    cargo build --release --locked -q -p mheta-apps -p mheta-cli
    BIN=$(mktemp -d "/tmp/mheta-$tag-bin.XXXXXX")
    for b in "${bins[@]}"; do cp "target/release/$b" "$BIN"/; done
    M=$BIN/mheta
    if "$M" hosts status "$LAB_SPEC" >/dev/null 2>&1; then LAB_WAS_UP=1; else LAB_WAS_UP=0; fi
    trap '[ "$LAB_WAS_UP" = 1 ] || "$M" hosts down "$LAB_SPEC" >/dev/null; rm -rf "$BIN"' EXIT
    "$M" hosts up "$LAB_SPEC" >/dev/null
}

# `lab_switch SPEC`: take the current lab down (if lab_start found it
# down) and bring SPEC's hosts up in its place, with the same rule at exit.
lab_switch() {
    [ "$LAB_WAS_UP" = 1 ] || "$M" hosts down "$LAB_SPEC" >/dev/null
    LAB_SPEC=$1
    if "$M" hosts status "$LAB_SPEC" >/dev/null 2>&1; then LAB_WAS_UP=1; else LAB_WAS_UP=0; fi
    "$M" hosts up "$LAB_SPEC" >/dev/null
}
