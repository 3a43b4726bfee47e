#!/usr/bin/env python3
"""govs' network benchmark (make bench): govs, Debian's OVS 3.1 userspace datapath (tx offload off in the
namespaces), OVS with userspace-tso-enable=true and the Linux bridge, each on the two-namespace veth
topology of net/topo.sh, interleaved round by round, each torn down before the next comes up.

Sections (BENCH_SECTIONS, comma list, default all): net (the above), vhost (testpmd virtio-user txonly ->
switch -> testpmd rxonly over two vhost-user client ports, 64 and 1518 B, govs with dq-zero-copy=false and
=true against Debian's OVS-DPDK), multiflow (pps.sh with testpmd --txonly-multi-flow through govs, OVS 3.1
netdev and the bridge, plus the datapath's Go micro-benchmarks FlowSetup/ActiveFlows), ovsdb (ovsdbbench).
A run of only some sections writes results/<sections>-latest.* so that latest.* keeps the full run.

Peer govs-rxq2 (not in the default set: BENCH_PEERS=govs,govs-rxq2,bridge) is govs with options:n_rxq=2 on
both ports, govs-rxq2pm the same with other_config:pmd-cpu-mask=0x3 (queue 0 of each port on CPU 0, queue 1 on
CPU 1); govs-poll with GOVS_PMD_POLL=1 (workers poll their receive rings; meant for BENCH_PIN=1, where the switch
has CPU 0 to itself); govs-qbypass with GOVS_SYSTEM_QDISC_BYPASS=1; govs-txring with GOVS_SYSTEM_TX_RING=1; govs-afxdp with type=afxdp ports and govs-txoff with
system ports, both with tx checksum offload off on the namespaces' eth0 (AF_XDP needs it; govs-txoff is the
system-port baseline at the same offloads). BENCH_NET_TESTS (comma list of tcp1,tcp4,udp,udp0,tap,crr,pps) picks the net section's tests (udp0, the
highest UDP 8 KiB rate with loss <= 0.01%, is not in the default list: BENCH_UDP0_STEPS probes of BENCH_UDP0_SECS s).
BENCH_CRR_N sets ab -c 1's connections (default 3000). BENCH_PIN=1 pins the switch to CPU 0 (govs started under taskset) and the endpoints (iperf3, nginx, ab) to
CPU 1, and records for govs, during TCP 1 stream and ab -c 1, its CPU time (user/system, /proc/PID/stat),
its threads' context switches (/proc/PID/task/*/status) and each CPU's busy share (/proc/stat: the whole
machine's, other users included); BENCH_PROFILE=1 also takes a Go CPU profile of govs during each
(results/<run>-govs-tcp1.pprof, -crr1.pprof; `go tool pprof -top bin/ovs-vswitchd FILE`).

Everything runs inside a network namespace of its own (gvbench-PID) so that the switches' host-side
devices (ovs-netdev, br0, the veths' host ends, the internal ports' addresses) cannot collide with anything
else on the machine. Results: tests/bench/results/latest.json, latest.svg, latest.png (gnuplot), and a
table on stdout. Standard library only.
"""
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
NET = os.path.join(HERE, "net")
RESULTS = os.path.join(HERE, "results")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
SECS = int(os.environ.get("BENCH_SECS", "4"))
ALL_PEERS = ["govs", "govs-sockbuf", "ovs", "ovs-tso", "bridge"]
PIN = os.environ.get("BENCH_PIN") == "1"
PROFILE = os.environ.get("BENCH_PROFILE") == "1"
SWITCH_CPU, ENDPOINT_CPU = "0", "1"
ENDPOINT = ["taskset", "-c", ENDPOINT_CPU] if PIN else []
PEERS = [p for p in os.environ.get("BENCH_PEERS", ",".join(ALL_PEERS)).split(",") if p]
ALL_SECTIONS = ["net", "vhost", "multiflow", "ovsdb", "ovn", "flowmod", "bond", "ct", "tunnel", "ovnpipe"]
SECTIONS = [x for x in os.environ.get("BENCH_SECTIONS", ",".join(ALL_SECTIONS)).split(",") if x]
for _x in SECTIONS:
    if _x not in ALL_SECTIONS:
        sys.exit("run.sh: unknown BENCH_SECTIONS entry %r (have %s)" % (_x, ",".join(ALL_SECTIONS)))
# vhost section: peers (BENCH_VHOST_PEERS), frame sizes, testpmd seconds per measurement
ALL_VHOST_PEERS = ["govs", "govs-zc", "ovs-dpdk"]
VHOST_PEERS = [p for p in os.environ.get("BENCH_VHOST_PEERS", ",".join(ALL_VHOST_PEERS)).split(",") if p]
VHOST_SIZES = [int(x) for x in os.environ.get("BENCH_VHOST_SIZES", "64,1518").split(",") if x]
VHOST_SECS = int(os.environ.get("BENCH_VHOST_SECS", "14"))
# multiflow section: peers (BENCH_MF_PEERS) from the net section's set-ups
# tunnel section (net/tunnel.sh): peers and tests; govs-geneve is compared with ovs-geneve and kernel (vxlan: this
# kernel has no geneve module). govs-base-geneve runs the ovs-vswitchd named by TUN_GOVS_BASE (before/after a change
# in one run; in the default peers when it is set), govs-geneve-sockbuf sets userspace-sock-buf-size, govs-geneve-gso and
# govs-vxlan-gso set the tunnel's other_config:tunnel-udp-gso=true. Not in the defaults: govs-l2 and kernel-l2, the same
# two switches (govs bridges, Linux bridges) joined by the underlay veth without a tunnel, the bound of any tunnel on them.
TUN_PEERS = [p for p in os.environ.get("BENCH_TUN_PEERS", ("govs-base-geneve," if os.environ.get("TUN_GOVS_BASE") else "")
                                       + "govs-geneve,govs-geneve-gso,govs-vxlan,ovs-geneve,kernel").split(",") if p]
TUN_TESTS = [t for t in os.environ.get("BENCH_TUN_TESTS", "tcp1,crr,pps").split(",") if t]
TUN_METRICS = {
    "tcp1_gbps": ("TCP 1 stream, Gbit/s", True),
    "tcp1_retrans": ("TCP 1 stream retransmits", False),
    "ul_rx_dropped": ("underlay receive drops (switch b's ul rx_dropped)", False),
    "tcp1_cpu_per_gbit": ("switches' CPU s per Gbit (both chassis, TCP 1 stream)", False),
    "crr_cps": ("connections/s, ab -c 1", True),
    "pps64_rx_kpps": ("64 B frames from testpmd, received kpps", True),
    "pps64_tx_kpps": ("64 B frames from testpmd, offered kpps", None),
}
MF_PEERS = [p for p in os.environ.get("BENCH_MF_PEERS", "govs,ovs,bridge").split(",") if p]
MICRO_BENCH = ["go", "test", "-run", "XXX", "-bench", "FlowSetup|ActiveFlows|EMC", "-benchtime", "2000x", "./datapath/"]
COMPARE = ["govs-rxq2", "govs-rxq2pm", "govs-poll", "govs-ring64k", "govs-qbypass", "govs-txring", "govs-txoff", "govs-afxdp", "ovs", "ovs-tso", "bridge", "ovs-dpdk"]  # govs' ratio is printed against each of these
NET_COLS = ["govs", "govs-rxq2", "govs-rxq2pm", "govs-poll", "govs-ring64k", "govs-qbypass", "govs-txring", "govs-txoff", "govs-afxdp", "govs-sockbuf", "ovs", "ovs-tso", "bridge"]
ALL_COLS = ["govs", "govs-rxq2", "govs-rxq2pm", "govs-poll", "govs-ring64k", "govs-qbypass", "govs-txring", "govs-txoff", "govs-afxdp", "govs-sockbuf", "govs-zc", "ovs", "ovs-tso", "ovs-dpdk", "bridge"]
SOCKBUF = 1073741823

# name -> (label, unit, higher_is_better)
METRICS = {
    "tcp1_gbps": ("TCP 1 stream", "Gbit/s", True),
    "tcp4_gbps": ("TCP 4 streams (-P 4)", "Gbit/s", True),
    "tcp1_retrans": ("TCP 1 stream retransmits", "segments", False),
    "udp8k_rx_gbps": ("UDP 8 KiB @4G received", "Gbit/s", True),
    "udp8k_loss_pct": ("UDP 8 KiB @4G loss", "%", False),
    "pps64_rx_kpps": ("64 B testpmd received", "kpps", True),
    "pps64_tx_kpps": ("64 B testpmd offered", "kpps", None),
    "tap_tcp_gbps": ("TCP internal port -> veth", "Gbit/s", True),
    "crr_cps": ("conn/s ab -c 1 (no keep-alive)", "conn/s", True),
    "crr64_cps": ("conn/s ab -c 64 (no keep-alive)", "conn/s", True),
    "cpu_s_per_gbit": ("switch CPU per Gbit (TCP 1 stream)", "CPU s/Gbit", False),
    # where UDP 8 KiB datagrams are lost: at the switch (govs: its ports' Interface statistics, i.e. the
    # AF_PACKET sockets' PACKET_STATISTICS tp_drops as rx_dropped and refused sendmmsg frames as tx_dropped;
    # others: the veths' host ends' kernel drop counters) or at the receiver (its namespace's /proc/net/snmp).
    # "received" and "loss" count the datagrams the receiver's kernel delivered to a socket against those
    # iperf3 sent (iperf3's own loss figure reads near 0 when the receiver got nearly nothing: see udp())
    # udp0: binary search on iperf3 -b (UDP0_STEPS probes of UDP0_SECS s between 50 Mbit/s and 8 Gbit/s) for the
    # highest offered rate whose loss is <= 0.01%; the figure is what the receiver got at that rate
    "udp8k_zero_loss_gbps": ("UDP 8 KiB highest rate with loss <= 0.01%", "Gbit/s", True),
    "udp8k_switch_drops": ("UDP 8 KiB @4G frames dropped at the switch", "frames", False),
    "udp8k_rcv_drops": ("UDP 8 KiB @4G receiver UdpRcvbufErrors", "datagrams", False),
    "udp8k_reasm_fails": ("UDP 8 KiB @4G receiver fragments failing reassembly", "fragments", False),
    "tcp1_switch_drops": ("TCP 1 stream frames dropped at the switch", "frames", False),
}
# BENCH_PIN=1: where govs' time goes during TCP 1 stream (tcp1) and ab -c 1 (crr1), per second of the test
for _t, _l in (("tcp1", "TCP 1 stream"), ("crr1", "ab -c 1")):
    METRICS["%s_sw_user_pct" % _t] = ("pinned %s: switch user CPU" % _l, "% of a CPU", None)
    METRICS["%s_sw_sys_pct" % _t] = ("pinned %s: switch system CPU" % _l, "% of a CPU", None)
    METRICS["%s_sw_cs_per_s" % _t] = ("pinned %s: switch context switches" % _l, "/s", None)
    METRICS["%s_sw_ncs_per_s" % _t] = ("pinned %s: of them involuntary" % _l, "/s", None)
    METRICS["%s_cpu0_busy_pct" % _t] = ("pinned %s: CPU 0 (switch) busy, machine" % _l, "%", None)
    METRICS["%s_cpu1_busy_pct" % _t] = ("pinned %s: CPU 1 (endpoints) busy, machine" % _l, "%", None)
    METRICS["%s_cpu0_softirq_pct" % _t] = ("pinned %s: CPU 0 softirq" % _l, "%", None)
    METRICS["%s_cpu1_softirq_pct" % _t] = ("pinned %s: CPU 1 softirq" % _l, "%", None)
