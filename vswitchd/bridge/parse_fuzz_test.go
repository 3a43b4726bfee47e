package bridge

import (
	"strconv"
	"strings"
	"testing"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/schema/vswitchd"
)

// FuzzPortParse feeds Interface options and QoS other_config to the
// drivers' parsers: they must not panic, must report every value they
// ignore, and must parse the same row the same way twice (a snapshot
// compares equal to itself, so reconciling it again touches nothing).
func FuzzPortParse(f *testing.F) {
	for _, s := range [][3]string{
		{TypePatch, "peer", "p2"},
		{TypePatch, "peer", ""},
		{TypePatch, "color", "blue"},
		{TypeVhostUserClient, OptTxRetriesMax, "999"},
		{TypeVhostUserClient, OptDQZeroCopy, "maybe"},
		{TypeVhostUser, OptTxRetriesMax, "-1"},
		{TypeSystem, "foo", "bar"},
		{TypeSystem, OptNRxq, "2"},
		{TypeSystem, OptNRxq, "17"},
		{TypeSystem, OptNRxq, "0x2"},
		{"vxlan", "remote_ip", "1.2.3.4"},
		{QoSEgressPolicer, "cir", "18446744073709551616"},
		{QoSEgressPolicer, "cbs", "2048"},
		{"linux-htb", "max-rate", "1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, typ, key, value string) {
		opts := map[string]string{key: value}
		var problems []string
		spec := IfaceSpec{Name: "p1", Type: typ, Options: opts}
		errText := driverOf(typ).parse(&spec, parseEnv{VhostSockDir: "/run"}, &problems)
		again := IfaceSpec{Name: "p1", Type: typ, Options: opts}
		var problems2 []string
		if driverOf(typ).parse(&again, parseEnv{VhostSockDir: "/run"}, &problems2) != errText ||
			again.identity() != spec.identity() || len(problems) != len(problems2) {
			t.Fatalf("parsing %s %s=%q twice differs", typ, key, value)
		}
		if n, err := strconv.Atoi(value); typ == TypeSystem && key == OptNRxq && errText == "" && spec.RxQueues == 1 &&
			(err != nil || n != 1) && len(problems) == 0 {
			t.Fatalf("n_rxq=%q ignored silently", value)
		}
		if spec.RxQueues < 0 || spec.RxQueues > netdev.MaxRxQueues {
			t.Fatalf("n_rxq=%q gave %d queues", value, spec.RxQueues)
		}
		if _, ok := netdev.ParseXDPMode(value); typ == TypeAFXDP && key == OptXDPMode && !ok && errText == "" {
			t.Fatalf("xdp-mode=%q accepted", value)
		}
		if typ == TypeAFXDP && key == OptUseNeedWakeup && value != "true" && value != "false" && len(problems) == 0 {
			t.Fatalf("use-need-wakeup=%q ignored silently", value)
		}
		if typ == TypeVhostUserClient && key == OptTxRetriesMax && spec.TxRetries == 8 && value != "8" && len(problems) == 0 {
			t.Fatalf("tx-retries-max=%q ignored silently", value)
		}
		q := qosSpec("p1", &vswitchd.QoS{Type: typ, OtherConfig: opts}, nil, &problems)
		if typ != "" && typ != QoSEgressPolicer && typ != QoSTrTCMPolicer && q.Type != "" {
			t.Fatalf("QoS type %q runs", typ)
		}
		if typ != "" && q.Type == "" && !strings.Contains(strings.Join(problems, "\n"), "port p1: QoS") {
			t.Fatalf("QoS %s %s=%q refused silently", typ, key, value)
		}
	})
}
