#!/bin/bash
# ct.sh [-rounds N] [-secs S] [-fill N] [-rate PPS] [-peers LIST]: a stateful firewall between two namespaces,
# connections may only be opened from a. Namespace a (10.77.0.1, ab and iperf3 client) -- switch
# namespace s -- namespace b (10.77.0.2, nginx and iperf3 server). Peers (default govs,ovs,kernel):
#   govs, ovs: ovs-vswitchd (govs' bin/ or Debian's OVS 3.1, datapath_type=netdev; tx offload off in a and b
#     for OVS, as its userspace datapath needs) with Debian's ovsdb-server in s and these flows:
#       table=0 arp NORMAL; ip,ct_state=-trk ct(table=1); drop
#       table=1 +trk+new,in_port=a ct(commit),output:b; +trk+est (and +rel) both ways output; drop
#   kernel: a Linux bridge in s with nf_call_iptables and nftables (inet forward: ct state
#     established,related accept; ip saddr 10.77.0.1 (a; br_netfilter shows nftables the bridge, not its port,
#     as iif) ct state new accept; drop).
# Figures per peer: conn/s ab -c 1 and -c 64 (no keep-alive, nginx), iperf3 TCP Gbit/s through the firewall,
# then N (default 1000000) UDP 5-tuples sent from a at PPS datagrams/s (default 100000; up to 3 passes until
# 95% are in the table; b drops them unanswered; the kernel's UDP timeout in s is set to the 60 s of OVS and govs): entries in the table, memory per entry (userspace: the switch's VmRSS delta;
# kernel: /proc/slabinfo nf_conntrack active objects x object size delta), and ab -c 64 again with the
# table full. The kernel's nf_conntrack_max (a host-wide sysctl of the initial namespace) is raised to
# N+100000 for the run if it is lower, and restored at exit. Rounds interleave the peers. Prints medians and
# the ratios govs/ovs and govs/kernel. Needs root, ab, nginx, nft, iperf3, a built bin/ovs-vswitchd.
# Stops only the processes of its own pidfiles. CT_GOVS_ARGS: more arguments for govs' ovs-vswitchd (e.g.
# --pprof=pprof.sock, in its rundir $work/s, to profile it). Peer govs-base: govs' ovs-vswitchd of another
# build, CT_GOVS_BASE (before/after a change in one run). Peers govs-nofw, ovs-nofw, kernel-nofw: the same
# switches with no firewall (one NORMAL flow; a bridge without netfilter), conn/s and TCP only: what bounds a
# firewall on each.
set -u
rounds=2 secs=4 fill=1000000 rate=100000 peers=govs,ovs,kernel
while [ $# -gt 0 ]; do
  case "$1" in
  -rounds) rounds=$2; shift 2 ;; -secs) secs=$2; shift 2 ;; -fill) fill=$2; shift 2 ;;
  -rate) rate=$2; shift 2 ;; -peers) peers=$2; shift 2 ;;
  *) echo "usage: $0 [-rounds N] [-secs S] [-fill N] [-rate PPS] [-peers LIST]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd); top=$(cd $here/../.. && pwd)
for x in ab nginx nft iperf3; do command -v $x >/dev/null || { echo "ct.sh: $x missing" >&2; exit 1; }; done
[ -x $top/bin/ovs-vswitchd ] || { echo "ct.sh: $top/bin/ovs-vswitchd missing (make build)" >&2; exit 1; }
work=$(mktemp -d /tmp/gvct-XXXXXX)
p=gvct$$
nsa=$p-a nsb=$p-b nss=$p-s
ctmax=/proc/sys/net/netfilter/nf_conntrack_max
ctmax0=$(cat $ctmax 2>/dev/null) ctmaxset=
# setmax N: nf_conntrack_max is writable only in the initial network namespace (run.py raises it there)
setmax() { echo $1 2>/dev/null > $ctmax || nsenter --net=/proc/1/ns/net sh -c "echo $1 > $ctmax" 2>/dev/null; }