# section vhost: testpmd virtio-user txonly -> 2 vhost-user client ports -> testpmd rxonly (net/vhost-pps.sh)
VHOST_METRICS = {}
for _sz in [int(x) for x in os.environ.get("BENCH_VHOST_SIZES", "64,1518").split(",") if x]:
    VHOST_METRICS["vhost%d_rx_kpps" % _sz] = ("vhost-user %d B received" % _sz, "kpps", True)
    VHOST_METRICS["vhost%d_tx_kpps" % _sz] = ("vhost-user %d B offered" % _sz, "kpps", None)
    VHOST_METRICS["vhost%d_cpu_ns" % _sz] = ("vhost-user %d B switch CPU per frame offered" % _sz, "ns", False)
# section multiflow: pps.sh with testpmd --txonly-multi-flow
MF_LABEL = ("64 B testpmd --txonly-multi-flow received (256 IPv4 sources, fixed MACs and UDP ports: "
            "256 exact-match-cache flows, one NORMAL megaflow)")
MF_METRICS = {
    "mf64_rx_kpps": ("64 B testpmd multi-flow (256 src IPs) received", "kpps", True),
    "mf64_tx_kpps": ("64 B testpmd multi-flow (256 src IPs) offered", "kpps", None),
}
METRICS.update(VHOST_METRICS)
METRICS.update(MF_METRICS)
NET_METRICS = [m for m in METRICS if m not in VHOST_METRICS and m not in MF_METRICS]
# what each peer runs (govs-sockbuf: only UDP, it exists to show the socket-buffer key's effect)
PEER_TESTS = {
    "govs-sockbuf": ["udp", "udp0"],
    "govs-txoff": ["tcp1", "tcp4", "crr"],
}
UDP0_STEPS = int(os.environ.get("BENCH_UDP0_STEPS", "6"))
UDP0_SECS = int(os.environ.get("BENCH_UDP0_SECS", "2"))
# connections of ab -c 1: a pinned run wants a few seconds of them, not nginx's start-up, in its CPU figures
CRR_N = int(os.environ.get("BENCH_CRR_N", "3000"))
DEFAULT_TESTS = [t for t in os.environ.get("BENCH_NET_TESTS", "tcp1,tcp4,udp,tap,crr,pps").split(",") if t]

# prefixes are kept short: "gbgv-a0" etc. must fit in 15 characters
PID = os.getpid()


def peer_setup(name, workdir):
    """Returns (prefix, env, up argv, down argv, bridge local port or None, switch pidfile or None)."""
    env = dict(os.environ)
    if name.startswith("govs"):
        env.update(GOVS_PREFIX="bgv", GOVS_DIR=os.path.join(workdir, "govs"))
        if name in ("govs-rxq2", "govs-rxq2pm"):
            env["GOVS_NRXQ"] = "2"
        if name == "govs-qbypass":
            env["GOVS_SYSTEM_QDISC_BYPASS"] = "1"
        if name == "govs-txring":
            env["GOVS_SYSTEM_TX_RING"] = "1"
        if name in ("govs-afxdp", "govs-txoff"):
            # AF_XDP takes no partial checksums: both run with the senders' tx offload off
            env["GOVS_TXOFF"] = "1"
        if name == "govs-afxdp":
            env["GOVS_IFTYPE"] = "afxdp"
        if name == "govs-rxq2pm":
            env["GOVS_PMD_MASK"] = "0x3"
        if name == "govs-ring64k":
            # the first ring's geometry: 16 blocks of 15 slots of 64 KiB
            env.update(GOVS_RING_FRAME="65792", GOVS_RING_BLOCKS="16")
        if name == "govs-poll":
            # the workers poll (with BENCH_PIN=1 the switch has CPU 0 to itself)
            env["GOVS_PMD_POLL"] = "1"
        if PIN:
            env["GOVS_TASKSET"] = "taskset -c " + SWITCH_CPU
        if PROFILE:
            env["GOVS_PPROF"] = os.path.join(workdir, "govs", "pprof.sock")
        up = [os.path.join(NET, "peer-govs.sh"), "up"] + (["sockbuf"] if name == "govs-sockbuf" else [])
        return ("bgv", env, up, [os.path.join(NET, "peer-govs.sh"), "down"], "gbr0",
                os.path.join(workdir, "govs", "ovs-vswitchd.pid"))
    if name.startswith("ovs"):
        env.update(OVS_PREFIX="bref", OVS_DIR=os.path.join(workdir, "ovs"))
        up = [os.path.join(NET, "peer-ovs.sh"), "up"] + (["tso"] if name == "ovs-tso" else [])
        return ("bref", env, up, [os.path.join(NET, "peer-ovs.sh"), "down"], "br0",
                os.path.join(workdir, "ovs", "ovs-vswitchd.pid"))
    env.update(LB_PREFIX="blb")
    return ("blb", env, [os.path.join(NET, "peer-bridge.sh"), "up"],
            [os.path.join(NET, "peer-bridge.sh"), "down"], "lbr0", None)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(argv, env=None, timeout=120, check=True):
    # Like subprocess.run, but an interrupted child gets SIGTERM first (so the scripts' traps clean up).
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        so, se = p.communicate(timeout=timeout)
    except BaseException:
        p.terminate()
        try:
            p.communicate(timeout=15)
        except BaseException:
            p.kill()
            p.wait()
        raise
    r = subprocess.CompletedProcess(argv, p.returncode, so, se)
    if check and r.returncode != 0:
        raise RuntimeError("%s: rc %d: %s %s" % (" ".join(argv), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return r


def out(argv):
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "unavailable: %s" % e


# ---------------------------------------------------------------- setup (root namespace)

PKGS = {"openvswitch-switch": "/usr/sbin/ovs-vswitchd", "iperf3": "/usr/bin/iperf3", "nginx": "/usr/sbin/nginx",
        "apache2-utils": "/usr/bin/ab", "dpdk-dev": "/usr/bin/dpdk-testpmd", "ethtool": "/usr/sbin/ethtool",
        "iproute2": "/usr/sbin/ip", "iputils-ping": "/usr/bin/ping", "gnuplot-nox": "/usr/bin/gnuplot"}
if not set(SECTIONS) & {"net", "vhost", "multiflow", "tunnel"}:
    # ovsdb and flowmod need no traffic tools, bond iperf3, ethtool and ping only, ct also ab and nginx
    PKGS = {p: PKGS[p] for p in ("openvswitch-switch", "iproute2", "gnuplot-nox")
            + (("iperf3", "ethtool", "iputils-ping") if set(SECTIONS) & {"bond", "ct"} else ())
            + (("nginx", "apache2-utils") if "ct" in SECTIONS else ())}
if "ovn" in SECTIONS:
    PKGS["ovn-central"] = "/usr/bin/ovn-northd"
if "ovnpipe" in SECTIONS:
    PKGS.update({"ovn-central": "/usr/bin/ovn-northd", "ovn-host": "/usr/bin/ovn-controller", "iperf3": "/usr/bin/iperf3",
                 "iputils-ping": "/usr/bin/ping",
                 "dpdk-dev": "/usr/bin/dpdk-testpmd", "ethtool": "/usr/sbin/ethtool"})
if "ct" in SECTIONS:
    PKGS["nftables"] = "/usr/sbin/nft"
if "vhost" in SECTIONS and "ovs-dpdk" in VHOST_PEERS:
    # adds the ovs-vswitchd alternative at priority 50: Debian's default ovs-vswitchd (100) stays selected
    PKGS["openvswitch-switch-dpdk"] = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"


def install():
    missing = [p for p in PKGS if subprocess.run(["dpkg", "-s", p], stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL).returncode != 0]
    if missing and os.environ.get("BENCH_NO_INSTALL") != "1":
        log("installing", " ".join(missing))
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + missing, env=env).returncode != 0:
            subprocess.run(["apt-get", "update"], env=env)
            subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + missing, env=env, check=True)
    for p, path in PKGS.items():
        if not os.path.exists(path) and p != "gnuplot-nox":
            sys.exit("run.sh: %s (%s) is missing" % (path, p))


def outer():
    if os.geteuid() != 0:
        sys.exit("run.sh: needs root (network namespaces, hugepages)")
    install()
    log("building: make build")
    subprocess.run(["make", "-C", TOP, "build"], check=True)
    ns = "gvbench-%d" % PID
    hp = open("/proc/sys/vm/nr_hugepages").read().strip()
    # ct.sh fills the kernel's table with 1 M connections; its bound is a sysctl of this namespace only
    ctmax, ctmax0 = "/proc/sys/net/netfilter/nf_conntrack_max", None
    if "ct" in SECTIONS and os.path.exists(ctmax) and int(open(ctmax).read()) < 1100000:
        ctmax0 = open(ctmax).read().strip()
        open(ctmax, "w").write("1100000")
    sh(["ip", "netns", "add", ns])
    child = None

    def fwd(sig, _frame):
        if child and child.poll() is None:
            child.send_signal(sig)
    try:
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        signal.signal(signal.SIGTERM, fwd)
        signal.signal(signal.SIGINT, fwd)  # the child, in our process group, gets Ctrl-C itself too
        child = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__), "--inner", ns])
        rc = child.wait()
    finally:
        if child and child.poll() is None:
            child.terminate()
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                child.kill()
        subprocess.run(["ip", "netns", "del", ns])
        if ctmax0:
            open(ctmax, "w").write(ctmax0)
        try:
            if open("/proc/sys/vm/nr_hugepages").read().strip() != hp:
                open("/proc/sys/vm/nr_hugepages", "w").write(hp)
        except OSError:
            pass
    sys.exit(rc)


# ---------------------------------------------------------------- measurements (inside gvbench-PID)

