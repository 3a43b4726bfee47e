#!/bin/bash
# flowmod.sh [-n FLOWS] [-rounds N] [-l4]: the flow-mod rate of govs' ovs-vswitchd against Debian's (netdev
# datapath): seconds for `ovs-ofctl add-flows` of FLOWS flows (default 100000) into an empty bridge, and for
# the same with `-O OpenFlow14 --bundle` (one atomic bundle). Each switch runs with Debian's ovsdb-server in
# a network namespace of its own (the netdev datapath's tap ovs-netdev is per namespace); they alternate
# round by round. Prints seconds (median) and the ratio debian/govs (> 1: govs is faster). Needs root and a
# built bin/ovs-vswitchd (make build). Stops only the processes of its own pidfiles. FLOWMOD_GOVS_BASE=BINARY
# adds peer govs-base, another build's ovs-vswitchd, and the ratio govs-base/govs (a change before/after).
# Each figure also gives the switch's CPU seconds (user+system) for it: on a loaded machine the wall time
# mostly measures the load; and the switch's RSS (VmRSS) with the FLOWS flows in, after each. -l4: flows on
# L4 fields (tcp, tp_dst one of 100 besides each flow's nw_dst), whose subtable has OVS's L3 and L4 stages.
set -u
n=100000 rounds=2 l4=0
while [ $# -gt 0 ]; do
  case "$1" in -n) n=$2; shift 2 ;; -rounds) rounds=$2; shift 2 ;; -l4) l4=1; shift ;;
    *) echo "usage: $0 [-n FLOWS] [-rounds N] [-l4]" >&2; exit 2 ;; esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -x $top/bin/ovs-vswitchd ] || { echo "flowmod.sh: $top/bin/ovs-vswitchd missing (make build)" >&2; exit 1; }
work=$(mktemp -d /tmp/gvflowmod-XXXXXX)
ns=gvflowmod-$$
flows=$work/flows.txt
python3 - "$n" "$l4" > $flows <<'PY'
import sys
for i in range(int(sys.argv[1])):
    m = ("", ",in_port=1", ",nw_proto=17", ",nw_src=10.0.0.1")[i % 8] if i % 8 < 4 else ""
    if sys.argv[2] == "1":
        print("priority=%d,tcp,nw_dst=%d.%d.%d.%d,tp_dst=%d,actions=output:%d" % (100 + i % 4, 10 + (i >> 24), (i >> 16) & 255, (i >> 8) & 255, i & 255, 1 + i % 100, 1 + i % 3))
        continue
    print("priority=%d,ip,nw_dst=%d.%d.%d.%d%s,actions=output:%d" % (100 + i % 4, 10 + (i >> 24), (i >> 16) & 255, (i >> 8) & 255, i & 255, m, 1 + i % 3))
PY

stop() { # stop the daemons of directory $1 by their pidfiles
  for x in ovs-vswitchd ovsdb-server; do
    f=$1/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  done
}
cleanup() { stop $work/govs; stop $work/debian; ip netns del $ns 2>/dev/null; rm -rf $work; }
trap cleanup EXIT
trap 'exit 130' INT TERM
N="ip netns exec $ns"

