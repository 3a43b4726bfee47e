#!/bin/bash
# ovn.sh [-rounds N] [-govs PATH] [-base PATH]: OVN's Northbound and Southbound databases on govs' ovsdb-server against
# Debian's, with Debian's ovn-northd on top (each database in an ovsdb-server of its own, as ovn-ctl runs
# them). The workload: 200 ovn-nbctl calls of one command each (ls-add, lsp-add, lsp-set-addresses,
# lsp-set-port-security, acl-add), one ovn-nbctl call of 200 such commands, then the time ovn-northd takes
# to settle (`ovn-nbctl --wait=sb sync`). After it: the database files' sizes and the servers' RSS. Then,
# for more samples of the two figures that take 20-30 ms (mostly ovn-nbctl's and ovn-northd's own work,
# so that one sample swings by a third), eight more 200-command calls on new switches, each with its
# settle: the figures for the call and the settle are the medians of the nine. The servers' set-ups run
# side by side and each timed step alternates between them (see round); the order alternates round by
# round. Prints medians and ratios (debian/govs for times, > 1: govs faster; govs/debian for sizes, < 1:
# govs smaller). Needs Debian's openvswitch-switch and ovn-central.
# -base PATH adds a third server, another govs build (before a change), in the same rounds.
# Stops only the processes of its own pidfiles; needs no network namespace (unix sockets only).
set -u
rounds=2 govs="" base=""
while [ $# -gt 0 ]; do
  case "$1" in -rounds) rounds=$2; shift 2 ;; -govs) govs=$2; shift 2 ;; -base) base=$2; shift 2 ;; *) echo "usage: $0 [-rounds N] [-govs PATH] [-base PATH]" >&2; exit 2 ;; esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "$govs" ]; then
  govs=$top/bin/ovsdb-server
  (cd $top && CGO_ENABLED=0 go build -o bin/ovsdb-server ./ovsdb) || exit 1 # as make build does