class Interrupted(Exception):
    pass


def on_signal(_sig, _frame):
    raise Interrupted()


def proc_ticks(pidfile):
    try:
        pid = int(open(pidfile).read().strip())
        f = open("/proc/%d/stat" % pid).read()
        rest = f[f.rindex(")") + 2:].split()
        return int(rest[11]) + int(rest[12])  # utime, stime (fields 14, 15)
    except (OSError, ValueError):
        return None


class Runner:
    def __init__(self, workdir):
        self.workdir = workdir
        self.port = 5300 + PID % 500
        self.iperf_pid = os.path.join(workdir, "iperf3.pid")

    def iperf_server(self, prefix):
        if os.path.exists(self.iperf_pid):
            os.unlink(self.iperf_pid)
        sh(["ip", "netns", "exec", prefix + "-b"] + ENDPOINT + ["iperf3", "-s", "-1", "-D", "-p", str(self.port), "-I", self.iperf_pid])
        time.sleep(0.3)

    def kill_iperf_server(self):
        try:
            os.kill(int(open(self.iperf_pid).read().strip()), signal.SIGTERM)
        except (OSError, ValueError):
            pass

    def iperf(self, prefix, args, from_ns=True):
        self.iperf_server(prefix)
        argv = (["ip", "netns", "exec", prefix + "-a"] if from_ns else []) + ENDPOINT + \
            ["iperf3", "-J", "-c", "10.77.0.2", "-p", str(self.port), "-t", str(SECS)] + args
        try:
            r = sh(argv, timeout=SECS + 30, check=False)
            return json.loads(r.stdout)
        except (subprocess.TimeoutExpired, ValueError):
            return None
        finally:
            self.kill_iperf_server()

    def tcp(self, prefix, streams, pidfile=None, from_ns=True):
        t0 = proc_ticks(pidfile) if pidfile else None
        j = self.iperf(prefix, ["-P", str(streams)], from_ns)
        t1 = proc_ticks(pidfile) if pidfile else None
        try:
            e = j["end"]
            gbps = e["sum_received"]["bits_per_second"] / 1e9
            gbits = e["sum_received"]["bytes"] * 8 / 1e9
            res = {"gbps": gbps, "retrans": e["sum_sent"].get("retransmits")}
        except (KeyError, TypeError):
            return {"gbps": 0.0, "error": (j or {}).get("error", "no result")}
        if t0 is not None and t1 is not None and gbits > 0:
            res["cpu_s"] = (t1 - t0) / os.sysconf("SC_CLK_TCK")
            res["cpu_s_per_gbit"] = res["cpu_s"] / gbits
        return res

    def udp(self, prefix, rate="4G", secs=None):
        """iperf3 -u -l 8K at RATE from a to b. The loss is the share of the datagrams iperf3 sent that
        the receiver's kernel did not deliver to a socket (Udp InDatagrams in b's /proc/net/snmp):
        iperf3's own figure comes from its server's report, and a server that got (almost) nothing
        reports (almost) nothing lost, which is what happens when a switch drops some of each
        datagram's six fragments and the incomplete ones fill the receiver's reassembly memory
        (every later fragment then fails to reassemble, for ipfrag_time). So each measurement first
        waits for b to hold no fragment queue."""
        secs = secs or SECS
        waited = frag_wait(prefix)
        c0 = snmp(prefix + "-b")
        j = self.iperf(prefix, ["-u", "-b", rate, "-l", "8K", "-t", str(secs)])
        c1 = snmp(prefix + "-b")
        d = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
        try:
            sent = j["end"]["sum"]["packets"]
            offered = j["end"]["sum"]["bits_per_second"] / 1e9
        except (KeyError, TypeError):
            return {"gbps": 0.0, "loss": 100.0, "error": (j or {}).get("error", "no result"), "counters": d}
        got = min(d.get("Udp.InDatagrams", 0), sent)
        return {"gbps": got * 8192 * 8 / secs / 1e9, "loss": 100.0 * (1 - got / sent) if sent else 100.0,
                "offered_gbps": offered, "sent": sent, "delivered": got, "counters": d,
                "iperf3_loss": j["end"]["sum"].get("lost_percent"), "frag_wait_s": waited}

    def udp_zero_loss(self, prefix):
        """Binary search on iperf3 -b for the highest offered rate with loss <= 0.01% (loss as udp()
        counts it); returns {"gbps": received at that rate, "offered_mbps": its -b, "probes": [(mbps, loss), ...]}."""
        lo, hi, best = 50, 8000, {"gbps": 0.0, "offered_mbps": 0}
        probes = []
        for _ in range(UDP0_STEPS):
            mid = (lo + hi) // 2
            r = self.udp(prefix, "%dM" % mid, UDP0_SECS)
            loss, gbps = r["loss"], r["gbps"]
            probes.append((mid, round(loss, 4)))
            if loss <= 0.01:
                best, lo = {"gbps": gbps, "offered_mbps": mid}, mid
            else:
                hi = mid
        best["probes"] = probes
        return best

    def crr(self, prefix, n, c):
        env = dict(os.environ, BENCH_ENDPOINT_TASKSET=" ".join(ENDPOINT))
        r = sh([os.path.join(NET, "crr.sh"), prefix, str(n), str(c)], env=env, timeout=150, check=False)
        m = re.search(r"Requests per second:\s+([\d.]+)", r.stdout)
        f = re.search(r"Failed requests:\s+(\d+)", r.stdout)
        return {"cps": float(m.group(1)) if m else 0.0, "failed": int(f.group(1)) if f else None}

    def pps(self, prefix, txargs=""):
        env = dict(os.environ, PPS_TXARGS=txargs)
        r = sh([os.path.join(NET, "pps.sh"), prefix], env=env, timeout=60, check=False)
        m = re.search(r"tx_kpps (\d+) rx_kpps (\d+)", r.stdout)
        return {"tx": int(m.group(1)), "rx": int(m.group(2))} if m else {"tx": 0, "rx": 0, "error": r.stdout + r.stderr}


STATS_WAIT = 6  # govs writes Interface statistics every 5 s


def cpu_snapshot(pidfile):
    """The switch's CPU ticks (user, system) and its threads' context switches (voluntary, involuntary), and
    /proc/stat's ticks of CPUs 0 and 1 (busy, softirq, total), with the time."""
    s = {"t": time.time()}
    try:
        pid = int(open(pidfile).read().strip())
        f = open("/proc/%d/stat" % pid).read()
        rest = f[f.rindex(")") + 2:].split()
        s["utime"], s["stime"] = int(rest[11]), int(rest[12])
        vol = inv = 0
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                for l in open("/proc/%d/task/%s/status" % (pid, tid)):
                    if l.startswith("voluntary_ctxt_switches:"):
                        vol += int(l.split()[1])
                    elif l.startswith("nonvoluntary_ctxt_switches:"):
                        inv += int(l.split()[1])
            except OSError:
                pass  # a thread that exited
        s["vcs"], s["ncs"] = vol, inv
    except (OSError, ValueError, TypeError):
        pass
    for l in open("/proc/stat"):
        f = l.split()
        if f[0] in ("cpu0", "cpu1"):
            v = [int(x) for x in f[1:]]
            # user nice system idle iowait irq softirq steal ...
            s[f[0]] = {"busy": sum(v) - v[3] - v[4], "softirq": v[6], "total": sum(v)}
    return s


def cpu_delta(tag, a, b, s):
    """Adds to sample s what the switch and CPUs 0 and 1 did between snapshots a and b, per second."""
    secs = b["t"] - a["t"]
    hz = os.sysconf("SC_CLK_TCK")
    if "utime" in a and "utime" in b and secs > 0:
        s[tag + "_sw_user_pct"] = 100.0 * (b["utime"] - a["utime"]) / hz / secs
        s[tag + "_sw_sys_pct"] = 100.0 * (b["stime"] - a["stime"]) / hz / secs
        s[tag + "_sw_cs_per_s"] = (b["vcs"] + b["ncs"] - a["vcs"] - a["ncs"]) / secs
        s[tag + "_sw_ncs_per_s"] = (b["ncs"] - a["ncs"]) / secs
    for c in ("cpu0", "cpu1"):
        if c in a and c in b and b[c]["total"] > a[c]["total"]:
            tot = b[c]["total"] - a[c]["total"]
            s["%s_%s_busy_pct" % (tag, c)] = 100.0 * (b[c]["busy"] - a[c]["busy"]) / tot
            s["%s_%s_softirq_pct" % (tag, c)] = 100.0 * (b[c]["softirq"] - a[c]["softirq"]) / tot


class Profile:
    """A Go CPU profile of govs (BENCH_PROFILE=1) for the next secs seconds, fetched from its --pprof socket."""
    def __init__(self, name, env, tag, secs):
        self.p, self.out = None, None
        sock = env.get("GOVS_PPROF")
        if not (PROFILE and name.startswith("govs") and sock):
            return
        self.out = os.path.join(RESULTS, "%s-%s-%s.pprof" % (results_base(), name, tag))
        self.p = subprocess.Popen(["curl", "-s", "--unix-socket", sock, "-o", self.out,
                                   "http://govs/debug/pprof/profile?seconds=%d" % secs])

    def wait(self):
        if self.p:
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def wait_ping(name, prefix):
    """Waits (10 s at most) for the first packets to pass the switch between PREFIX-a and PREFIX-b."""
    for _ in range(50):
        if sh(["ip", "netns", "exec", prefix + "-a", "ping", "-c", "1", "-W", "1", "10.77.0.2"], check=False).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("%s: no ping through the switch" % name)


def switch_drops(name, prefix, env):
    """Frames dropped so far at the switch's two ports, and the per-counter detail (see METRICS)."""
    detail = {}
    if name.startswith("govs"):
        time.sleep(STATS_WAIT)
        db = "unix:" + os.path.join(env["GOVS_DIR"], "db.sock")
        for dev in (prefix + "-a0", prefix + "-b0"):
            r = sh(["ovs-vsctl", "--timeout=10", "--db=" + db, "get", "Interface", dev, "statistics"], check=False)
            for k, v in re.findall(r"(\w+)=(\d+)", r.stdout):
                if k in ("rx_dropped", "tx_dropped", "rx_errors", "tx_errors"):
                    detail["%s.%s" % (dev, k)] = int(v)
    else:
        for dev in (prefix + "-a0", prefix + "-b0"):
            for k in ("rx_dropped", "tx_dropped"):
                try:
                    detail["%s.%s" % (dev, k)] = int(open("/sys/class/net/%s/statistics/%s" % (dev, k)).read())
                except (OSError, ValueError):
                    pass
    return sum(v for k, v in detail.items() if k.endswith("_dropped")), detail