# measure PEER: prints "add bundle addcpu bundlecpu" seconds (or "failed") and "addrss bundlerss" MB
measure() {
  local peer=$1 d=$work/$1
  rm -rf $d; mkdir -p $d
  ip netns add $ns || return 1 # a fresh namespace: nothing left by the previous switch
  export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d OVS_SYSCONFDIR=$d
  local V="/usr/bin/ovs-vsctl --timeout=20 --db=unix:$d/db.sock"
  ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema >&2
  $N /usr/sbin/ovsdb-server $d/conf.db --remote=punix:$d/db.sock --pidfile=$d/ovsdb-server.pid \
    --unixctl=$d/ovsdb-server.ctl --detach --no-chdir --log-file=$d/ovsdb-server.log >&2
  $V --no-wait init >&2
  local vs=/usr/sbin/ovs-vswitchd; [ $peer = govs ] && vs=$top/bin/ovs-vswitchd
  [ $peer = govs-base ] && vs=$FLOWMOD_GOVS_BASE
  $N $vs unix:$d/db.sock --pidfile=$d/ovs-vswitchd.pid --unixctl=$d/ovs-vswitchd.ctl --detach --no-chdir \
    --log-file=$d/ovs-vswitchd.log >&2
  $N $V add-br br0 -- set bridge br0 datapath_type=netdev protocols=OpenFlow10,OpenFlow13,OpenFlow14 >&2
  local res="" cpus="" rss="" pid=$(cat $d/ovs-vswitchd.pid) hz=$(getconf CLK_TCK)
  cpu() { awk '{print $14 + $15}' /proc/$pid/stat; }
  for mode in add bundle; do
    $N ovs-ofctl del-flows br0 >&2
    local opts=""; [ $mode = bundle ] && opts="-O OpenFlow14 --bundle"
    local c0=$(cpu) t0=$(date +%s.%N)
    if $N ovs-ofctl $opts add-flows br0 $flows 2>$d/err; then
      local t1=$(date +%s.%N) c1=$(cpu)
      cpus="$cpus $(echo "scale=2; ($c1 - $c0) / $hz" | bc)"
      rss="$rss $(awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' /proc/$pid/status)"
      local c=$($N ovs-ofctl dump-aggregate br0 | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
      if [ "$c" = "$n" ]; then res="$res $(echo "$t1 - $t0" | bc)"; else res="$res failed(count=$c)"; fi
    else
      res="$res failed($(tail -n1 $d/err | head -c 100 | tr ' \n' '__'))"
      cpus="$cpus failed" rss="$rss failed"
    fi
  done
  stop $d
  ip netns del $ns
  unset OVS_RUNDIR OVS_LOGDIR OVS_DBDIR OVS_SYSCONFDIR
  echo $res $cpus $rss
}

declare -A add bundle addcpu bundlecpu addrss bundlerss
peers="govs debian${FLOWMOD_GOVS_BASE:+ govs-base}"
for r in $(seq $rounds); do
  order=$peers; [ $((r % 2)) = 0 ] && order=$(echo $peers | tr ' ' '\n' | tac)
  for p in $order; do
    set -- $(measure $p) failed failed failed failed failed failed
    echo "round $r $p: add-flows ${1}s (switch CPU ${3}s, RSS ${5} MB), bundle ${2}s (switch CPU ${4}s, RSS ${6} MB), load $(cut -d' ' -f1 /proc/loadavg)" >&2
    add[$p]="${add[$p]:-} $1"; bundle[$p]="${bundle[$p]:-} $2"
    addcpu[$p]="${addcpu[$p]:-} $3"; bundlecpu[$p]="${bundlecpu[$p]:-} $4"
    addrss[$p]="${addrss[$p]:-} $5"; bundlerss[$p]="${bundlerss[$p]:-} $6"
  done
done
for kind in wall cpu rss; do
  if [ $kind = wall ]; then
    set -- "${add[govs]}" "${add[debian]}" "${bundle[govs]}" "${bundle[debian]}" "${add[govs-base]:-}" "${bundle[govs-base]:-}"
  elif [ $kind = cpu ]; then
    echo; echo "Switch CPU seconds (user+system) for the same:"; echo
    set -- "${addcpu[govs]}" "${addcpu[debian]}" "${bundlecpu[govs]}" "${bundlecpu[debian]}" "${addcpu[govs-base]:-}" "${bundlecpu[govs-base]:-}"
  else
    echo; echo "Switch RSS (MB) with the flows in, after each (ratio > 1: govs takes less):"; echo
    set -- "${addrss[govs]}" "${addrss[debian]}" "${bundlerss[govs]}" "${bundlerss[debian]}" "${addrss[govs-base]:-}" "${bundlerss[govs-base]:-}"
  fi
python3 - "$n" "$kind" "$@" <<'PY'
import statistics, sys
n, kind = sys.argv[1], sys.argv[2]
del sys.argv[1]
def med(s):
    v = []
    for x in s.split():
        try: v.append(float(x))
        except ValueError: return None, x
    return statistics.median(v), None
def table(other, gadd, gbundle, oadd, obundle):
    print("| %s flows, %s (median) | %s ovs-vswitchd | govs ovs-vswitchd | %s/govs |" % (n, "MB" if kind == "rss" else "seconds", other, other))
    print("|---|---|---|---|")
    for label, g, d in (("ovs-ofctl add-flows", gadd, oadd), ("ovs-ofctl -O OpenFlow14 --bundle add-flows", gbundle, obundle)):
        (gv, ge), (dv, de) = med(g), med(d)
        ratio = "%.2fx" % (dv / gv) if gv and dv else "n/a"
        print("| %s | %s | %s | %s |" % (label, "%.2f" % dv if dv else de, "%.2f" % gv if gv else ge, ratio))
table("debian", sys.argv[2], sys.argv[4], sys.argv[3], sys.argv[5])
if sys.argv[6]:
    print()
    table("govs-base", sys.argv[2], sys.argv[4], sys.argv[6], sys.argv[7])
PY
done
