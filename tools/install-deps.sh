#!/bin/sh
# Installs what cairn needs to build and test, with apt-get (via sudo when not
# root), only when something is missing. Used by `make test` and `make demo`.
set -e
need=""
have_hdr() { [ -f "/usr/include/$1" ]; }
have_hdr zstd.h        || need="$need libzstd-dev"
have_hdr xxhash.h      || need="$need libxxhash-dev"
have_hdr cmocka.h      || need="$need libcmocka-dev"
have_hdr cjson/cJSON.h || need="$need libcjson-dev"
have_hdr utf8proc.h    || need="$need libutf8proc-dev"
have_hdr libstemmer.h  || need="$need libstemmer-dev"
have_hdr openssl/evp.h || need="$need libssl-dev"    # SHA-256 for the hash chain, Ed25519 for signed heads
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v make >/dev/null 2>&1 || need="$need make"
command -v jq >/dev/null 2>&1 || need="$need jq"      # tests/cli-tests.sh
command -v openssl >/dev/null 2>&1 || need="$need openssl" # signed heads in tests/cli-tests.sh
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config" # tests/packaging-tests.sh
command -v groff >/dev/null 2>&1 || need="$need groff-base"      # the manual pages, checked
command -v script >/dev/null 2>&1 || need="$need bsdutils"       # a terminal for tests/cli-tests.sh
[ -f /usr/share/i18n/locales/de_DE ] || need="$need locales" # a ',' locale for tests/test_memory
# The Python package's tests run with Debian's python3 (python/run-tests.sh)
/usr/bin/python3 -m pytest --version >/dev/null 2>&1 || need="$need python3-pytest"
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || need="$need python3-pip"
# The MCP server's tests run the official TypeScript SDK (tests/mcp/run-tests.sh)
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
[ -z "$need" ] && exit 0
echo "installing:$need"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq $need
