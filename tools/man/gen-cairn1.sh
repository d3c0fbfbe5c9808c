#!/bin/sh
# gen-cairn1.sh CAIRN > cairn.1 - the cairn(1) manual page, made from the
# tool's own help texts (`cairn help` and `cairn help COMMAND` for every
# command it lists), so that the page says what --help says.
set -eu
cairn=$1
version=$("$cairn" --version | sed 's/^[^0-9]*//')
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
cat <<HEAD
.TH CAIRN 1 "" "cairn $version" "User Commands"
.SH NAME
cairn \- an append-only, log-structured memory store for AI agents
.SH SYNOPSIS
.B cairn
.RB [ \-\-store
.IR DIR ]
.I COMMAND
.RI [ ARGS ...]
.SH DESCRIPTION
.nf
HEAD
"$cairn" help | esc
echo ".fi"
echo ".SH COMMANDS"
for c in $("$cairn" help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }'); do
  [ "$c" = help ] && continue
  echo ".SS $c"
  echo ".nf"
  "$cairn" help "$c" | esc
  echo ".fi"
done
cat <<TAIL
.SH FILES
.TP
.I .cairn/
the default store directory (\fB\-\-store\fR, \fB\$CAIRN_STORE\fR)
.SH SEE ALSO
.BR libcairn (3)
TAIL
