package bridge

import (
	"strings"
	"testing"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/rstp"
)

func TestRSTPSpec(t *testing.T) {
	var problems []string
	if s := rstpSpec(vswitchd.Bridge{Name: "br0", OtherConfig: map[string]string{"rstp-priority": "4096"}}, &problems); s != nil {
		t.Errorf("rstp_enable=false: %+v", s)
	}
	br := vswitchd.Bridge{Name: "br0", RSTPEnable: true, OtherConfig: map[string]string{
		"rstp-address": "02:00:00:00:00:01", "rstp-priority": "4100", "rstp-max-age": "41",
		"rstp-forward-delay": "x", "rstp-transmit-hold-count": "3",
	}}
	s := rstpSpec(br, &problems)
	want := rstp.DefaultConfig([6]byte{})
	want.Priority, want.TransmitHoldCount = 4096, 3
	if s == nil || s.Config != want || s.Address.String() != "02:00:00:00:00:01" {
		t.Fatalf("rstpSpec: %+v", s)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], `invalid other_config:rstp-forward-delay="x"`) ||
		!strings.Contains(problems[1], "rstp-max-age 41 out of range 6..40, using 20") {
		t.Errorf("problems: %q", problems)
	}

	problems = nil
	p := rstpPortSpec("br0", vswitchd.Port{Name: "p1", OtherConfig: map[string]string{
		"rstp-port-num": "0x10", "rstp-port-priority": "250", "rstp-port-admin-edge": "TRUE", "rstp-port-auto-edge": "no",
	}}, &problems)
	wantPort := RSTPPortSpec{Enable: true, Config: rstp.PortConfig{Number: 16, Priority: 128, AdminEdge: true, AutoEdge: true}}
	if p != wantPort || len(problems) != 1 || !strings.Contains(problems[0], "rstp-port-priority 250 out of range") {
		t.Errorf("rstpPortSpec: %+v, %q", p, problems)
	}
	problems = nil
	if p := rstpPortSpec("br0", vswitchd.Port{Name: "p1", OtherConfig: map[string]string{"rstp-port-num": "5000"}}, &problems); p.Enable ||
		len(problems) != 1 || problems[0] != "port p1: invalid rstp-port-num" {
		t.Errorf("rstp-port-num=5000: %+v, %q", p, problems)
	}
	if p := rstpPortSpec("br0", vswitchd.Port{Name: "p1", OtherConfig: map[string]string{"rstp-enable": "false"}}, &problems); p.Enable {
		t.Errorf("rstp-enable=false: %+v", p)
	}
}

func TestRSTPUnsupportedKeys(t *testing.T) {
	var problems []string
	reportUnsupportedBridge(vswitchd.Bridge{Name: "br0", RSTPEnable: true, STPEnable: true,
		OtherConfig: map[string]string{"rstp-priority": "4096", "rstp-hello-time": "1"}}, &problems)
	want := []string{
		"br0: RSTP and STP are mutually exclusive but both are configured; enabling RSTP",
		"bridge br0: other_config:rstp-hello-time " + notRunning,
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}