stop() { # the daemons of directory $1 (those named in $2, default all), by their pidfiles
  for x in ${2:-ovs-vswitchd ovsdb-server iperf3 nginx}; do
    f=$1/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    rm -f $f
  done
}
teardown() {
  stop $work/s; stop $work/b
  for n in $nsa $nsb $nss; do ip netns del $n 2>/dev/null; done
}
cleanup() {
  teardown; rm -rf $work
  [ -n "$ctmaxset" ] && setmax $ctmax0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

vsctl() { /usr/bin/ovs-vsctl --timeout=20 --db=unix:$work/s/db.sock "$@"; }
appctl() { /usr/bin/ovs-appctl --timeout=20 -t $work/s/ovs-vswitchd.ctl "$@"; }
rss_kib() { awk '/^VmRSS/ {print $2}' /proc/$(cat $work/s/ovs-vswitchd.pid)/status; }
slab_bytes() { awk '$1 == "nf_conntrack" {print $2 * $4}' /proc/slabinfo; }

# entries PEER: connections in the peer's table
entries() {
  case $1 in
  kernel) ip netns exec $nss cat /proc/sys/net/netfilter/nf_conntrack_count ;;
  *) appctl dpctl/ct-stats-show 2>/dev/null | awk '/Total:/ {print $2; exit}' ;;
  esac
}
# mem PEER: bytes the peer's table costs so far (see the header)
mem() {
  case $1 in kernel) slab_bytes ;; *) echo $(($(rss_kib) * 1024)) ;; esac
}

up() {
  local peer=$1 vs=$top/bin/ovs-vswitchd fw=1
  case $peer in *-nofw) fw=; peer=${peer%-nofw} ;; esac
  [ $peer = ovs ] && vs=/usr/sbin/ovs-vswitchd
  [ $peer = govs-base ] && vs=${CT_GOVS_BASE:?CT_GOVS_BASE names the govs-base peer\'s ovs-vswitchd}
  rm -rf $work/s $work/b; mkdir -p $work/s $work/b
  for n in $nsa $nsb $nss; do ip netns add $n || return 1; ip -n $n link set lo up; done
  ip -n $nsa link add eth0 type veth peer name pa netns $nss
  ip -n $nsb link add eth0 type veth peer name pb netns $nss
  for l in eth0:$nsa eth0:$nsb pa:$nss pb:$nss; do ip -n ${l#*:} link set ${l%:*} up; done
  ip -n $nsa addr add 10.77.0.1/24 dev eth0
  ip -n $nsb addr add 10.77.0.2/24 dev eth0
  ip netns exec $nsb nft -f - <<'N' || return 1
table ip sink {
  chain input {
    type filter hook input priority 0; policy accept;
    meta l4proto udp drop
  }
}
N
  case $peer in
  kernel)
    ip -n $nss link add br0 type bridge nf_call_iptables ${fw:-0} || return 1
    ip netns exec $nss sysctl -qw net.netfilter.nf_conntrack_udp_timeout=60 || return 1
    ip -n $nss link set pa master br0; ip -n $nss link set pb master br0; ip -n $nss link set br0 up
    [ -n "$fw" ] && { ip netns exec $nss nft -f - <<'N' || return 1; }
table inet fw {
  chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    ip saddr 10.77.0.1 ct state new accept
  }
}
N
    ;;
  *)
    if [ $peer = ovs ]; then
      ip netns exec $nsa ethtool -K eth0 tx off >/dev/null 2>&1
      ip netns exec $nsb ethtool -K eth0 tx off >/dev/null 2>&1
    fi
    local d=$work/s
    ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema >&2 || return 1
    ip netns exec $nss /usr/sbin/ovsdb-server $d/conf.db --remote=punix:$d/db.sock --pidfile=$d/ovsdb-server.pid \
      --unixctl=$d/ovsdb-server.ctl --detach --no-chdir --log-file=$d/ovsdb-server.log >&2 || return 1
    vsctl --no-wait init >&2
    local extra=; [ $peer != ovs ] && extra=${CT_GOVS_ARGS:-}
    OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d ip netns exec $nss $vs unix:$d/db.sock --pidfile=$d/ovs-vswitchd.pid \
      --unixctl=$d/ovs-vswitchd.ctl --detach --no-chdir --log-file=$d/ovs-vswitchd.log $extra >&2 || return 1
    vsctl add-br br0 -- set bridge br0 datapath_type=netdev fail_mode=secure \
      -- add-port br0 pa -- set Interface pa ofport_request=1 -- add-port br0 pb -- set Interface pb ofport_request=2 >&2 || return 1
    local flows=$work/flows
    [ -n "$fw" ] && cat > $flows <<'F'
