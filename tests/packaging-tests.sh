#!/bin/sh
# packaging-tests.sh BUILD - what `make install` puts where a user finds it:
# every file installed (stripped with STRIP=1), pkg-config --static that
# links a program against the static library, both manual pages rendering
# without a warning, the bash completion completing commands, subcommands
# and options, and `make uninstall` taking every file away again.
set -u
BUILD=${1:-build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cairn-pkg-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
D=$tmp/root
P=/usr/local
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }
check() { if eval "$2" >/dev/null 2>&1; then ok "$1"; else bad "$1"; fi; }

if ! make -s install BUILD="$BUILD" DESTDIR="$D" PREFIX="$P" STRIP=1 >"$tmp/install.out" 2>&1; then
  cat "$tmp/install.out"; echo "FAIL packaging (make install)"; exit 1
fi
for f in lib/libcairn.a lib/libcairn.so.1 lib/libcairn.so include/cairn.h include/cairn_sys.h \
         bin/cairn lib/pkgconfig/cairn.pc share/man/man1/cairn.1 share/man/man3/libcairn.3 \
         share/bash-completion/completions/cairn; do
  check "installed $f" "[ -e '$D$P/$f' ]"
done
check "the tool runs" "'$D$P/bin/cairn' --version | grep -q '^cairn [0-9]'"
check "the tool is stripped" "! nm '$D$P/bin/cairn' 2>&1 | grep -q ' T main$'"
check "the shared library is stripped and keeps its API" \
  "nm -D '$D$P/lib/libcairn.so.1' | grep -q ' T cairn_open$' && ! nm '$D$P/lib/libcairn.so.1' 2>&1 | grep -q ' t '"

# pkg-config: the static library links with what Libs.private lists.
export PKG_CONFIG_PATH="$D$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
cat > "$tmp/prog.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <cairn.h>
int main(int argc, char **argv)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem *m;
    cairn_db *db;
    cairn_recall_hit *h;
    size_t n = 0;
    char err[CAIRN_ERRMSG_MAX];
    (void)argc;
    o.create = 1;
    if (cairn_open(&db, argv[1], &o, err, sizeof err) != CAIRN_OK || cairn_mem_open(db, NULL, &m) != CAIRN_OK)
        return 1;
    if (cairn_mem_store(m, "the deploy needs a green build", NULL, NULL, NULL) != CAIRN_OK ||
        cairn_mem_recall(m, "deploy", NULL, &h, &n) != CAIRN_OK || n != 1)
        return 2;
    puts(h[0].mem.content);
    cairn_recall_free(h, n);
    cairn_mem_close(m);
    return cairn_close(db) != CAIRN_OK;
}
C
check "pkg-config --static lists cJSON" "pkg-config --static --libs cairn | grep -q -- -lcjson"
check "pkg-config's version is the tool's" \
  "[ \"\$(pkg-config --modversion cairn)\" = \"\$('$D$P/bin/cairn' --version | sed 's/^cairn //')\" ]"
static_libs=$(pkg-config --static --libs cairn | sed 's/-lcairn/-Wl,-Bstatic -lcairn -Wl,-Bdynamic/')
check "a program links against libcairn.a with pkg-config --static" \
  "cc -o '$tmp/prog-static' '$tmp/prog.c' \$(pkg-config --cflags cairn) $static_libs"
check "... and runs" "'$tmp/prog-static' '$tmp/s1' | grep -q 'green build'"
check "a program links against libcairn.so with pkg-config" \
  "cc -o '$tmp/prog-shared' '$tmp/prog.c' \$(pkg-config --cflags --libs cairn)"
check "... and runs" "LD_LIBRARY_PATH='$D$P/lib' '$tmp/prog-shared' '$tmp/s2' | grep -q 'green build'"

# Manual pages: render, and without a warning.
for page in man1/cairn.1 man3/libcairn.3; do
  check "$page renders without a warning" \
    "[ -z \"\$(groff -man -Tutf8 -ww '$D$P/share/man/$page' 2>&1 >/dev/null)\" ] && groff -man -Tutf8 -P-cbou '$D$P/share/man/$page' | grep -q '^NAME'"
done
check "cairn(1) has every command's section" \
  "[ \$(grep -c '^\\.SS ' '$D$P/share/man/man1/cairn.1') -ge 20 ] && grep -q '^\\.SS recall' '$D$P/share/man/man1/cairn.1'"

# Completion.
comp() { # words... -> what completing the last one offers
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cairn; echo "${COMPREPLY[*]}"' \
    _ "$D$P/share/bash-completion/completions/cairn" "$@"
}
check "completion: a command" "[ \"\$(comp cairn reca)\" = recall ]"
check "completion: an option of the command" "comp cairn recall --expl | grep -qx -- --explain"
check "completion: a subcommand" "comp cairn episode li | grep -qx list"
check "completion: after a global option" "[ \"\$(comp cairn --store /tmp chec)\" = checkpoint ]"

# Uninstall takes every file away.
make -s uninstall BUILD="$BUILD" DESTDIR="$D" PREFIX="$P" >/dev/null 2>&1
check "make uninstall leaves no file" "[ -z \"\$(find '$D' -type f -o -type l)\" ]"

if [ "$fails" -eq 0 ]; then echo "PASS packaging"; else echo "FAIL packaging ($fails)"; exit 1; fi
