package ofp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The files under testdata/ were captured between Debian's ovs-ofctl and
// ovs-vswitchd 3.1 (datapath_type=netdev, bridge gofcap0 with internal
// port gofcapi as ofport 1 and veth gofcapa as ofport 2): requests/ holds
// what ovs-ofctl sent, debian/ replies the encoders must reproduce.

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "debian", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// one returns the only message of a reply.
func one(t *testing.T, msgs [][]byte) []byte {
	t.Helper()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	return msgs[0]
}

func mac(s string) (m [6]byte) {
	fmt.Sscanf(s, "%02x:%02x:%02x:%02x:%02x:%02x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5])
	return m
}

// capturedPorts are the capture's ports in the order OVS sent them.
func capturedPorts() []Port {
	speed := Port{Curr: Feature10GBFD | FeatureCopper, CurrSpeed: 10000000}
	local, internal, veth := speed, speed, speed
	local.No, local.HWAddr, local.Name = PortLocal, mac("72:06:61:19:90:40"), "gofcap0"
	local.Config, local.State = PortConfigDown, PortStateDown
	internal.No, internal.HWAddr, internal.Name = 1, mac("fa:b2:db:ce:06:4f"), "gofcapi"
	internal.Config, internal.State = PortConfigDown, PortStateDown
	veth.No, veth.HWAddr, veth.Name, veth.State = 2, mac("a2:82:ab:ca:21:18"), "gofcapa", PortStateLive
	return []Port{local, internal, veth}
}

func TestEncodeMatchesOVS(t *testing.T) {
	caps := map[Version]uint32{V10: 0xc7, V11: 0xcf, V12: 0x4f, V13: 0x4f, V14: 0x24f, V15: 0x24f}
	for v := V10; v <= V15; v++ {
		t.Run("features-"+v.String(), func(t *testing.T) {
			f := &Features{DatapathID: 0x0000720661199040, NTables: 254, Capabilities: caps[v], Ports: capturedPorts()}
			if v == V10 {
				f.Actions = 0xfff
			}
			got := EncodeFeaturesReply(v, 2, f)
			if want := golden(t, fmt.Sprintf("features-reply-of1%d.bin", v-1)); !bytes.Equal(got, want) {
				t.Errorf("got\n%x\nwant\n%x", got, want)
			}
		})
	}
	flowStats := []FlowStats{{Priority: 0, Actions: []Action{{Type: ActOutput, Port: PortNormal}}}}
	ports := capturedPorts()
	portStats := func(d0, d1, d2 time.Duration, rx, rxb uint64) []PortStats {
		return []PortStats{
			{No: PortLocal, TxDropped: 4, Duration: d0},
			{No: 1, TxDropped: 4, Duration: d1},
			{No: 2, RxPackets: rx, TxPackets: rx, RxBytes: rxb, TxBytes: rxb, Duration: d2},
		}
	}
	tables := func(v Version) []TableStats {
		ts := make([]TableStats, 254)
		for i := range ts {
			ts[i] = TableStats{ID: uint8(i), MaxEntries: 1000000, Wildcards10: 0x3fffff}
		}
		ts[0].Active, ts[0].Lookup, ts[0].Matched = 1, 3, 3
		return ts
	}
	desc := &Desc{Manufacturer: "Nicira, Inc.", Hardware: "Open vSwitch", Software: "3.1.0", Serial: "None", Datapath: "None"}
	for _, tc := range []struct {
		name   string
		golden string
		enc    func() []byte
	}{
		{"get-config", "get-config-reply-of13.bin", func() []byte { return EncodeGetConfigReply(V13, 5, Config{}) }},
		{"hello", "hello-of15-all.bin", func() []byte { return EncodeHello(AllVersions, 7) }},
		{"desc-of10", "desc-reply-of10.bin", func() []byte { return one(t, EncodeDescReply(V10, 2, desc)) }},
		{"desc-of15", "desc-reply-of15.bin", func() []byte { return one(t, EncodeDescReply(V15, 2, desc)) }},
		{"port-desc-of10", "port-desc-reply-of10.bin", func() []byte { return one(t, EncodePortDescReply(V10, 2, ports)) }},
		{"port-desc-of13", "port-desc-reply-of13.bin", func() []byte { return one(t, EncodePortDescReply(V13, 2, ports)) }},
		{"port-desc-of15", "port-desc-reply-of15.bin", func() []byte { return one(t, EncodePortDescReply(V15, 2, ports)) }},
		{"port-stats-of10", "port-stats-reply-of10.bin", func() []byte {
			return one(t, EncodePortStatsReply(V10, 2, portStats(0, 0, 0, 6, 516)))
		}},
		{"port-stats-of13", "port-stats-reply-of13.bin", func() []byte {
			return one(t, EncodePortStatsReply(V13, 2, portStats(7114*time.Millisecond, 7115*time.Millisecond, 7114*time.Millisecond, 7, 586)))
		}},
		{"table-stats-of10", "table-stats-reply-of10.bin", func() []byte { return one(t, EncodeTableStatsReply(V10, 2, tables(V10))) }},
		{"table-stats-of13", "table-stats-reply-of13.bin", func() []byte { return one(t, EncodeTableStatsReply(V13, 2, tables(V13))) }},
		{"nx-flow-stats-of10", "nx-flow-stats-reply-of10.bin", func() []byte {
			f := flowStats
			f[0].Duration, f[0].IdleAge, f[0].Packets, f[0].Bytes = time.Second+0x389fd980*time.Nanosecond, 0, 3, 246
			f[0].HardAge = f[0].Duration
			return one(t, EncodeFlowStatsReply(V10, 4, true, f))
		}},
		{"flow-stats-of13", "flow-stats-reply-of13.bin", func() []byte {
			f := flowStats
			f[0].Duration, f[0].Packets, f[0].Bytes = 2*time.Second+0x0f8e8b40*time.Nanosecond, 3, 246
			return one(t, EncodeFlowStatsReply(V13, 2, false, f))
		}},
		{"flow-stats-of15", "flow-stats-reply-of15.bin", func() []byte {
			f := flowStats
			f[0].Duration, f[0].IdleAge, f[0].Packets, f[0].Bytes = 2*time.Second+0x1c12e3c0*time.Nanosecond, 0, 4, 336
			return one(t, EncodeFlowStatsReply(V15, 2, false, f))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := tc.enc(), golden(t, tc.golden); !bytes.Equal(got, want) {
				t.Errorf("got\n%x\nwant\n%x", got, want)
			}
		})
	}
}

func TestNXFlowStatsAges(t *testing.T) {
	// OVS encodes ages plus one (0: unknown); the capture's hard_age is the
	// flow's age in seconds plus one.
	if got := age16(0); got != 1 {
		t.Errorf("age16(0) = %d", got)
	}
	if got := age16(100000 * time.Hour); got != 0xffff {
		t.Errorf("age16(huge) = %d", got)
	}
}

func TestPortStats14(t *testing.T) {
	// OVS adds an experimenter property of custom statistics that
	// ovs-ofctl does not print; govs sends the standard part only.
	got := one(t, EncodePortStatsReply(V15, 2, []PortStats{{No: 1, RxPackets: 5, RxFrameErr: Unknown, Duration: 1500 * time.Millisecond}}))
	if len(got) != 16+120 || got[16] != 0 || got[17] != 120 || got[23] != 1 || got[27] != 1 || got[28] != 0x1d {
		t.Errorf("got %x", got)
	}
}

func TestStatsReplySplits(t *testing.T) {
	ports := make([]PortStats, 1000) // 1000 * 120 bytes: two messages
	msgs := EncodePortStatsReply(V15, 9, ports)
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	n := 0
	for i, m := range msgs {
		h := ParseHeader(m)
		if int(h.Length) != len(m) || h.Xid != 9 {
			t.Errorf("message %d: header %+v, %d bytes", i, h, len(m))
		}
		more := m[HeaderLen+3]&StatsFlagMore != 0
		if more != (i == 0) {
			t.Errorf("message %d: more=%v", i, more)
		}
		n += (len(m) - 16) / 120
	}
	if n != 1000 {
		t.Errorf("%d entries", n)
	}
}

func TestHello(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want Versions
	}{
		{"1.0 only", []byte{1, 0, 0, 8, 0, 0, 0, 1}, 1 << V10},
		{"up to 1.5", []byte{6, 0, 0, 8, 0, 0, 0, 1}, AllVersions},
		{"bitmap 1.3", []byte{4, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x10}, 1 << V13},
		{"future version", []byte{9, 0, 0, 8, 0, 0, 0, 1}, AllVersions | 1<<7 | 1<<8 | 1<<9},
		{"bad element ignored", []byte{4, 0, 0, 12, 0, 0, 0, 1, 0, 1, 0, 9}, 0x1e},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.(*Hello).Versions; got != tc.want {
				t.Errorf("versions %b, want %b", got, tc.want)
			}
		})
	}
	if got := EncodeHello(1<<V10|1<<V13, 1); !bytes.Equal(got, []byte{4, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x12}) {
		t.Errorf("non-contiguous hello %x", got)
	}
}

