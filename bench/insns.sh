#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/insns.sh: xlated instructions of every sample's handler program
# as the kernel loaded it, and what takes them.
#
#   bench/insns.sh [-w]
#   SAMPLES='name object paper' bench/insns.sh   (only those)
#
# Attaches a runtime to a veth in a namespace of its own, loads each
# sample's handler objects (spinctl handler load) and reads the program's
# xlated instruction count (spinctl -j handler list).  The handler share is
# the whole program minus the "null" program (bench/null_handler.bpf.o:
# SPIN_HANDLERS(NULL, NULL, NULL), the runtime's part of every handler
# program).  The breakdown attributes every xlated instruction to the
# source file of its line info (bpftool prog dump xlated linum): the
# handler's own file, spin/handler.h (entry glue and handler calls),
# spin/rt_common.bpf.h (finish step: counters, events, put, fan-out,
# answers), spin/maps.bpf.h (map helpers, copies) and others.
#
# Output: bench/results/insns.csv and bench/results/insns_breakdown.csv;
# with -w also the table between the "insns-table" markers in README.md.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../selftests/lib/netns.sh
. "$TOP/selftests/lib/netns.sh"
SPINCTL=$TOP/tools/spinctl
RES=$TOP/bench/results
WRITE=0
[ "${1:-}" = "-w" ] && WRITE=1

# sample, object, the paper's figure for its handlers (instructions of the
# paper's handler code; "-" where the paper gives none)
SAMPLES=${SAMPLES:-"
pingpong samples/pingpong/pingpong_stream.bpf.o -
pingpong samples/pingpong/pingpong_store.bpf.o -
broadcast samples/broadcast/broadcast.bpf.o 24+logP_puts
raid samples/raid/raid_data.bpf.o 58+1_put
raid samples/raid/raid_parity.bpf.o 46+1_put
datatypes samples/datatypes/datatypes.bpf.o 54
kvstore samples/kvstore/kvstore.bpf.o -
reduce samples/reduce/reduce_double.bpf.o -
condread samples/condread/condread.bpf.o -
"}

trap spin_ns_cleanup EXIT
spin_bpffs_ensure || { echo "insns: no bpffs" >&2; exit 1; }
NS=${SPIN_NS_TAG}_insa
NSB=${SPIN_NS_TAG}_insb
spin_ns_pair "$NS" veth0 10.77.61.1 "$NSB" veth0 10.77.61.2 || exit 1
nsx "$NS" "$SPINCTL" attach veth0 rank 0 >/dev/null || exit 1
command -v bpftool >/dev/null || { echo "insns: bpftool is needed" >&2; exit 1; }

# load OBJ as NAME; print "insns prog_id"
load() {
	nsx "$NS" "$SPINCTL" handler load veth0 "$TOP/$1" name "$2" >/dev/null || return 1
	nsx "$NS" "$SPINCTL" -j handler list veth0 |
		python3 -c 'import json,sys
for h in json.load(sys.stdin):
    if h["name"] == sys.argv[1]: print(h["insns"], h["prog_id"])' "$2"
}

# instructions of program ID per source file, as "file=n ..." (sorted)
breakdown() {
	bpftool prog dump xlated id "$1" linum 2>/dev/null | python3 -c '
import re, sys, collections
cnt, cur = collections.Counter(), "?"
for line in sys.stdin:
    m = re.search(r"\[file:([^ \]]+)", line)
    if m:
        cur = m.group(1).split("/")[-1]
        continue
    if re.match(r"\s*\d+: \(", line):
        cnt[cur] += 1
print(" ".join("%s=%d" % kv for kv in sorted(cnt.items(), key=lambda kv: -kv[1])))'
}

read -r NULL_N NULL_ID < <(load bench/null_handler.bpf.o ins_null) ||
	{ echo "insns: cannot load the null handler" >&2; exit 1; }
mkdir -p "$RES"
echo "sample,object,insns,handler_share,paper" >"$RES/insns.csv"
echo "object,insns,by_source_file" >"$RES/insns_breakdown.csv"
echo "null,bench/null_handler.bpf.o,$NULL_N,0,-" >>"$RES/insns.csv"
echo "bench/null_handler.bpf.o,$NULL_N,$(breakdown "$NULL_ID")" >>"$RES/insns_breakdown.csv"
i=0
while read -r sample obj paper; do
	[ -n "$sample" ] || continue
	i=$((i + 1))
	if ! read -r n id < <(load "$obj" "ins$i"); then
		echo "insns: $obj did not load" >&2
		continue
	fi
	echo "$sample,$obj,$n,$((n - NULL_N)),$paper" >>"$RES/insns.csv"
	echo "$obj,$n,$(breakdown "$id")" >>"$RES/insns_breakdown.csv"
done <<<"$SAMPLES"
cat "$RES/insns.csv"
cat "$RES/insns_breakdown.csv"

if [ "$WRITE" = 1 ]; then
	python3 - "$RES/insns.csv" "$TOP/README.md" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = ["| sample | handler program | xlated insns, whole program | handler share (whole - null) | the paper's handler |",
       "|---|---|---|---|---|"]
for r in rows:
    out.append("| %s | `%s` | %s | %s | %s |" % (r["sample"], r["object"].split("/")[-1], r["insns"],
               r["handler_share"], r["paper"].replace("_", " ").replace("logP", "log P")))
readme = open(sys.argv[2]).read()
a, b = "<!-- insns-table: bench/insns.sh -w -->\n", "<!-- /insns-table -->\n"
i, j = readme.index(a) + len(a), readme.index(b)
open(sys.argv[2], "w").write(readme[:i] + "\n".join(out) + "\n" + readme[j:])
EOF
fi
