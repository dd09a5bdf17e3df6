# Shared llama.cpp helpers of the export and compare job scripts (POSIX sh). The including
# script sets SCRIPT_NAME (its name without .sh) before these are defined.

say() {
    printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2
}

fail() {
    printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2
    exit 1
}

# fetch URL SHA256 PATH: download URL to PATH, hashing while streaming (120 s timeout);
# on a mismatch the file is deleted and the script fails without using it.
fetch() {
    python3 - "$1" "$2" "$3" "$SCRIPT_NAME" <<'PYFETCH' || exit 1
import hashlib, os, sys, urllib.request
url, expected, path, prefix = sys.argv[1:5]
digest = hashlib.sha256()
part = path + ".part"
try:
    with urllib.request.urlopen(url, timeout=120) as response, open(part, "wb") as out:
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                break
            digest.update(chunk)
            out.write(chunk)
except Exception as error:  # noqa: BLE001 (any failure ends the fetch with one line)
    if os.path.exists(part):
        os.remove(part)
    sys.exit(f"{prefix}: cannot fetch {url}: {error}")
actual = digest.hexdigest()
if actual != expected.lower():
    os.remove(part)
    sys.exit(f"{prefix}: {url} has SHA-256 {actual}, expected {expected}: not used")
os.replace(part, path)
PYFETCH
}

# unpack ARCHIVE TOPDIR DEST: extract a .tar.gz through a temporary directory, then move its
# top directory TOPDIR to DEST in one rename, so DEST is either complete or absent.
unpack() {
    _unpack_tmp="$(dirname "$3")/.unpack.$$"
    rm -rf "$_unpack_tmp"
    mkdir -p "$_unpack_tmp" || fail "cannot create $_unpack_tmp"
    tar -xzf "$1" -C "$_unpack_tmp" || { rm -rf "$_unpack_tmp"; fail "cannot unpack $1"; }
    [ -d "$_unpack_tmp/$2" ] || { rm -rf "$_unpack_tmp"; fail "$1 has no top directory $2"; }
    rm -rf "$3"
    mv "$_unpack_tmp/$2" "$3" || { rm -rf "$_unpack_tmp"; fail "cannot move $2 into place"; }
    rm -rf "$_unpack_tmp"
}