// describe summarises a decode result for the table below.
func describe(m Message, err error) string {
	var e *Error
	if errors.As(err, &e) {
		return "error " + e.Errno.String()
	}
	if err != nil {
		return "untyped error " + err.Error()
	}
	switch m := m.(type) {
	case *StatsRequest:
		s := fmt.Sprintf("stats %d", m.Kind)
		if m.NX {
			s += " nx"
		}
		if m.Kind == StatsFlow {
			s += fmt.Sprintf(" table=%d out_port=%x all=%v", m.Table, m.OutPort, m.Match.IsAll())
		}
		if m.Kind == StatsPort || m.Kind == StatsPortDesc {
			s += fmt.Sprintf(" port=%x", m.Port)
		}
		return s
	case *SetFlowFormat:
		return fmt.Sprintf("flow format %d", m.Format)
	case *FlowMod:
		return fmt.Sprintf("flow mod %d table=%d priority=%d actions=%d", m.Command, m.Table, m.Priority, len(m.Actions))
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*ofp.")
}

func TestDecodeOVSRequests(t *testing.T) {
	want := map[string]string{
		"addflow-of10-c2s-v1-t14.bin":         "flow mod 0 table=0 priority=32768 actions=0",
		"addflow-of13-c2s-v4-t18.bin":         "stats 12", // TABLE_FEATURES
		"addflow-of13-c2s-v4-t20.bin":         "BarrierRequest",
		"addflow-of10-c2s-v1-t18.bin":         "BarrierRequest",
		"addflow-of10-c2s-v1-t5.bin":          "FeaturesRequest",
		"addflow-of10-c2s-v1-t16.bin":         "stats 3",
		"addflow-of13-2-c2s-v4-t18.bin":       "stats 13 port=ffffffff",
		"dump-aggregate-of13-c2s-v4-t18.bin":  "stats 2",
		"dump-flows-default-c2s-v1-t16.bin":   "stats 1 nx table=255 out_port=ffffffff all=true",
		"dump-flows-of13-c2s-v4-t18.bin":      "stats 1 table=255 out_port=ffffffff all=true",
		"dump-flows-of11-c2s-v2-t18.bin":      "stats 1 table=255 out_port=ffffffff all=true",
		"dump-flows-of15-c2s-v6-t18.bin":      "stats 1 table=255 out_port=ffffffff all=true",
		"dump-ports-default-c2s-v1-t16.bin":   "stats 4 port=ffffffff",
		"dump-ports-of15-c2s-v6-t18.bin":      "stats 4 port=ffffffff",
		"addflow-of15-2-c2s-v6-t18.bin":       "stats 13 port=ffffffff",
		"dump-tables-of15-c2s-v6-t18.bin":     "stats 3",
		"dump-desc-of15-c2s-v6-t18.bin":       "stats 0",
		"dump-meters-of15-c2s-v6-t18.bin":     "stats 10",
		"dump-groups-of15-c2s-v6-t18.bin":     "stats 7",
		"dump-groups-of13-c2s-v4-t18.bin":     "stats 7",
		"dump-aggregate-of10-c2s-v1-t4.bin":   "flow format 2",
		"get-frags-of15-c2s-v6-t7.bin":        "GetConfigRequest",
		"delflows-of15-c2s-v6-t14.bin":        "flow mod 3 table=255 priority=32768 actions=0",
		"addflow-of15-c2s-v6-t0.bin":          "Hello",
		"dump-aggregate-of10-c2s-v1-t16.bin":  "stats 2 nx", // NXST_AGGREGATE
		"dump-ports-desc-of12-c2s-v3-t18.bin": "stats 13 port=ffffffff",
	}
	files, err := filepath.Glob(filepath.Join("testdata", "requests", "*.bin"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured requests: %v", err)
	}
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := describe(Decode(b))
		if strings.Contains(got, "BAD_LEN") || strings.Contains(got, "BAD_VERSION") || strings.HasPrefix(got, "untyped") {
			t.Errorf("%s: %s: ovs-ofctl's request is well-formed", filepath.Base(f), got)
		}
		if w, ok := want[filepath.Base(f)]; ok {
			seen++
			if got != w {
				t.Errorf("%s: got %q, want %q", filepath.Base(f), got, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d expected files found", seen, len(want))
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"short", []byte{4, 5, 0, 8}, "error OFPBRC_BAD_LEN"},
		{"length mismatch", []byte{4, 5, 0, 9, 0, 0, 0, 1}, "error OFPBRC_BAD_LEN"},
		{"features with body", []byte{4, 5, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0}, "error OFPBRC_BAD_LEN"},
		{"version 7", []byte{7, 5, 0, 8, 0, 0, 0, 1}, "error OFPBRC_BAD_VERSION"},
		{"version 0", []byte{0, 5, 0, 8, 0, 0, 0, 1}, "error OFPBRC_BAD_VERSION"},
		{"unknown type", []byte{4, 99, 0, 8, 0, 0, 0, 1}, "error OFPBRC_BAD_TYPE"},
		{"role in 1.0", []byte{1, 24, 0, 24, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "error OFPBRC_BAD_TYPE"},
		{"role", []byte{4, 24, 0, 24, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, "RoleRequest"},
		{"meter mod short", []byte{4, 29, 0, 8, 0, 0, 0, 1}, "error OFPBRC_BAD_LEN"},
		{"meter mod in 1.2", []byte{3, 29, 0, 8, 0, 0, 0, 1}, "error OFPBRC_BAD_TYPE"},
		{"other vendor", []byte{4, 4, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}, "error OFPBRC_BAD_VENDOR"},
		{"nx subtype", []byte{4, 4, 0, 16, 0, 0, 0, 1, 0, 0, 0x23, 0x20, 0, 0, 0, 99}, "error OFPBRC_BAD_SUBTYPE"},
		{"nx packet-in format", []byte{4, 4, 0, 20, 0, 0, 0, 1, 0, 0, 0x23, 0x20, 0, 0, 0, 16, 0, 0, 0, 2}, "SetPacketInFormat"},
		{"stats more", []byte{4, 18, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}, "error OFPBRC_BAD_STAT"},
		{"port stats short", []byte{4, 18, 0, 20, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "error OFPBRC_BAD_LEN"},
		{"oxm overrun", append([]byte{4, 18, 0, 56, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0}, append(make([]byte, 32), 0, 1, 0, 8, 0x80, 0, 0, 9)...), "error OFPBMC_BAD_LEN"},
		{"echo", []byte{1, 2, 0, 10, 0, 0, 0, 1, 'h', 'i'}, "EchoRequest"},
		{"set config", []byte{1, 9, 0, 12, 0, 0, 0, 1, 0, 0, 0xff, 0xff}, "SetConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(Decode(tc.in)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorEncoding(t *testing.T) {
	req := bytes.Repeat([]byte{0xab}, 100)
	got := EncodeError(V13, 42, BadType, req)
	if len(got) != 12+64 || got[1] != TypeError || got[9] != 1 || got[11] != 1 || ParseHeader(got).Xid != 42 {
		t.Errorf("got %x", got)
	}
	if typ, code := RoleStale.TypeCode(V13); typ != 11 || code != 0 {
		t.Errorf("OFPRRFC_STALE = (%d,%d)", typ, code)
	}
}

func TestSplit(t *testing.T) {
	stream := append(EncodeHello(AllVersions, 1), EncodeBarrierReply(V13, 2)...)
	m, rest, err := Split(stream[:5])
	if m != nil || err != nil || len(rest) != 5 {
		t.Errorf("partial header: %x %x %v", m, rest, err)
	}
	m, rest, err = Split(stream)
	if err != nil || len(m) != 8 || len(rest) != 8 {
		t.Errorf("first: %x %x %v", m, rest, err)
	}
	if _, _, err := Split([]byte{4, 0, 0, 4, 0, 0, 0, 0}); !errors.Is(err, ErrFraming) {
		t.Errorf("length 4: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "*.bin"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Framing then decoding never panics; a failure is always a
		// typed error whose reply encodes.
		for len(b) > 0 {
			msg, rest, err := Split(b)
			if err != nil || msg == nil {
				return
			}
			b = rest
			m, err := Decode(msg)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Errno == 0 {
					t.Fatalf("untyped error %v", err)
				}
				h := ParseHeader(msg)
				if r := EncodeError(h.Version, h.Xid, e.Errno, msg); int(ParseHeader(r).Length) != len(r) {
					t.Fatal("bad error reply")
				}
				continue
			}
			if m.Hdr().Length != uint16(len(msg)) {
				t.Fatalf("header %+v for %d bytes", m.Hdr(), len(msg))
			}
		}
	})
}

func TestTableFeatures(t *testing.T) {
	for _, v := range []Version{V13, V15} {
		m := one(t, EncodeTableFeaturesReply(v, 3, []TableFeatures{{ID: 0, MaxEntries: 1000000, Next: []uint8{1}}, {ID: 1, Name: "t1", MaxEntries: 1000000}}))
		b := m[16:]
		for id := 0; id < 2; id++ {
			n := int(binary.BigEndian.Uint16(b))
			if b[2] != uint8(id) || binary.BigEndian.Uint64(b[40:]) != ^uint64(0) || binary.BigEndian.Uint32(b[60:]) != 1000000 {
				t.Fatalf("%v table %d: head %x", v, id, b[:64])
			}
			if id == 1 && string(b[8:10]) != "t1" {
				t.Errorf("%v table 1: name %q", v, b[8:40])
			}
			// Properties: type, length (without padding), body, padding to 8.
			props := map[uint16][]byte{}
			for p := b[64:n]; len(p) > 0; {
				typ, l := binary.BigEndian.Uint16(p), int(binary.BigEndian.Uint16(p[2:]))
				if l < 4 || (l+7)/8*8 > len(p) {
					t.Fatalf("%v table %d: property %d length %d of %d", v, id, typ, l, len(p))
				}
				props[typ] = p[4:l]
				p = p[(l+7)/8*8:]
			}
			if len(props) != 14 {
				t.Errorf("%v table %d: %d properties, want 14", v, id, len(props))
			}
			has := func(typ uint16, want []byte) bool {
				return bytes.Contains(props[typ], want)
			}
			if goTo := has(0, []byte{0, 1, 0, 4}); goTo != (id == 0) || !bytes.Equal(props[2], []byte{1}[:1-id]) {
				t.Errorf("%v table %d: goto_table %v, next tables %v", v, id, goTo, props[2])
			}
			if meter := has(1, []byte{0, 6, 0, 4}); meter != (v < V15) {
				t.Errorf("%v table %d: meter instruction %v", v, id, meter)
			}
			if !has(6, []byte{0, 25, 0, 4}) || !has(7, []byte{0, 21, 0, 4}) {
				t.Errorf("%v table %d: apply actions %x", v, id, props[7])
			}
			// eth_dst masked in MATCH, unmasked in WILDCARDS; ip_frag
			// not in APPLY_SETFIELD; tun_metadata0 of 124 bytes.
			if !has(8, []byte{0x80, 0, 7, 12}) || !has(10, []byte{0x80, 0, 6, 6}) || has(14, []byte{0, 1, 0x34, 1}) || !has(13, []byte{0, 1, 0x50, 124}) {
				t.Errorf("%v table %d: fields: match %x wildcards %x", v, id, props[8], props[10])
			}
			b = b[n:]
		}
	}
	set := append([]byte{4, 18, 0, 24, 0, 0, 0, 1, 0, 12, 0, 0, 0, 0, 0, 0}, make([]byte, 8)...)
	if got := describe(Decode(set)); got != "error OFPTFFC_EPERM" {
		t.Errorf("setting table features: %s", got)
	}
}

func TestDecodeCtrl(t *testing.T) {
	read := func(name string) []byte { return readRequest(t, name) }
	m, err := Decode(read("ctrl-setasync-of13-c2s-v4-t28.bin"))
	if sa, ok := m.(*SetAsync); err != nil || !ok || sa.Config.Master[AsyncPacketIn] != 3 || sa.Config.Slave[AsyncPortStatus] != 7 || sa.Config.Master[AsyncFlowRemoved] != 15 {
		t.Errorf("OF1.3 SET_ASYNC: %+v %v", m, err)
	}
	m, err = Decode(read("ctrl-setasync-of14-c2s-v5-t28.bin"))
	sa, ok := m.(*SetAsync)
	if err != nil || !ok || sa.Config.Master[AsyncPacketIn] != 3 || sa.Config.Master[AsyncFlowRemoved] != 63 {
		t.Fatalf("OF1.4 SET_ASYNC: %+v %v", m, err)
	}
	// Properties left out keep their masks.
	cur := DefaultAsyncConfig(V14)
	m, _ = Decode(read("ctrl-nxsetasync2-of15-c2s-v6-t4.bin"))
	if got := m.(*SetAsync).Apply(cur); got.Master[AsyncPacketIn] != 3 || got.Master[AsyncFlowRemoved] != cur.Master[AsyncFlowRemoved] {
		t.Errorf("partial SET_ASYNC: %+v", got)
	}
	if m, err := Decode(read("ctrl-nxrole-of10-c2s-v1-t4.bin")); err != nil || m.(*RoleRequest).Role != RoleMaster || !m.(*RoleRequest).NX {
		t.Errorf("NXT_ROLE_REQUEST: %+v %v", m, err)
	}
	if m, err := Decode(read("ctrl-nxcontrollerid-of10-c2s-v1-t4.bin")); err != nil || m.(*SetControllerID).ID != 5 {
		t.Errorf("NXT_SET_CONTROLLER_ID: %+v %v", m, err)
	}
	// A mask for messages govs never sends is refused, as an unknown
	// property.
	bad := []byte{5, 28, 0, 16, 0, 0, 0, 1, 0, 7, 0, 8, 0, 0, 0, 1}
	if _, err := Decode(bad); err == nil || err.(*Error).Errno != BadAsyncMask {
		t.Errorf("role status mask: %v", err)
	}
	bad[9] = 40
	if _, err := Decode(bad); err == nil || err.(*Error).Errno != BadAsyncProp {
		t.Errorf("unknown property: %v", err)
	}
	if typ, code := IsSlave.TypeCode(V10); typ != 1 || code != 5 {
		t.Errorf("IS_SLAVE in 1.0: (%d,%d)", typ, code)
	}
	if !IsWriteRequest(Header{Version: V13, Type: 29}, nil) || IsWriteRequest(Header{Version: V13, Type: 18}, nil) {
		t.Error("IsWriteRequest")
	}
	r := EncodeGetAsyncReply(V13, 1, DefaultAsyncConfig(V13))
	if len(r) != 32 || r[1] != 27 {
		t.Errorf("OF1.3 GET_ASYNC reply %x", r)
	}
}

func TestDecodePortMod(t *testing.T) {
	for name, want := range map[string]PortMod{
		"portmod-of10-c2s-v1-t15.bin": {Port: 1, Config: PortConfigNoFlood, Mask: PortConfigNoFlood},
		"portmod-of13-c2s-v4-t16.bin": {Port: 1, Config: PortConfigDown, Mask: PortConfigDown},
		// NO_FLOOD does not exist in 1.1+: dropped, as OVS.
		"portmod-of15-c2s-v6-t16.bin": {Port: 1, Config: PortConfigNoFwd, Mask: PortConfigNoFwd | PortConfigDown},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "requests", name))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode(b)
		pm, ok := m.(*PortMod)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", name, m, err)
		}
		want.Header, want.HWAddr = pm.Header, [6]byte{0xaa, 0x55, 0xaa, 0x55, 0, 1}
		if *pm != want {
			t.Errorf("%s: %+v, want %+v", name, *pm, want)
		}
		if pm.Version <= V13 {
			long := append(b[:len(b):len(b)], 0)
			long[3]++
			if _, err := Decode(long); err == nil {
				t.Errorf("%s with a stray byte accepted", name)
			}
		}
	}
}