fi
for f in /usr/sbin/ovsdb-server /usr/bin/ovn-northd /usr/bin/ovn-nbctl /usr/share/ovn/ovn-nb.ovsschema; do
  [ -e $f ] || { echo "ovn.sh: $f missing (openvswitch-switch, ovn-central)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/gvovn-XXXXXX)

stop() { # stop the daemons of directory $1 by their pidfiles
  for x in ovn-northd nb sb; do
    f=$1/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  done
}
cleanup() { stop $work/govs; stop $work/debian; stop $work/base; rm -rf $work; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# cmds FIRST LAST: the workload's commands for switches FIRST..LAST, ten per switch, one a line, quoted
# for eval.
cmds() {
  local k j m
  for k in $(seq $1 $2); do
    m=$(printf '%02x' $k)
    echo "ls-add sw$k"
    for j in 1 2 3; do
      echo "lsp-add sw$k sw$k-p$j"
      echo "lsp-set-addresses sw$k-p$j '00:00:00:00:$m:0$j 10.$k.0.$j'"
    done
    echo "lsp-add sw$k sw$k-p4"
    echo "lsp-set-port-security sw$k-p4 '00:00:00:00:$m:04 10.$k.0.4'"
    echo "acl-add sw$k to-lport 1000 ip4.src==10.$k.0.1 allow-related"
  done
}

now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
rss() { awk '/^VmRSS/ {print $2}' /proc/$(cat $1)/status; } # kB
cpu() { awk '{print $14 + $15}' /proc/$(cat $1)/stat; } # utime + stime, clock ticks

# The peers' set-ups run side by side and every timed step alternates between them (a call on one, the
# same call on the next, ...), so that the machine's drift, which moves a sequential run's figures by 20-30%,
# falls on all of them alike.
# setup PEER: its NB and SB servers and ovn-northd, synced.
setup() {
  local peer=$1 d=$work/$1 bin=/usr/sbin/ovsdb-server
  [ $peer = govs ] && bin=$govs
  [ $peer = base ] && bin=$base
  rm -rf $d; mkdir -p $d
  for db in nb sb; do
    ovsdb-tool create $d/$db.db /usr/share/ovn/ovn-$db.ovsschema >&2 || return 1
    $bin $d/$db.db --remote=punix:$d/$db.sock --pidfile=$d/$db.pid --unixctl=$d/$db.ctl \
      --log-file=$d/$db.log --detach --no-chdir >&2 || { echo "failed $db-server"; return 1; }
  done
  OVN_RUNDIR=$d OVN_LOGDIR=$d ovn-northd --ovnnb-db=unix:$d/nb.sock --ovnsb-db=unix:$d/sb.sock --pidfile=$d/ovn-northd.pid \
    --unixctl=$d/ovn-northd.ctl --log-file=$d/ovn-northd.log --detach --no-chdir >&2 || { echo "failed northd"; return 1; }
  nb $peer --wait=sb sync >&2 || { echo "failed first sync"; return 1; }
}
nb() { local d=$work/$1; shift; OVS_RUNDIR=$d ovn-nbctl --db=unix:$d/nb.sock --timeout=60 "$@"; }
# timed CMD: runs CMD (eval'd) and prints how long it took, in seconds; fails as CMD does.
timed() {
  local t0 t1
  t0=$(now)
  eval "$1" >&2 || return 1
  t1=$(now)
  echo "$t1 - $t0" | bc
}

# round PEERS...: one round of the workload on each peer, steps alternating between them; prints a line
# "PEER calls batch settle nb_bytes sb_bytes nb_rss_kb sb_rss_kb nb_cpu_ms lflows" per peer (or
# "PEER failed ..."); batch and settle are the medians of nine samples, nb_cpu_ms is the NB server's CPU
# time over the 200 single calls.
round() {
  local p c b out
  declare -A calls batches settles c0 fail rest
  for p in "$@"; do
    out=$(setup $p) || fail[$p]="$out"
    calls[$p]=0 c0[$p]=$(cpu $work/$p/nb.pid 2>/dev/null || echo 0)
  done
  while read -r c; do
    for p in "$@"; do
      [ -n "${fail[$p]:-}" ] && continue
      out=$(timed "nb $p $c") || { fail[$p]="failed: $c"; continue; }
      calls[$p]=$(echo "${calls[$p]} + $out" | bc)
    done
  done < <(cmds 0 19)
  for p in "$@"; do
    [ -n "${fail[$p]:-}" ] || c0[$p]=$(( ($(cpu $work/$p/nb.pid) - ${c0[$p]}) * 1000 / $(getconf CLK_TCK) ))
  done
  for b in 20 40 60 80 100 120 140 160 180; do
    for p in "$@"; do
      [ -n "${fail[$p]:-}" ] && continue
      out=$(timed "nb $p $(cmds $b $((b + 19)) | sed '1!s/^/-- /' | tr '\n' ' ')") || { fail[$p]="failed batch $b"; continue; }
      batches[$p]="${batches[$p]:-} $out"
      out=$(timed "nb $p --wait=sb sync") || { fail[$p]="failed sync $b"; continue; }
      settles[$p]="${settles[$p]:-} $out"
    done
    if [ $b = 20 ]; then
      # Sizes and RSS at rest: a few seconds after the first settle (govs gives a burst's garbage back
      # within 5 s).
      sleep 6
      for p in "$@"; do
        [ -n "${fail[$p]:-}" ] && continue
        local d=$work/$p
        rest[$p]="$(stat -c %s $d/nb.db) $(stat -c %s $d/sb.db) $(rss $d/nb.pid) $(rss $d/sb.pid)"
      done
    fi
  done
  for p in "$@"; do
    if [ -n "${fail[$p]:-}" ]; then
      echo "$p ${fail[$p]}"
    else
      local lflows
      lflows=$(ovsdb-client dump unix:$work/$p/sb.sock OVN_Southbound Logical_Flow _uuid | grep -c '^[0-9a-f]\{8\}-')
      echo "$p ${calls[$p]} $(median ${batches[$p]}) $(median ${settles[$p]}) ${rest[$p]} ${c0[$p]} $lflows"
    fi
    stop $work/$p
  done
}

declare -A res
for r in $(seq $rounds); do
  order="govs debian"; [ $((r % 2)) = 0 ] && order="debian govs"
  [ -n "$base" ] && { order="govs base debian"; [ $((r % 2)) = 0 ] && order="debian base govs"; }
  while read -r p out; do
    echo "round $r $p: $out" >&2
    res[$p]="${res[$p]:-}$out;"
  done < <(round $order)
done
python3 - "${res[govs]}" "${res[debian]}" "${res[base]:-}" <<'PY'
import statistics, sys
labels = [("200 ovn-nbctl calls, 1 command each", "s", True), ("1 ovn-nbctl call, 200 commands (9 calls)", "s", True),
          ("ovn-northd settle (--wait=sb sync; 9)", "s", True), ("NB file size", "KiB", False),
          ("SB file size", "KiB", False), ("NB server RSS", "MiB", False), ("SB server RSS", "MiB", False),
          ("NB server CPU, the 200 calls", "ms", True), ("SB Logical_Flow rows", "rows", None)]
scale = [1, 1, 1, 1 / 1024, 1 / 1024, 1 / 1024, 1 / 1024, 1, 1]
def cols(s):
    runs = [r.split() for r in s.split(";") if r.strip()]
    if not runs or any(r[0] == "failed" or len(r) != len(labels) for r in runs):
        return None, " ".join(" ".join(r) for r in runs if r and r[0] == "failed") or "no run"
    return [statistics.median(float(r[i]) for r in runs) * scale[i] for i in range(len(labels))], None
g, ge = cols(sys.argv[1])
d, de = cols(sys.argv[2])
if g is None or d is None:
    print("ovn.sh failed: govs: %s; debian: %s" % (ge or "ok", de or "ok"))
    sys.exit(1)
b, be = cols(sys.argv[3]) if sys.argv[3] else (None, None)
if be:
    print("ovn.sh: base failed: %s" % be)
    sys.exit(1)
print("| OVN workload (medians) | unit | debian ovsdb-server | govs ovsdb-server | ratio |" + (" govs-base | base ratio |" if b else ""))
print("|---|---|---|---|---|" + ("---|---|" if b else ""))
for i, (label, unit, time) in enumerate(labels):
    if time is None:
        ratio = "same" if g[i] == d[i] else "differ"
    else:
        ratio = "%.2fx" % ((d[i] / g[i]) if time else (g[i] / d[i])) if g[i] and d[i] else "n/a"
    f = "%.0f" if unit in ("KiB", "rows", "ms") else "%.2f" if unit == "s" else "%.1f"
    extra = ""
    if b:
        br = "same" if b[i] == d[i] else "differ"
        if time is not None:
            br = "%.2fx" % ((d[i] / b[i]) if time else (b[i] / d[i])) if b[i] and d[i] else "n/a"
        extra = " %s | %s |" % (f % b[i], br)
    print("| %s | %s | %s | %s | %s |%s" % (label, unit, f % d[i], f % g[i], ratio, extra))
print("ratios: debian/govs for times (> 1: govs faster), govs/debian for sizes (< 1: govs smaller)" + ("; base ratio likewise for govs-base" if b else ""))
PY