def snmp(ns):
    """Namespace NS's IP and UDP counters from its /proc/net/snmp, as {"Ip.InReceives": n, ...}
    (absolute, unlike nstat's deltas, whose history file all namespaces share)."""
    r = sh(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], check=False)
    out, names = {}, {}
    for line in r.stdout.splitlines():
        proto, _, rest = line.partition(":")
        if proto not in ("Ip", "Udp"):
            continue
        f = rest.split()
        if proto not in names:
            names[proto] = f
        else:
            out.update({"%s.%s" % (proto, k): int(v) for k, v in zip(names[proto], f) if v.lstrip("-").isdigit()})
    return out


def frag_wait(prefix, limit=40):
    """Waits until the receiver namespace holds no IPv4 fragment queue (FRAG inuse 0 in its
    /proc/net/sockstat: incomplete datagrams of an earlier test expire after ipfrag_time, 30 s); returns
    the seconds waited."""
    t = time.time()
    while time.time() - t < limit:
        r = sh(["ip", "netns", "exec", prefix + "-b", "cat", "/proc/net/sockstat"], check=False)
        m = re.search(r"^FRAG: inuse (\d+)", r.stdout, re.M)
        if not m or m.group(1) == "0":
            break
        time.sleep(0.5)
    return round(time.time() - t, 1)


def sockbuf_of(port):
    """SO_RCVBUF of the packet socket bound to PORT, from ss (shows whether the sock-buf key took effect)."""
    r = sh(["ss", "-0", "-m", "-p"], check=False)
    lines = r.stdout.splitlines()
    for i, l in enumerate(lines):
        if ("*:%s " % port) in l or l.rstrip().endswith("*:" + port):
            m = re.search(r"rb(\d+)", l + " " + (lines[i + 1] if i + 1 < len(lines) else ""))
            if m:
                return int(m.group(1))
    return None


def run_peer(name, rn, samples):
    workdir = rn.workdir
    prefix, env, up, down, local, pidfile = peer_setup(name, workdir)
    tests = PEER_TESTS.get(name, DEFAULT_TESTS)
    s = {"loadavg_before": open("/proc/loadavg").read().split()[:3]}
    sh(down, env=env, check=False)
    t = time.time()
    try:
        sh(up, env=env, timeout=60)
        wait_ping(name, prefix)
        if name.startswith("govs"):
            s["sock_rcvbuf"] = sockbuf_of(prefix + "-a0")
        drops0, _ = switch_drops(name, prefix, env)
        if "tcp1" in tests:
            c0 = cpu_snapshot(pidfile) if PIN else None
            prof = Profile(name, env, "tcp1", max(SECS - 1, 1))
            r = rn.tcp(prefix, 1, pidfile)
            prof.wait()
            if c0:
                cpu_delta("tcp1", c0, cpu_snapshot(pidfile), s)
            s["tcp1_gbps"], s["tcp1_retrans"] = r["gbps"], r.get("retrans")
            if "cpu_s_per_gbit" in r:
                s["cpu_s_per_gbit"] = r["cpu_s_per_gbit"]
            d, _ = switch_drops(name, prefix, env)
            s["tcp1_switch_drops"], drops0 = d - drops0, d
        if "tcp4" in tests:
            s["tcp4_gbps"] = rn.tcp(prefix, 4)["gbps"]
        if "udp" in tests:
            drops0, _ = switch_drops(name, prefix, env)
            r = rn.udp(prefix)
            s["udp8k_rx_gbps"], s["udp8k_loss_pct"] = r["gbps"], r["loss"]
            rcv = r.get("counters", {})
            d, detail = switch_drops(name, prefix, env)
            s["udp8k_switch_drops"], s["udp8k_rcv_drops"] = d - drops0, rcv.get("Udp.RcvbufErrors", 0)
            s["udp8k_drop_detail"] = {"switch_after": detail, "receiver": rcv}
            s["udp8k_rcv_datagrams"], s["udp8k_sent"] = r.get("delivered"), r.get("sent")
            s["udp8k_offered_gbps"], s["udp8k_iperf3_loss_pct"] = r.get("offered_gbps"), r.get("iperf3_loss")
            s["udp8k_reasm_fails"] = rcv.get("Ip.ReasmFails", 0)
        if "udp0" in tests:
            r = rn.udp_zero_loss(prefix)
            s["udp8k_zero_loss_gbps"], s["udp8k_zero_loss_probes"] = r["gbps"], r["probes"]
        if "tap" in tests:
            sh(["ip", "addr", "add", "10.77.0.3/24", "dev", local])
            sh(["ip", "link", "set", local, "up"])
            time.sleep(0.5)
            sh(["ping", "-c", "1", "-W", "2", "10.77.0.2"], check=False)
            s["tap_tcp_gbps"] = rn.tcp(prefix, 1, from_ns=False)["gbps"]
            sh(["ip", "addr", "del", "10.77.0.3/24", "dev", local], check=False)
        if "crr" in tests:
            c0 = cpu_snapshot(pidfile) if PIN else None
            prof = Profile(name, env, "crr1", 3)
            r = rn.crr(prefix, CRR_N, 1)
            prof.wait()
            if c0:
                cpu_delta("crr1", c0, cpu_snapshot(pidfile), s)
            s["crr_cps"], s["crr_failed"] = r["cps"], r["failed"]
            r = rn.crr(prefix, 10000, 64)
            s["crr64_cps"], s["crr64_failed"] = r["cps"], r["failed"]
        if "pps" in tests:
            r = rn.pps(prefix)
            s["pps64_tx_kpps"], s["pps64_rx_kpps"] = r["tx"], r["rx"]
    except RuntimeError as e:
        s["error"] = str(e)
        log("  error:", e)
    finally:
        if name.startswith("govs") and pidfile:
            gl = os.path.join(os.path.dirname(pidfile), "ovs-vswitchd.log")
            if os.path.exists(gl):
                shutil.copy(gl, os.path.join(RESULTS, "govs-last.log"))
        sh(down, env=env, check=False)
    s["seconds"] = round(time.time() - t, 1)
    s["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    samples.setdefault(name, []).append(s)
    log("  %s: %s" % (name, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in s.items()}))


def vhost_setup(name, d):
    """(env, up argv, down argv, db socket, switch pidfile) of a vhost-section peer whose frontends serve
    d/tx.sock and d/rx.sock."""
    env = dict(os.environ)
    if name.startswith("govs"):
        env["GOVS_DIR"] = os.path.join(d, "govs")
        sc = os.path.join(NET, "peer-govs-vhost.sh")
        return (env, [sc, "up", d] + (["zc"] if name == "govs-zc" else []), [sc, "down"],
                os.path.join(d, "govs", "db.sock"), os.path.join(d, "govs", "ovs-vswitchd.pid"))
    env["OVSDPDK_DIR"] = os.path.join(d, "ovs")
    sc = os.path.join(NET, "peer-ovs-dpdk.sh")
    return (env, [sc, "up", d], [sc, "down"], os.path.join(d, "ovs", "db.sock"),
            os.path.join(d, "ovs", "ovs-vswitchd.pid"))


def vsctl_map(db, *args):
    r = sh(["ovs-vsctl", "--timeout=10", "--db=unix:" + db, "get"] + list(args), check=False)
    return {k: v.strip('"') for k, v in re.findall(r'([\w-]+)=("[^"]*"|[^,}]*)', r.stdout)}