table=0,priority=100,arp,actions=NORMAL
table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1)
table=0,priority=0,actions=drop
table=1,priority=10,ip,ct_state=+trk+new,in_port=1,actions=ct(commit),output:2
table=1,priority=10,ip,ct_state=+trk+est,in_port=1,actions=output:2
table=1,priority=10,ip,ct_state=+trk+est,in_port=2,actions=output:1
table=1,priority=10,ip,ct_state=+trk+rel,in_port=1,actions=output:2
table=1,priority=10,ip,ct_state=+trk+rel,in_port=2,actions=output:1
table=1,priority=0,actions=drop
F
    [ -z "$fw" ] && echo actions=NORMAL > $flows
    ip netns exec $nss ovs-ofctl add-flows unix:$d/br0.mgmt $flows >&2 || return 1
    ;;
  esac
  local i
  for i in $(seq 50); do ip netns exec $nsa ping -c 1 -W 1 10.77.0.2 >/dev/null 2>&1 && break; sleep 0.2; done
  ip netns exec $nsa ping -c 1 -W 1 10.77.0.2 >/dev/null 2>&1 || { echo "ct.sh: $peer: no ping through the firewall" >&2; return 1; }
  # the firewall holds: b may not open a connection to a
  if [ -n "$fw" ] && ip netns exec $nsb ping -c 1 -W 1 10.77.0.1 >/dev/null 2>&1; then
    echo "ct.sh: $peer: b reached a through the firewall" >&2; return 1
  fi
  cat > $work/b/nginx.conf <<C
worker_processes 1; daemon on; pid $work/b/nginx.pid; error_log $work/b/err.log;
events { worker_connections 4096; }
http { access_log off; server { listen 10.77.0.2:8080 backlog=4096; location / { return 200 "ok\n"; } } }
C
  ip netns exec $nsb nginx -c $work/b/nginx.conf -p $work/b >&2 || return 1
  for i in $(seq 50); do [ -s $work/b/nginx.pid ] && break; sleep 0.1; done
}

# cps N C: ab's requests per second, one new TCP connection per request
cps() {
  timeout 90 ip netns exec $nsa ab -q -r -s 5 -n $1 -c $2 http://10.77.0.2:8080/ 2>&1 |
    awk '/Requests per second/ {r=$4} /Failed requests/ {f=$3} END {if (r == "") print "0"; else print r}'
}
tcp() {
  ip netns exec $nsb iperf3 -s -1 -D -p 5201 -I $work/b/iperf3.pid; sleep 0.3
  timeout $((secs + 20)) ip netns exec $nsa iperf3 -J -c 10.77.0.2 -p 5201 -t $secs 2>/dev/null |
    python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))' 2>/dev/null || echo 0
  stop $work/b iperf3
}
# sweep N RATE: N UDP 5-tuples from a (16 source ports x N/16 destination ports), one datagram each, paced
# at RATE datagrams/s (b drops them unanswered)
sweep() {
  ip netns exec $nsa python3 - $1 $2 <<'P'
import socket, sys, time
n, rate = int(sys.argv[1]), int(sys.argv[2]); per = (n + 15) // 16
socks = []
for i in range(16):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("10.77.0.1", 40000 + i))
    socks.append(s)
