package tests

// Ingress policing through govs' ovs-vswitchd, measured with iperf3 TCP
// between namespaces.

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// iperfReceived returns the receiver's rate, in bit/s, from iperf3 -J
// output.
func iperfReceived(t *testing.T, out string) float64 {
	t.Helper()
	var r struct {
		End struct {
			SumReceived struct {
				Seconds       float64 `json:"seconds"`
				Bytes         float64 `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.End.SumReceived.Seconds == 0 {
		t.Fatalf("iperf3 -J output (%v):\n%s", err, vswTail(out, 20))
	}
	return r.End.SumReceived.BitsPerSecond
}

// TestVswitchdIngressPolicing: ingress_policing_rate holds an iperf3 TCP
// stream entering the switch at the rate, the policer's drops show in the
// Interface's statistics, and a live change (policing off) applies
// without re-adding the port.
//
// Robust under load by construction: the upper bound is what a token
// bucket lets through at most, rate*T plus one burst, which holds however
// slow the machine is (iperf3 counts TCP payload, less than the policed
// frames); only the lower bound
// depends on TCP getting scheduled, so it is generous (half the rate: a
// loaded machine slows TCP but 20 Mbit/s needs little CPU).
func TestVswitchdIngressPolicing(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "pol-a", "10.74.0.1/24")
	b := vswAddNS(t, "pol-b", "10.74.0.2/24")
	e.mustVsctl("add-br", "gvswpolbr", "--", "add-port", "gvswpolbr", a.Host, "--", "add-port", "gvswpolbr", b.Host)
	a.waitPing("10.74.0.2")
	ofport := e.ofport(a.Host)
	logged := func(s string) bool {
		b, _ := os.ReadFile(e.logPath())
		return strings.Contains(string(b), s)
	}

	// The burst is OVS's advice for TCP (80% of the rate); over the
	// measured seconds it can add 8% at most.
	const rate, burst = 20000, 16000 // kbit/s, kbit
	const secs = 10
	e.mustVsctl("set", "interface", a.Host, "ingress_policing_rate="+strconv.Itoa(rate), "ingress_policing_burst="+strconv.Itoa(burst))
	vswWait(t, vswTimeout, "the policing to be logged", func() bool {
		return logged(a.Host + ": ingress policing rate 20000 kbps burst 16000 kb")
	})
	// -O 2: the first seconds, TCP's slow start, are left out of the
	// figure.
	got := iperfReceived(t, a.iperf(b, "10.74.0.2", "-J", "-O", "2", "-t", strconv.Itoa(secs)))
	ratio := got / (rate * 1000)
	t.Logf("policed at %d kbit/s (burst %d kbit): iperf3 TCP received %.2f Mbit/s, %.1f%% of the rate", rate, burst, got/1e6, 100*ratio)
	limit := 1 + float64(burst)/float64(rate*secs)
	if ratio > limit {
		t.Errorf("policing let %.1f%% of the rate through, more than a token bucket can (%.1f%%)", 100*ratio, 100*limit)
	}
	if ratio < 0.5 {
		t.Errorf("policing let only %.1f%% of the rate through", 100*ratio)
	}
	vswWait(t, vswTimeout, "the policer's drops in the statistics", func() bool {
		out, _ := e.vsctl("get", "interface", a.Host, "statistics:ovs_rx_qos_drops")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n > 0
	})

	// Live change: off, and the stream is no longer held.
	e.mustVsctl("set", "interface", a.Host, "ingress_policing_rate=0")
	vswWait(t, vswTimeout, "the policing to be turned off", func() bool {
		return logged(a.Host + ": ingress policing off")
	})
	free := iperfReceived(t, a.iperf(b, "10.74.0.2", "-J", "-t", "2"))
	t.Logf("not policed: %.2f Mbit/s", free/1e6)
	if free < 2*rate*1000 {
		t.Errorf("with policing off iperf3 reached only %.2f Mbit/s", free/1e6)
	}
	if e.ofport(a.Host) != ofport {
		t.Errorf("the port was re-added: ofport %d, was %d", e.ofport(a.Host), ofport)
	}

	// No silent no-ops: what govs does not run is logged, and an MTU the
	// device refuses is logged with the range it accepts.
	e.mustVsctl("set", "bridge", "gvswpolbr", "stp_enable=true", "--", "set", "interface", a.Host, "mtu_request=70000")
	for _, want := range []string{
		"bridge gvswpolbr: stp_enable=true (STP) is not supported by govs and has no effect",
		"failed to set MTU for network device " + a.Host + ": Invalid argument (mtu_request 70000; the device accepts 68..65535)",
	} {
		vswWait(t, vswTimeout, want, func() bool { return logged(want) })
	}
}

// TestVswitchdQoS: a Port's QoS egress-policer holds an iperf3 TCP stream
// leaving the switch through it at cir (robust under load as the ingress
// test is); qos/show prints it as OVS does; a QoS type govs does not run
// is logged and qos/show then says none runs, as OVS's does after its
// netdev refused the type.
func TestVswitchdQoS(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "qos-a", "10.73.0.1/24")
	b := vswAddNS(t, "qos-b", "10.73.0.2/24")
	e.mustVsctl("add-br", "gvswqosbr", "--", "add-port", "gvswqosbr", a.Host, "--", "add-port", "gvswqosbr", b.Host)
	a.waitPing("10.73.0.2")
	logged := func(s string) bool {
		b, _ := os.ReadFile(e.logPath())
		return strings.Contains(string(b), s)
	}

	// 2.5 MB/s is 20 Mbit/s; the burst can add 8% over the 10 s.
	const cir, cbs, secs = 2500000, 2000000, 10
	qos := e.mustVsctl("--", "set", "port", b.Host, "qos=@q", "--", "--id=@q", "create", "qos", "type=egress-policer",
		"other_config:cir="+strconv.Itoa(cir), "other_config:cbs="+strconv.Itoa(cbs))
	vswWait(t, vswTimeout, "the QoS to be logged", func() bool {
		return logged(b.Host + ": QoS egress-policer cir 2500000 cbs 2000000")
	})
	if out, want := e.mustAppctl("qos/show", b.Host), "QoS: "+b.Host+" egress-policer\ncbs: 2000000\ncir: 2500000\n"; out != want {
		t.Errorf("qos/show:\n%s\nwant:\n%s", out, want)
	}
	got := iperfReceived(t, a.iperf(b, "10.73.0.2", "-J", "-O", "2", "-t", strconv.Itoa(secs)))
	ratio := got / (cir * 8)
	t.Logf("egress-policer at %d bytes/s (cbs %d): iperf3 TCP received %.2f Mbit/s, %.1f%% of the rate", cir, cbs, got/1e6, 100*ratio)
	if limit := 1 + float64(cbs)/float64(cir*secs); ratio > limit {
		t.Errorf("the egress-policer let %.1f%% of the rate through, more than a token bucket can (%.1f%%)", 100*ratio, 100*limit)
	}
	if ratio < 0.5 {
		t.Errorf("the egress-policer let only %.1f%% of the rate through", 100*ratio)
	}
	vswWait(t, vswTimeout, "the egress-policer's drops in the statistics", func() bool {
		out, _ := e.vsctl("get", "interface", b.Host, "statistics:ovs_tx_qos_drops")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n > 0
	})

	// A type govs does not run: logged, and qos/show reports none.
	e.mustVsctl("set", "qos", qos, "type=linux-htb")
	vswWait(t, vswTimeout, "linux-htb to be reported", func() bool {
		return logged("port " + b.Host + ": QoS type linux-htb is not supported by the userspace datapath")
	})
	vswWait(t, vswTimeout, "the QoS to be removed", func() bool { return logged(b.Host + ": QoS off") })
	out, err := e.appctl("qos/show", b.Host)
	if want := "QoS not configured on " + b.Host; err == nil || !strings.Contains(out+err.Error(), want) {
		t.Errorf("qos/show after linux-htb: %q, %v; want %q", out, err, want)
	}
	if out, err := e.appctl("qos/show", "nosuch"); err == nil || !strings.Contains(out+err.Error(), "no such interface") {
		t.Errorf("qos/show nosuch: %q, %v", out, err)
	}
}