def run_vhost(name, size, rn, samples):
    """The switch comes up first with its two client ports (they retry every second), then vhost-pps.sh starts
    the testpmd servers; its figures skip the connection's first sample."""
    d = tempfile.mkdtemp(dir=rn.workdir, prefix="vh-")
    env, up, down, db, pidfile = vhost_setup(name, d)
    s = {"size": size, "loadavg_before": open("/proc/loadavg").read().split()[:3]}
    t = time.time()
    try:
        sh(up, env=env, timeout=90)
        t0 = proc_ticks(pidfile)
        vp = subprocess.Popen([os.path.join(NET, "vhost-pps.sh"), d, str(size), str(VHOST_SECS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # while the frontends still run: the ports' status and (govs: written every 5 s) statistics
            time.sleep(max(VHOST_SECS - 3, 1))
            st = vsctl_map(db, "Interface", "vh1", "status")
            s["vh1_status"] = {k: st[k] for k in ("status", "dq-zero-copy", "dq-zero-copy-active") if k in st}
            s["vh2_stats"] = {k: int(v) for k, v in vsctl_map(db, "Interface", "vh2", "statistics").items()
                              if k in ("tx_packets", "tx_dropped", "ovs_tx_retries", "ovs_tx_failure_drops")
                              and v.isdigit()}
            so, se = vp.communicate(timeout=VHOST_SECS + 60)
        except BaseException:
            vp.terminate()
            vp.communicate(timeout=30)
            raise
        t1 = proc_ticks(pidfile)
        m = re.search(r"tx_kpps (\d+) rx_kpps (\d+)", so)
        if not m:
            raise RuntimeError("vhost-pps.sh: %s %s" % (so[-500:], se[-500:]))
        s["vhost%d_tx_kpps" % size], s["vhost%d_rx_kpps" % size] = int(m.group(1)), int(m.group(2))
        for k in ("tx", "rx"):
            m = re.search(k + r"_series ([\d ]*)", so)
            if m:
                s[k + "_series_kpps"] = [int(x) for x in m.group(1).split()]
        if t0 is not None and t1 is not None:
            s["switch_cpu_s"] = round((t1 - t0) / os.sysconf("SC_CLK_TCK"), 2)
            # every 2 s sample's frames, ramp and tail included, as the CPU time covers the whole run
            offered = sum(s.get("tx_series_kpps", [])) * 1000 * 2
            if offered:
                s["vhost%d_cpu_ns" % size] = round(s["switch_cpu_s"] * 1e9 / offered, 1)
        v2 = s["vh2_stats"]
        if v2.get("tx_packets") is not None and v2.get("tx_dropped") is not None and v2["tx_packets"] + v2["tx_dropped"]:
            s["vh2_tx_drop_pct"] = round(100.0 * v2["tx_dropped"] / (v2["tx_packets"] + v2["tx_dropped"]), 1)
    except RuntimeError as e:
        s["error"] = str(e)
        log("  error:", e)
    finally:
        if name.startswith("govs"):
            gl = os.path.join(env["GOVS_DIR"], "ovs-vswitchd.log")
            if os.path.exists(gl):
                shutil.copy(gl, os.path.join(RESULTS, "govs-vhost-last.log"))
        sh(down, env=env, check=False, timeout=60)
        shutil.rmtree(d, ignore_errors=True)
    s["seconds"] = round(time.time() - t, 1)
    s["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    samples.setdefault(name, []).append(s)
    log("  %s %d B: %s" % (name, size, s))


def run_multiflow(name, rn, samples):
    prefix, env, up, down, _local, _pidfile = peer_setup(name, rn.workdir)
    s = {"loadavg_before": open("/proc/loadavg").read().split()[:3]}
    t = time.time()
    sh(down, env=env, check=False)
    try:
        sh(up, env=env, timeout=60)
        wait_ping(name, prefix)
        r = rn.pps(prefix, "--txonly-multi-flow")
        s["mf64_tx_kpps"], s["mf64_rx_kpps"] = r["tx"], r["rx"]
        if "error" in r:
            s["error"] = r["error"][-500:]
    except RuntimeError as e:
        s["error"] = str(e)
        log("  error:", e)
    finally:
        sh(down, env=env, check=False)
    s["seconds"] = round(time.time() - t, 1)
    s["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    samples.setdefault(name, []).append(s)
    log("  %s multi-flow: %s" % (name, s))


def micro_bench():
    """The datapath's Go benchmarks (flow setup and active flows); one op is one 32-frame batch."""
    try:
        r = subprocess.run(MICRO_BENCH, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    rows = []
    for l in r.stdout.splitlines():
        m = re.match(r"^Benchmark(\S+?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op(.*)$", l)
        if not m:
            continue
        extra = {u: float(v) for v, u in re.findall(r"([\d.]+) (\S+)", m.group(4))}
        ns = float(m.group(3))
        rows.append({"name": m.group(1), "n": int(m.group(2)), "ns_op": ns, "ns_per_frame": ns / 32,
                     "per_s": 32e9 / ns, "unit": "flows/s" if m.group(1).startswith("FlowSetup") else "frames/s",
                     "reported": extra})
    return {"rc": r.returncode, "cmd": " ".join(MICRO_BENCH), "output": r.stdout, "rows": rows}


def ovsdb_bench():
    src = os.path.join(HERE, "ovsdbbench")
    if not os.path.exists(os.path.join(src, "main.go")) or os.environ.get("BENCH_NO_OVSDB") == "1":
        return None
    exe = os.path.join(tempfile.mkdtemp(prefix="ovsdbbench-bin-"), "ovsdbbench")
    try:
        b = subprocess.run(["go", "build", "-o", exe, "./tests/bench/ovsdbbench"], cwd=TOP,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if b.returncode != 0:
            return {"error": "build: " + b.stdout[-1000:]}
        # BENCH_PIN=1: the servers on the switch's CPU, the clients on the endpoints'.
        pin = ["taskset", "-c", ENDPOINT_CPU] if PIN else []
        srv = ["-server-cpus", SWITCH_CPU] if PIN else []
        r = subprocess.run(pin + [exe, "-govs", os.path.join(TOP, "bin", "ovsdb-server"), "-secs", "2"] + srv, cwd=TOP,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    finally:
        shutil.rmtree(os.path.dirname(exe), ignore_errors=True)
    rows = []
    for l in r.stdout.splitlines():
        m = re.match(r"^(.*?)\s+(\S+)\s+(\S+)\s+([\d.]+|NaN|\+Inf)\s*$", l)
        if m and not l.startswith("measurement"):
            rows.append({"measurement": m.group(1).strip(), "debian": m.group(2), "govs": m.group(3),
                         "ratio": m.group(4)})
    return {"rc": r.returncode, "output": r.stdout, "rows": rows}


def flowmod_bench():
    """tests/bench/flowmod.sh: ovs-ofctl add-flows of 100000 flows, govs against Debian's ovs-vswitchd."""
    r = subprocess.run([os.path.join(HERE, "flowmod.sh"), "-rounds", str(ROUNDS)], cwd=TOP, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=1800)
    return {"rc": r.returncode, "output": r.stdout}


def ovn_bench():
    """tests/bench/ovn.sh: OVN's NB and SB on govs' ovsdb-server against Debian's, Debian's ovn-northd on top."""
    r = subprocess.run([os.path.join(HERE, "ovn.sh"), "-rounds", str(ROUNDS), "-govs",
                        os.path.join(TOP, "bin", "ovsdb-server")], cwd=TOP, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=1800)
    return {"rc": r.returncode, "output": r.stdout}


def tunnel_env(workdir, name):
    env = dict(os.environ, TUN_PREFIX="btn", TUN_DIR=os.path.join(workdir, "tun"))
    if name.endswith("-sockbuf"):
        env["TUN_SOCKBUF"] = "1073741823"
    return env


def switch_cpu(d):
    """utime+stime in seconds of the two chassis' ovs-vswitchd (their pidfiles under d), None without both."""
    t = 0.0
    for c in "ab":
        try:
            pid = open(os.path.join(d, c, "ovs-vswitchd.pid")).read().strip()
            f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        t += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    return t


def run_tunnel(name, rn, samples):
    """net/tunnel.sh: VIF to VIF across two chassis over a tunnel, one peer."""
    tn = os.path.join(NET, "tunnel.sh")
    env = tunnel_env(rn.workdir, name)
    kind = name[:-len("-sockbuf")] if name.endswith("-sockbuf") else name
    s = {"loadavg_before": open("/proc/loadavg").read().split()[:3]}
    sh([tn, "down"], env=env, check=False)
    t = time.time()
    try:
        sh([tn, "up", kind], env=env, timeout=60)
        wait_ping(name, "btn")
        if name in ("govs-geneve", "govs-vxlan", "govs-geneve-gso", "govs-vxlan-gso"):
            # the underlay ports move to their socket buffer once the tunnel's route is known (a few seconds at most)
            for _ in range(50):
                if all(out(["ovs-vsctl", "--db=unix:" + os.path.join(env["TUN_DIR"], c, "db.sock"), "get", "interface",
                            "ul", "status:rx_sock_buf"]).strip('"') == "8388608" for c in "ab"):
                    break
                time.sleep(0.2)
        if "tcp1" in TUN_TESTS:
            cpu0 = switch_cpu(env["TUN_DIR"])
            r = rn.tcp("btn", 1)
            cpu1 = switch_cpu(env["TUN_DIR"])
            s["tcp1_gbps"], s["tcp1_retrans"] = r["gbps"], r.get("retrans")
            if cpu0 is not None and cpu1 is not None and r["gbps"]:
                # CPU seconds of both switches over the run, per Gbit sent (gbps * seconds)
                s["tcp1_cpu_s"] = round(cpu1 - cpu0, 2)
                s["tcp1_cpu_per_gbit"] = round((cpu1 - cpu0) / (r["gbps"] * SECS), 3)
            if name.startswith("ovs") or name.startswith("govs"):
                time.sleep(STATS_WAIT)
                st = out(["ovs-vsctl", "--db=unix:" + os.path.join(env["TUN_DIR"], "b", "db.sock"), "get",
                          "interface", "ul", "statistics:rx_dropped"]).strip()
                s["ul_rx_dropped"] = int(st) if st.isdigit() else None
        if "crr" in TUN_TESTS:
            r = rn.crr("btn", CRR_N, 1)
            s["crr_cps"], s["crr_failed"] = r["cps"], r["failed"]
        if "pps" in TUN_TESTS:
            r = rn.pps("btn")
            s["pps64_tx_kpps"], s["pps64_rx_kpps"] = r["tx"], r["rx"]
    except RuntimeError as e:
        s["error"] = str(e)
        log("  error:", e)
    finally:
        sh([tn, "down"], env=env, check=False)
    s["seconds"] = round(time.time() - t, 1)
    samples.setdefault(name, []).append(s)
    log("  %s: %s" % (name, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in s.items()}))


def tunnel_lines(tsamples):
    """The tunnel section's table: medians per peer, govs-geneve's ratio to ovs-geneve and kernel."""
    peers = [p for p in TUN_PEERS if p in tsamples]
    v = {p: {m: med([s.get(m) for s in tsamples[p]]) for m in TUN_METRICS} for p in peers}
    cmp = [(g, p) for g in ("govs-geneve", "govs-geneve-gso") for p in ("ovs-geneve", "kernel") if p in v and g in v]
    # the two switches in series without a tunnel: what bounds any tunnel on them, against the kernel's tunnel
    cmp += [(g, p) for g, p in (("govs-l2", "kernel"), ("govs-l2", "kernel-l2"), ("govs-geneve-gso", "govs-l2"))
            if g in v and p in v]
    lines = ["| metric | " + " | ".join(peers) + "".join(" | %s:%s" % c for c in cmp) + " |",
             "|---" * (1 + len(peers) + len(cmp)) + "|"]
    for m, (label, hib) in TUN_METRICS.items():
        if all(v[p][m] is None for p in peers):
            continue
        row = [label] + [fmt(v[p][m], "kpps" if "kpps" in m or "cps" in m or "retrans" in m or "drop" in m
                             else "") for p in peers]
        for g, p in cmp:
            r = ratio(v[g][m], v[p][m], hib)
            row.append("%.2fx" % r if r else "")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def bond_bench():
    """tests/bench/bond.sh: iperf3 over a balance-tcp bond of two veths against one veth, govs and OVS."""
    r = subprocess.run([os.path.join(HERE, "bond.sh"), "-rounds", str(ROUNDS), "-secs", str(SECS)], cwd=TOP,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    return {"rc": r.returncode, "output": r.stdout}


def ct_bench():
    """tests/bench/ct.sh: a stateful firewall, govs against Debian's OVS (netdev) and the kernel's conntrack."""
    peers = ["-peers", os.environ["BENCH_CT_PEERS"]] if os.environ.get("BENCH_CT_PEERS") else []
    r = subprocess.run([os.path.join(HERE, "ct.sh"), "-rounds", str(ROUNDS), "-secs", str(SECS)] + peers, cwd=TOP,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3600)
    return {"rc": r.returncode, "output": r.stdout}


def ovnpipe_bench():
    """tests/bench/ovnpipe.sh: traffic through the OVN pipeline of one logical switch on govs and on Debian's OVS."""
    peers = ["-peers", os.environ["BENCH_OVNPIPE_PEERS"]] if os.environ.get("BENCH_OVNPIPE_PEERS") else []
    r = subprocess.run([os.path.join(HERE, "ovnpipe.sh"), "-rounds", str(ROUNDS), "-secs", str(SECS)] + peers, cwd=TOP,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3600)
    return {"rc": r.returncode, "output": r.stdout}


def med(vals):
    v = [x for x in vals if isinstance(x, (int, float))]
    return statistics.median(v) if v else None


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    if unit in ("kpps", "conn/s", "segments", "frames", "datagrams"):
        return "%.0f" % v
    if unit == "%":
        return "%.1f" % v
    return "%.2f" % v if v < 100 else "%.0f" % v


def ratio(g, p, hib):
    if g is None or p is None or hib is None:
        return None
    if p == 0 or g == 0:
        return None
    return g / p if hib else p / g  # > 1 means govs is better


def inner(ns):
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    os.makedirs(RESULTS, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="gvbench-")
    rn = Runner(workdir)
    samples, vsamples, msamples, tsamples = {}, {}, {}, {}
    started = datetime.datetime.now(datetime.timezone.utc)
    ovsdb = micro = flowmod = bond = ovn = ct = ovnpipe = None
    try:
        for rd in range(ROUNDS):
            if "net" in SECTIONS:
                # alternate the order round by round: the machine's load drifts over a run
                for name in (PEERS if rd % 2 == 0 else PEERS[::-1]):
                    log("round %d/%d: %s" % (rd + 1, ROUNDS, name))
                    run_peer(name, rn, samples)
            if "vhost" in SECTIONS:
                for size in VHOST_SIZES:
                    # alternate the order round by round
                    for name in (VHOST_PEERS if rd % 2 == 0 else VHOST_PEERS[::-1]):
                        log("round %d/%d: vhost %s %d B" % (rd + 1, ROUNDS, name, size))
                        run_vhost(name, size, rn, vsamples)
            if "tunnel" in SECTIONS:
                for name in (TUN_PEERS if rd % 2 == 0 else TUN_PEERS[::-1]):
                    log("round %d/%d: tunnel %s" % (rd + 1, ROUNDS, name))
                    run_tunnel(name, rn, tsamples)
            if "multiflow" in SECTIONS:
                for name in MF_PEERS:
                    log("round %d/%d: multi-flow %s" % (rd + 1, ROUNDS, name))
                    run_multiflow(name, rn, msamples)
        if "multiflow" in SECTIONS:
            log("go micro-benchmarks:", " ".join(MICRO_BENCH))
            micro = micro_bench()
        if "ovsdb" in SECTIONS:
            log("ovsdbbench")
            ovsdb = ovsdb_bench()
        if "ovn" in SECTIONS:
            log("ovn.sh")
            ovn = ovn_bench()
        if "flowmod" in SECTIONS:
            log("flowmod.sh")
            flowmod = flowmod_bench()
        if "bond" in SECTIONS:
            log("bond.sh")
            bond = bond_bench()
        if "ct" in SECTIONS:
            log("ct.sh")
            ct = ct_bench()
        if "ovnpipe" in SECTIONS:
            log("ovnpipe.sh")
            ovnpipe = ovnpipe_bench()
    except Interrupted:
        log("interrupted: cleaning up")
        cleanup(rn)
        sys.exit(130)
    finally:
        cleanup(rn)
    report(samples, ovsdb, started, ns, vsamples, msamples, micro, flowmod, bond, ovn, ct, tsamples, ovnpipe)


def cleanup(rn):
    rn.kill_iperf_server()
    for name in ("govs", "ovs", "bridge"):
        _, env, _, down, _, _ = peer_setup(name, rn.workdir)
        subprocess.run(down, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    vdirs = os.listdir(rn.workdir) if os.path.isdir(rn.workdir) else []
    for d in (os.path.join(rn.workdir, x) for x in vdirs if x.startswith("vh-")):
        for name in ("govs", "ovs-dpdk"):
            env, _, down, _, _ = vhost_setup(name, d)
            subprocess.run(down, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([os.path.join(NET, "tunnel.sh"), "down"], env=tunnel_env(rn.workdir, ""),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(rn.workdir, ignore_errors=True)


def machine():
    cpu = ""
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            cpu = l.split(":", 1)[1].strip()
            break
    mem = open("/proc/meminfo").readline().split()[1]
    osr = ""
    if os.path.exists("/etc/os-release"):
        m = re.search(r'PRETTY_NAME="([^"]*)"', open("/etc/os-release").read())
        osr = m.group(1) if m else ""
    return {"cpu": cpu, "cpus": os.cpu_count(), "mem_kib": int(mem), "kernel": os.uname().release, "os": osr,
            "go": out(["go", "version"]), "ovs": out(["/usr/sbin/ovs-vswitchd", "--version"]).splitlines()[0],
            "iperf3": out(["iperf3", "--version"]).splitlines()[0],
            "git": out(["git", "-C", TOP, "rev-parse", "HEAD"]),
            "git_dirty": bool(out(["git", "-C", TOP, "status", "--porcelain"]))}


def results_base():
    """latest for a run of all sections; otherwise e.g. vhost-multiflow-latest, so latest.* keeps the full run."""
    pin = "pin-" if PIN else ""
    if set(SECTIONS) == set(ALL_SECTIONS):
        return pin + "latest"
    return "-".join(x for x in ALL_SECTIONS if x in SECTIONS) + "-" + pin + "latest"


def report(samples, ovsdb, started, ns, vsamples=None, msamples=None, micro=None, flowmod=None, bond=None, ovn=None, ct=None,
           tsamples=None, ovnpipe=None):
    vsamples, msamples = vsamples or {}, msamples or {}
    allsamples = {}
    for src in (samples, vsamples, msamples):
        for p, ss in src.items():
            allsamples.setdefault(p, []).extend(ss)
    peers = [p for p in ALL_COLS if p in allsamples]
    values = {p: {m: med([s.get(m) for s in allsamples[p]]) for m in METRICS} for p in peers}
    ratios = {}
    for peer in COMPARE:
        if peer not in values or "govs" not in values:
            continue
        ratios[peer] = {m: ratio(values["govs"][m], values[peer][m], METRICS[m][2]) for m in METRICS}
    if "govs-sockbuf" in values and "govs" in values:
        for m in ("udp8k_rx_gbps", "udp8k_loss_pct"):
            values["govs-sockbuf"].setdefault(m, None)
    # vhost: govs (copy) and govs-zc against OVS-DPDK, and zero-copy against copy
    vratios = {}
    for a, b in (("govs", "ovs-dpdk"), ("govs-zc", "ovs-dpdk"), ("govs-zc", "govs")):
        if a in vsamples and b in vsamples:
            vratios["%s:%s" % (a, b)] = {m: ratio(values[a][m], values[b][m], METRICS[m][2]) for m in VHOST_METRICS}
    base = results_base()
    doc = {"date": started.isoformat(timespec="seconds"), "finished": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"), "machine": machine(), "rounds": ROUNDS,
        "sections": SECTIONS, "pinned": PIN, "iperf3_seconds": SECS, "vhost_seconds": VHOST_SECS, "netns": ns,
        "metrics": {m: {"label": l, "unit": u, "higher_is_better": h} for m, (l, u, h) in METRICS.items()},
        "values": values, "ratio_note": "govs/peer for higher-is-better metrics, peer/govs for lower-is-better: "
        "> 1 means govs is better", "ratios": ratios, "vhost_ratios": vratios, "samples": samples,
        "samples_vhost": vsamples, "samples_multiflow": msamples, "multiflow_note": MF_LABEL,
        "micro": micro, "ovsdb": ovsdb, "flowmod": flowmod, "bond": bond, "ovn": ovn, "ct": ct, "ovnpipe": ovnpipe,
        "samples_tunnel": tsamples or {}}
    with open(os.path.join(RESULTS, base + ".json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
    table = render_table(doc)
    with open(os.path.join(RESULTS, base + ".txt"), "w") as f:
        f.write(table)
    print(table)
    for ext in ("svg", "png"):
        if os.path.exists(os.path.join(RESULTS, base + "." + ext)):
            os.remove(os.path.join(RESULTS, base + "." + ext))
    svg(doc, os.path.join(RESULTS, base + ".svg"))
    png(doc, os.path.join(RESULTS, base + ".png"))
    written = [e for e in ("json", "txt", "svg", "png") if os.path.exists(os.path.join(RESULTS, base + "." + e))]
    why = "" if "png" in written else " (no png: gnuplot missing or failed)" if has_png_data(doc) else (
        " (no png: it plots govs' ratios in the net and ovsdb sections; the svg has every section)")
    print("results: %s/%s.{%s}%s" % (os.path.relpath(RESULTS, TOP), base, ",".join(written), why))


def table_lines(v, metrics, cols, rcols):
    """rcols: (heading, {metric: ratio}) pairs."""
    head = ["metric", "unit"] + cols + [h for h, _ in rcols]
    rows = []
    for m in metrics:
        label, unit, hib = METRICS[m]
        if all(v[p].get(m) is None for p in cols):
            continue
        if m == "cpu_s_per_gbit":
            row = [label, unit] + [fmt(v[p].get(m)) if v[p].get(m) is not None else "n/a" for p in cols]
        else:
            row = [label, unit] + [fmt(v[p].get(m), unit) for p in cols]
        row += [("%.2fx" % rr[m]) if rr.get(m) is not None else "n/a" for _, rr in rcols]
        rows.append(row)
    if not rows:
        return []
    w = [max(len(x[i]) for x in [head] + rows) for i in range(len(head))]
    fmtrow = lambda x: "| " + " | ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i]) for i, c in enumerate(x)) + " |"
    return [fmtrow(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [fmtrow(x) for x in rows]


def render_table(doc):
    v, r = doc["values"], doc["ratios"]
    net_metrics = [m for m in doc["metrics"] if m in NET_METRICS]
    vh_metrics = [m for m in doc["metrics"] if m in VHOST_METRICS]
    cols = [p for p in NET_COLS if p in v and any(v[p].get(m) is not None for m in net_metrics)]
    rcols = [("govs:" + p, r[p]) for p in COMPARE if p in r and p in cols]
    lines = ["govs network benchmark %s, %s, %d CPUs, kernel %s, %d round(s) interleaved, iperf3 %d s; medians" % (
        doc["date"], doc["machine"]["cpu"], doc["machine"]["cpus"], doc["machine"]["kernel"], doc["rounds"],
        doc["iperf3_seconds"])] + (["sections: %s" % ",".join(doc["sections"])] if "sections" in doc else []) + [""]
    nt = table_lines(v, net_metrics, cols, rcols)
    if nt:
        lines += ["ratios: govs/peer (peer/govs for loss, retransmits, CPU): > 1 means govs is better; govs-sockbuf "
                  "is govs with other_config:userspace-sock-buf-size=%d, govs-rxq2 with options:n_rxq=2" % SOCKBUF]
        if doc.get("pinned"):
            lines += ["pinned (BENCH_PIN=1): the switch on CPU %s, iperf3/nginx/ab on CPU %s; the bridge forwards in "
                      "the endpoints' softirq, on CPU %s" % (SWITCH_CPU, ENDPOINT_CPU, ENDPOINT_CPU)]
        lines += [""] + nt
    vcols = [p for p in ALL_VHOST_PEERS if p in v and any(v[p].get(m) is not None for m in vh_metrics)]
    vt = table_lines(v, vh_metrics, vcols, list(doc.get("vhost_ratios", {}).items()))
    if vt:
        lines += ["", "vhost-user packets per second (net/vhost-pps.sh, %d s per measurement, kpps = medians of 2 s "
                  "samples): testpmd virtio-user txonly -> switch -> testpmd rxonly over two dpdkvhostuserclient "
                  "ports; both testpmd forwarding threads on CPU 0; govs pinned to CPU 1 (taskset -c 1), OVS-DPDK's "
                  "PMD on CPU 1 (pmd-cpu-mask=0x2, its other threads unpinned). Both switches run a NORMAL bridge "
                  "(govs has no OpenFlow yet): testpmd rxonly never sends, so the frames to 02:00:00:00:00:02 are "
                  "flooded to vh2 and the bridge's local port. govs = options:dq-zero-copy=false, govs-zc = true; "
                  "ratios > 1 mean the first is faster. The receiving testpmd shares CPU 0 with the sender: when "
                  "every switch drops a share of frames at vh2 (below) and receives ~1000 kpps, that is the "
                  "receiver's limit, not the switch's; then the switch's CPU time per frame offered (its whole "
                  "CPU time over the run / the frames the sender sent) tells the switches apart. OVS-DPDK's PMD "
                  "busy-polls its CPU whatever the load, so its figure is the poll loop's, not its cost per "
                  "frame." % doc.get("vhost_seconds", 0), ""] + vt
        zc = sorted({str(s.get("vh1_status", {}).get("dq-zero-copy-active")) for s in
                     doc.get("samples_vhost", {}).get("govs-zc", [])})
        if zc:
            lines.append("govs-zc: status:dq-zero-copy-active on vh1 = %s" % ", ".join(zc))
        for p in vcols:
            cpu = [s.get("switch_cpu_s") for s in doc["samples_vhost"][p] if s.get("switch_cpu_s") is not None]
            drops = ["%s B %s%%" % (s.get("size"), s.get("vh2_tx_drop_pct")) for s in doc["samples_vhost"][p]]
            lines.append("%s: switch CPU s per %d s measurement %s; frames dropped at vh2 (receiver's ring full) %s" % (
                p, doc.get("vhost_seconds", 0), cpu, ", ".join(drops)))
    mcols = [p for p in NET_COLS if p in v and v[p].get("mf64_rx_kpps") is not None]
    if mcols:
        mr = [("govs:" + p, r[p]) for p in COMPARE if p in r and p in mcols]
        lines += ["", "Packet rate with many flows (net/pps.sh, PPS_TXARGS=--txonly-multi-flow): DPDK 22.11 testpmd "
                  "varies only the IPv4 source address (256 values, 198.18.X.3); MACs and UDP ports (9 -> 9) are "
                  "fixed, so these are 256 new exact-match-cache entries but a single megaflow for a NORMAL "
                  "(MAC-learning) switch: not a megaflow-setup test. govs:peer > 1 means govs is faster.", ""]
        lines += table_lines(v, list(MF_METRICS), mcols, mr)
        if "pps64_rx_kpps" in net_metrics and any(v[p].get("pps64_rx_kpps") is not None for p in mcols):
            lines.append("(single flow, the net section above: received %s)" % ", ".join(
                "%s %s" % (p, fmt(v[p].get("pps64_rx_kpps"), "kpps")) for p in mcols))
    la = [float(s[k][0]) for sec in ("samples_vhost", "samples_multiflow") for ss in doc.get(sec, {}).values()
          for s in ss for k in ("loadavg_before", "loadavg_after") if s.get(k)]
    if la:
        lines += ["", "1-minute load average around the vhost/multi-flow measurements: %.2f-%.2f (on 2 CPUs; above "
                  "~2 means other work shared the machine)" % (min(la), max(la))]
    mi = doc.get("micro")
    if mi and mi.get("rows"):
        lines += ["", "datapath flow setup, Go micro-benchmarks (%s; one op = one 32-frame batch through a worker: "
                  "FlowSetup = every frame a new flow, upcall + install; ActiveFlows = frames cycling through N "
                  "installed flows):" % mi["cmd"], "",
                  "| benchmark | ns/op | ns/frame | derived rate |", "|---|---|---|---|"]
        lines += ["| %s | %.0f | %.1f | %s %s |" % (x["name"], x["ns_op"], x["ns_per_frame"],
                  ("%.0f" % x["per_s"]) if x["unit"] == "flows/s" else "%.2f M" % (x["per_s"] / 1e6), x["unit"])
                  for x in mi["rows"]]
    elif mi:
        lines += ["", "Go micro-benchmarks failed: %s" % (mi.get("error") or mi.get("output", "")[-500:])]
    sb = [s.get("sock_rcvbuf") for s in doc["samples"].get("govs-sockbuf", [])]
    sd = [s.get("sock_rcvbuf") for s in doc["samples"].get("govs", [])]
    if sb:
        lines.append("")
        lines.append("govs packet-socket SO_RCVBUF (ss -0 -m): default %s, with userspace-sock-buf-size %s%s" % (
            sd, sb, " -> the key had NO effect" if sb == sd else ""))
    o = doc.get("ovsdb")
    if o and o.get("rows"):
        lines += ["", "OVSDB (tests/bench/ovsdbbench -secs 2; ratio govs/debian, latency debian/govs):", ""]
        lines.append("| measurement | debian ovsdb-server | govs ovsdb-server | ratio |")
        lines.append("|---|---|---|---|")
        lines += ["| %s | %s | %s | %sx |" % (x["measurement"], x["debian"], x["govs"], x["ratio"]) for x in o["rows"]]
    elif o:
        lines += ["", "OVSDB bench failed: %s" % (o.get("error") or o.get("output", "")[-500:])]
    ov = doc.get("ovn")
    if ov:
        lines += ["", "OVN workload (tests/bench/ovn.sh; Debian's ovn-northd on each server):", ""]
        lines += [l for l in ov["output"].splitlines() if l.startswith("|") or l.startswith("ratios:")] or [
            "ovn.sh failed: " + ov["output"][-500:]]
    fm = doc.get("flowmod")
    if fm:
        lines += ["", "Flow-mod rate (tests/bench/flowmod.sh; ratio debian/govs seconds, > 1: govs faster):", ""]
        lines += [l for l in fm["output"].splitlines() if l.startswith("|")] or [
            "flowmod.sh failed: " + fm["output"][-500:]]
    bd = doc.get("bond")
    if bd:
        lines += ["", "Bond (tests/bench/bond.sh; balance-tcp bond of two veths with LACP against one veth, "
                  "switch to switch):", ""]
        lines += [l for l in bd["output"].splitlines() if l.startswith("|") or l == ""] or [
            "bond.sh failed: " + bd["output"][-500:]]
    ct = doc.get("ct")
    if ct:
        lines += ["", "Conntrack (tests/bench/ct.sh; a stateful firewall: OpenFlow ct() flows in govs and Debian's OVS "
                  "(netdev), a Linux bridge with nftables ct state rules in the kernel; ratios > 1: govs better):", ""]
        lines += [l for l in ct["output"].splitlines() if l.startswith(("|", "raw ", "kernel "))] or [
            "ct.sh failed: " + ct["output"][-500:]]
    op = doc.get("ovnpipe")
    if op:
        lines += ["", "OVN pipeline (tests/bench/ovnpipe.sh; one logical switch, two namespace VIFs, Debian's OVN 23.03 "
                  "programming br-int; +ct: with allow-related ACLs and a load balancer; ratios > 1: govs better):", ""]
        lines += [l for l in op["output"].splitlines() if l.startswith(("|", "govs OVN", "raw "))] or [
            "ovnpipe.sh failed: " + op["output"][-500:]]
    if doc.get("samples_tunnel"):
        lines += ["", "Tunnels (tests/bench/net/tunnel.sh; VIF to VIF across two chassis namespaces joined by a veth "
                  "underlay, VIF MTU 1450; kernel = vxlan devices on Linux bridges, this kernel has no geneve; "
                  "ratios > 1: govs-geneve better):", ""] + tunnel_lines(doc["samples_tunnel"])
    errs = ["%s %s %d: %s" % (sec, p, i + 1, s["error"]) for sec in ("samples", "samples_vhost", "samples_multiflow",
                                                                       "samples_tunnel")
            for p, ss in doc.get(sec, {}).items() for i, s in enumerate(ss) if s.get("error")]
    if errs:
        lines += [""] + ["error: " + e for e in errs]
    return "\n".join(lines) + "\n"


COLORS = {"govs": "#1b7837", "govs-rxq2": "#a6dba0", "govs-rxq2pm": "#c2e699", "govs-poll": "#5e3c99", "govs-ring64k": "#e08214", "govs-qbypass": "#d9f0d3", "govs-txring": "#4d9221", "govs-txoff": "#00441b", "govs-afxdp": "#762a83", "govs-sockbuf": "#7fbf7b", "govs-zc": "#5aae61", "ovs": "#b2182b", "ovs-tso": "#ef8a62",
          "ovs-dpdk": "#762a83", "bridge": "#2166ac"}


OVSDB_COLORS = {"debian ovsdb-server": "#e08214", "govs ovsdb-server": COLORS["govs"]}


def ovsdb_figures(doc):
    """The OVSDB rows as (label, debian, govs, ratio, higher_is_better); ovsdbbench's ratio is
    already > 1 when govs is better."""
    o = doc.get("ovsdb") or {}
    figs = []
    for x in o.get("rows") or []:
        try:
            d, g, r = float(x["debian"]), float(x["govs"]), float(x["ratio"])
        except (KeyError, ValueError):
            continue
        label = x["measurement"]
        figs.append(("OVSDB " + label, d, g, r, not (label.startswith("ms ") or label.startswith("server CPU"))))
    return figs


# The sections whose scripts print their own markdown tables: (doc key, chart heading).
TABLE_SECTIONS = [("flowmod", "Flow-mod rate"), ("ovn", "OVN workload"), ("ct", "Conntrack"),
                  ("ovnpipe", "OVN pipeline"), ("bond", "Bond")]


def md_tables(lines):
    """The markdown tables in lines, each as (header cells, rows of cells), separator rows dropped."""
    tables, cur = [], None
    for l in lines:
        if not l.startswith("|"):
            cur = None
            continue
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if cur is None:
            cur = (cells, [])
            tables.append(cur)
        else:
            cur[1].append(cells)
    return tables


def lead_number(cell):
    """The number a table cell starts with ("54 of 150" -> 54), None for n/a, ratios and text."""
    m = re.match(r"\s*(-?[0-9]+(?:\.[0-9]+)?)(\s|$)", cell)
    return float(m.group(1)) if m else None


def value_cols(head, rows):
    """The columns of a table that hold one switch's figure each: some cell starts with a number (ratio cells,
    "1.09x", do not), and the heading is not the unit, the runs or the bond's packet counts."""
    skip = lambda h: h.lower() in ("unit", "runs") or h.lower().startswith("packets")
    return [j for j in range(1, len(head)) if not skip(head[j])
            and any(j < len(r) and lead_number(r[j]) is not None for r in rows)]


def section_panels(doc):
    """Chart panels for the table sections: (heading, subtitle, [(bar name, value)]). A table row becomes a
    panel with one bar per switch column; a table with a single value column becomes one panel with a bar
    per row (the bond section's). Ratios and units are left to the tables."""
    tabs = [(title, [l for l in (doc.get(key) or {}).get("output", "").splitlines()])
            for key, title in TABLE_SECTIONS if doc.get(key)]
    if doc.get("samples_tunnel"):
        tabs.append(("Tunnels", tunnel_lines(doc["samples_tunnel"])))
    panels = []
    for title, lines in tabs:
        for head, rows in md_tables(lines):
            vcols = value_cols(head, rows)
            ucol = next((j for j in range(1, len(head)) if head[j].lower() == "unit"), None)
            if len(vcols) == 1:
                j = vcols[0]
                bars = [(r[0], lead_number(r[j])) for r in rows if j < len(r)]
                bars = [(n, x) for n, x in bars if x is not None]
                if bars:
                    panels.append((title, head[0], bars))
                continue
            for r in rows:
                bars = [(head[j], lead_number(r[j])) for j in vcols if j < len(r)]
                bars = [(n, x) for n, x in bars if x is not None]
                if bars:
                    sub = r[0] + (" (%s)" % r[ucol] if ucol is not None and ucol < len(r) and r[ucol] else "")
                    panels.append((title, sub, bars))
    return panels


def bar_color(name):
    """A switch's colour by the name a section's table gives it."""
    n = name.lower()
    if n in OVSDB_COLORS:
        return OVSDB_COLORS[n]
    for key in ("govs-base", "govs", "ovs-dpdk", "ovs", "kernel", "bridge"):
        if n.startswith(key) or n.startswith("debian " + key) or (key == "ovs" and n.startswith("debian")):
            return {"govs-base": "#999999", "kernel": COLORS["bridge"]}.get(key, COLORS.get(key, "#666666"))
    return "#666666"


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(doc, path):
    """Small multiples by hand: one panel per metric, one bar per switch."""
    v = doc["values"]
    peers = [p for p in COLORS if p in v]
    ms = [m for m in METRICS if METRICS[m][2] is not None and m != "tcp1_retrans"
          and any(v[p].get(m) is not None for p in peers)]
    figs = ovsdb_figures(doc)
    panels = section_panels(doc)
    pw, ph, cols = 250, 190, 3
    rows_n = (len(ms) + len(figs) + len(panels) + cols - 1) // cols
    W, H = cols * pw + 20, rows_n * ph + 90
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % esc(
             ("govs vs OVS 3.1 (netdev, DPDK) vs Linux bridge: veths between namespaces, vhost-user (%s, %d CPUs)"
              if ms else "govs' ovsdb-server vs Debian's ovsdb-server 3.1 (%s, %d CPUs)" if figs and not panels
              else "govs vs Debian's OVS 3.1 and the kernel: " + ", ".join(dict.fromkeys(t for t, _, _ in panels)) +
              " (%s, %d CPUs)") % (doc["date"][:10], doc["machine"]["cpus"]))]
    x = 10
    for p in peers:
        o.append('<rect x="%d" y="30" width="12" height="12" fill="%s"/><text x="%d" y="40">%s</text>' % (x, COLORS[p], x + 16, p))
        x += 30 + 7 * len(p)
    for i, m in enumerate(ms):
        label, unit, hib = METRICS[m]
        ox, oy = 10 + (i % cols) * pw, 60 + (i // cols) * ph
        vals = [(p, v[p].get(m)) for p in peers if v[p].get(m) is not None]
        top = max([val for _, val in vals] + [1e-9])
        o.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (ox, oy + 12, esc(label)))
        o.append('<text x="%d" y="%d" fill="#555">%s%s</text>' % (ox, oy + 25, esc(unit), "" if hib else " (lower is better)"))
        bh, bw, base = ph - 70, (pw - 30) // max(len(peers), 1), oy + ph - 30
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (ox, base, ox + pw - 20, base))
        for j, p in enumerate(peers):
            val = v[p].get(m)
            if val is None:
                continue
            h = bh * val / top
            bx = ox + j * bw + 3
            o.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>' % (bx, base - h, bw - 6, h, COLORS[p]))
            o.append('<text x="%d" y="%.1f" font-size="9" text-anchor="middle">%s</text>' % (
                bx + (bw - 6) / 2, base - h - 2, fmt(val, unit)))
    # OVSDB: Debian's ovsdb-server against govs', one panel per figure.
    for k, (label, d, g, _, hib) in enumerate(figs):
        i = len(ms) + k
        ox, oy = 10 + (i % cols) * pw, 60 + (i // cols) * ph
        o.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (ox, oy + 12, esc(label)))
        o.append('<text x="%d" y="%d" fill="#555">%s</text>' % (ox, oy + 25, "" if hib else "lower is better"))
        bh, bw, base = ph - 70, (pw - 30) // 2, oy + ph - 30
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (ox, base, ox + pw - 20, base))
        top = max(d, g, 1e-9)
        for j, (name, val) in enumerate(zip(OVSDB_COLORS, (d, g))):
            h = bh * val / top
            bx = ox + j * bw + 3
            o.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>' % (bx, base - h, bw - 6, h, OVSDB_COLORS[name]))
            o.append('<text x="%d" y="%.1f" font-size="9" text-anchor="middle">%s</text>' % (
                bx + (bw - 6) / 2, base - h - 2, ("%.0f" % val) if val >= 100 else "%.2f" % val))
            o.append('<text x="%d" y="%d" font-size="9" text-anchor="middle">%s</text>' % (bx + (bw - 6) / 2, base + 12, esc(name)))
    # The table sections: one panel per figure, a bar per switch named under it.
    for k, (title, sub, bars) in enumerate(panels):
        i = len(ms) + len(figs) + k
        ox, oy = 10 + (i % cols) * pw, 60 + (i // cols) * ph
        o.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (ox, oy + 12, esc(title)))
        o.append('<text x="%d" y="%d" fill="#555" font-size="9">%s</text>' % (ox, oy + 25, esc(sub[:48])))
        bh, bw, base = ph - 70, (pw - 30) // max(len(bars), 1), oy + ph - 30
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (ox, base, ox + pw - 20, base))
        top = max([val for _, val in bars] + [1e-9])
        for j, (name, val) in enumerate(bars):
            h = bh * max(val, 0) / top
            bx = ox + j * bw + 3
            o.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>' % (bx, base - h, bw - 6, h, bar_color(name)))
            o.append('<text x="%d" y="%.1f" font-size="9" text-anchor="middle">%s</text>' % (
                bx + (bw - 6) / 2, base - h - 2, ("%.0f" % val) if val >= 100 else "%.3g" % val))
            short = name.replace(" ovs-vswitchd", "").replace(" ovsdb-server", "")
            o.append('<text x="%d" y="%d" font-size="8" text-anchor="middle">%s</text>' % (
                bx + (bw - 6) / 2, base + 12 + (9 * (j % 2) if len(bars) > 3 else 0), esc(short[:14])))
    o.append('<text x="10" y="%d" fill="#555">%s</text>' % (H - 10, esc(
        "medians of %d interleaved rounds; tests/bench/run.sh; git %s" % (doc["rounds"], doc["machine"]["git"][:12]))))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def png_data(doc):
    """What the png plots: the net peers govs is compared with, their metrics, and the OVSDB figures."""
    r = doc["ratios"]
    peers = [p for p in COMPARE if p in r]
    ms = [m for m in METRICS if METRICS[m][2] is not None and any(r[p].get(m) for p in peers)]
    return peers, ms, ovsdb_figures(doc)


def has_png_data(doc):
    peers, ms, figs = png_data(doc)
    return bool(figs or (ms and peers))


def png(doc, path):
    """govs' ratio to each peer per metric, log scale, with gnuplot if it is installed."""
    if not shutil.which("gnuplot") or not has_png_data(doc):
        return
    r = doc["ratios"]
    peers, ms, figs = png_data(doc)
    cols = ["govs:%s" % p for p in peers] + (["govs:debian-ovsdb-server"] if figs else [])
    colors = [COLORS[p] for p in peers] + ([OVSDB_COLORS["debian ovsdb-server"]] if figs else [])
    d = tempfile.mkdtemp(prefix="gvbench-plot-")
    try:
        with open(os.path.join(d, "data"), "w") as f:
            f.write('metric ' + " ".join('"%s"' % c for c in cols) + "\n")
            for m in ms:
                f.write('"%s" ' % METRICS[m][0].replace('"', "") + " ".join(
                    ("%.4f" % r[p][m]) if r[p].get(m) else "NaN" for p in peers) + (" NaN" if figs else "") + "\n")
            for label, _, _, ratio_, _ in figs:
                f.write('"%s" ' % label.replace('"', "") + "NaN " * len(peers) + ("%.4f" % ratio_) + "\n")
        term = "pngcairo size 1100,620" if "cairo" in out(["gnuplot", "-e", "set terminal"]) else "png size 1100,620"
        script = """set terminal %s
set output '%s'
set title "govs' ratio to each switch (>1: govs better; lower-is-better metrics inverted), %s"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set logscale y 2
set termoption noenhanced
set grid ytics
set key top right autotitle columnhead
set xtics rotate by 30 right scale 0 font ",9"
set bmargin 12
set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb "black" lw 2
plot %s
""" % (term, path, doc["date"][:10], ", ".join(
            "'%s/data' using %d:xtic(1) lc rgb '%s'" % (d, i + 2, c) for i, c in enumerate(colors)))
        with open(os.path.join(d, "plot.gp"), "w") as f:
            f.write(script)
        g = subprocess.run(["gnuplot", os.path.join(d, "plot.gp")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if g.returncode != 0:
            log("gnuplot:", g.stdout[-500:])
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--inner":
        inner(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "--report":  # redraw from a saved json
        doc = json.load(open(sys.argv[2]))
        print(render_table(doc))
        base = os.path.join(RESULTS, os.path.basename(sys.argv[2])[:-len(".json")])
        svg(doc, base + ".svg")
        png(doc, base + ".png")
    else:
        outer()