d, t0, sent = b"x" * 18, time.monotonic(), 0
for port in range(1024, 1024 + per):
    for s in socks:
        try:
            s.sendto(d, ("10.77.0.2", port))
        except OSError:
            pass
    sent += 16
    if sent % 1024 == 0:
        ahead = sent / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
P
}

measure() {
  local peer=$1
  teardown
  up $peer || { echo "failed"; return; }
  local c1 c64 g e0 e1 m0 m1 c64f pass
  c1=$(cps 3000 1); c64=$(cps 10000 64); g=$(tcp)
  case $peer in *-nofw) echo "$c1 $c64 $g x x x x"; return ;; esac
  sleep 1
  e0=$(entries $peer); m0=$(mem $peer)
  for pass in 1 2 3; do
    sweep $fill $rate
    e1=$(entries $peer)
    [ "${e1:-0}" -ge $((fill * 95 / 100)) ] && break
  done
  m1=$(mem $peer)
  c64f=$(cps 10000 64)
  echo "$c1 $c64 $g ${e1:-0} $(( (m1 - m0) / ( ${e1:-0} - e0 > 0 ? ${e1:-0} - e0 : 1) )) $c64f $pass"
}

if [ -n "$ctmax0" ] && [ "$ctmax0" -lt $((fill + 100000)) ]; then
  if setmax $((fill + 100000)); then ctmaxset=1
  else echo "ct.sh: cannot raise nf_conntrack_max from $ctmax0 here: the kernel's table stops there" >&2; fi
fi
echo "kernel nf_conntrack_max $(cat $ctmax)"
IFS=, read -ra plist <<< "$peers"
declare -A res
. $here/rounds.sh
rounds $rounds "${plist[@]}"
teardown

python3 - "$peers" "$fill" <<P
import statistics, sys
peers = sys.argv[1].split(","); fill = int(sys.argv[2])
raw = {$(for peer in "${plist[@]}"; do printf '"%s": "%s", ' $peer "${res[$peer]}"; done)}
names = [("conn/s ab -c 1", "conn/s", True), ("conn/s ab -c 64", "conn/s", True), ("TCP 1 stream", "Gbit/s", True),
         ("entries after the UDP sweep of %d" % fill, "conns", True), ("memory per tracked connection", "bytes", False),
         ("conn/s ab -c 64, table full", "conn/s", True)]
val = {}
for p in peers:
    rows = [r.split() for r in raw[p].split(";") if r and r != "failed"]
    val[p] = [statistics.median(float(r[i]) for r in rows if r[i] != "x") if [r for r in rows if r[i] != "x"]
              else None for i in range(len(names))]
# govs against its peers; govs-nofw (no firewall at all) against the firewalls: the most any firewall in govs reaches
cmp = [(g, o) for g in ("govs", "govs-nofw") for o in ("ovs", "kernel") if o in peers and g in peers]
cmp += [(g, o) for g, o in (("govs-nofw", "kernel-nofw"), ("govs", "govs-nofw")) if o in peers and g in peers]
print("| figure | unit | " + " | ".join(peers) + "".join(" | %s/%s" % c for c in cmp) + " |")
print("|---|---|" + "---|" * (len(peers) + len(cmp)))
for i, (n, u, hib) in enumerate(names):
    f = lambda v: "n/a" if v is None else ("%.2f" % v if u == "Gbit/s" else "%.0f" % v)
    row = "| %s | %s | " % (n, u) + " | ".join(f(val[p][i]) for p in peers)
    for gp, c in cmp:
        g, o = val[gp][i], val[c][i]
        rr = None if not g or not o else (g / o if hib else o / g)
        row += " | " + ("n/a" if rr is None else "%.2fx" % rr)
    print(row + " |")
print("raw per round (c1 c64 tcp entries bytes/entry c64-full passes): " + "; ".join("%s: %s" % (p, raw[p]) for p in peers))
P
