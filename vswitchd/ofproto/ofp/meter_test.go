package ofp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// meterMod builds an OFPT_METER_MOD of version v from its fields and raw
// bands.
func meterMod(v Version, cmd, flags uint16, id uint32, bands ...[]byte) []byte {
	b := []byte{byte(v), type13MeterMod, 0, 0, 0, 0, 0, 9}
	b = put16(b, cmd)
	b = put16(b, flags)
	b = put32(b, id)
	for _, band := range bands {
		b = append(b, band...)
	}
	return finish(b)
}

func band(typ, n uint16, rate, burst uint32) []byte {
	b := put16(nil, typ)
	b = put16(b, n)
	b = put32(b, rate)
	b = put32(b, burst)
	return pad(b, int(n)-12)
}

func TestDecodeMeterMod(t *testing.T) {
	drop := band(BandDrop, 16, 20000, 0)
	for _, tc := range []struct {
		name string
		in   []byte
		want *MeterMod // nil: an error
		err  Errno
	}{
		{"add", meterMod(V13, MeterAdd, MeterKbps, 1, drop), &MeterMod{Command: MeterAdd, Flags: MeterKbps, ID: 1,
			Bands: []MeterBand{{Type: BandDrop, Rate: 20000}}}, 0},
		{"two bands", meterMod(V15, MeterModify, MeterPktps|MeterBurst, 7, band(BandDrop, 16, 10, 5), band(BandDSCPRemark, 16, 1, 2)),
			&MeterMod{Command: MeterModify, Flags: MeterPktps | MeterBurst, ID: 7,
				Bands: []MeterBand{{Type: BandDrop, Rate: 10, Burst: 5}, {Type: BandDSCPRemark, Rate: 1, Burst: 2}}}, 0},
		{"no bands", meterMod(V13, MeterAdd, MeterKbps, 1), &MeterMod{Command: MeterAdd, Flags: MeterKbps, ID: 1}, 0},
		// A delete's flags and bands are not looked at.
		{"delete", meterMod(V14, MeterDelete, 0xffff, MeterAll, []byte{1, 2, 3}), &MeterMod{Command: MeterDelete, ID: MeterAll}, 0},
		{"bad command", meterMod(V13, 3, MeterKbps, 1, drop), nil, MeterBadCommand},
		{"kbps and pktps", meterMod(V13, MeterAdd, MeterKbps|MeterPktps, 1, drop), nil, MeterBadFlags},
		{"band type", meterMod(V13, MeterAdd, MeterKbps, 1, band(3, 16, 1, 0)), nil, MeterBadBand},
		{"band length", meterMod(V13, MeterAdd, MeterKbps, 1, band(BandDrop, 24, 1, 0)), nil, BadLen},
		{"trailing bytes", meterMod(V13, MeterAdd, MeterKbps, 1, drop, []byte{0, 1, 0, 16}), nil, BadLen},
		{"short", []byte{4, 29, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0}, nil, BadLen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.in)
			if tc.want == nil {
				e, ok := err.(*Error)
				if !ok || e.Errno != tc.err {
					t.Fatalf("got %v, %v; want %v", m, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := m.(*MeterMod)
			tc.want.Header = got.Header
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeMeterStats(t *testing.T) {
	req := func(v Version, kind StatsKind, body ...byte) []byte {
		b := []byte{byte(v), type11MultipartReq, 0, 0, 0, 0, 0, 1}
		b = put16(b, uint16(kind))
		b = pad(b, 6)
		return finish(append(b, body...))
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"meter", req(V13, StatsMeter, 0, 0, 0, 5, 0, 0, 0, 0), "kind=9 meter=5"},
		{"config all", req(V15, StatsMeterConfig, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0), "kind=10 meter=ffffffff"},
		{"features", req(V14, StatsMeterFeatures), "kind=11 meter=0"},
		{"features with body", req(V13, StatsMeterFeatures, 0, 0, 0, 0), "error OFPBRC_BAD_LEN"},
		{"meter short", req(V13, StatsMeter, 0, 0, 0, 5), "error OFPBRC_BAD_LEN"},
		{"in 1.2", req(V12, StatsMeter, 0, 0, 0, 5, 0, 0, 0, 0), "error OFPBRC_BAD_STAT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.in)
			got := describe(m, err)
			if sr, ok := m.(*StatsRequest); ok {
				got = fmt.Sprintf("kind=%d meter=%x", sr.Kind, sr.Meter)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The replies' layouts: ofp13_meter_config, ofp13_meter_stats and
// ofp13_meter_features after the multipart header.
func TestEncodeMeterReplies(t *testing.T) {
	const hdr = HeaderLen + 8
	cfg := EncodeMeterConfigReply(V13, 1, []MeterConfig{{ID: 3, Flags: MeterKbps | MeterBurst, Bands: []MeterBand{{Type: BandDrop, Rate: 100, Burst: 10}}}})
	if len(cfg) != 1 || len(cfg[0]) != hdr+24 {
		t.Fatalf("config reply %x", cfg)
	}
	want := []byte{0, 24, 0, 5, 0, 0, 0, 3, 0, 1, 0, 16, 0, 0, 0, 100, 0, 0, 0, 10, 0, 0, 0, 0}
	if !bytes.Equal(cfg[0][hdr:], want) {
		t.Errorf("config entry %x, want %x", cfg[0][hdr:], want)
	}
	st := EncodeMeterStatsReply(V15, 1, []MeterStats{{ID: 3, FlowCount: 2, Packets: 10, Bytes: 1000, DurationSec: 4, Bands: [][2]uint64{{1, 64}}}})
	e := st[0][hdr:]
	if len(e) != 56 || binary.BigEndian.Uint16(e[4:]) != 56 || binary.BigEndian.Uint32(e[12:]) != 2 ||
		binary.BigEndian.Uint64(e[16:]) != 10 || binary.BigEndian.Uint32(e[32:]) != 4 || binary.BigEndian.Uint64(e[48:]) != 64 {
		t.Errorf("stats entry %x", e)
	}
	ft := EncodeMeterFeaturesReply(V13, 1, MeterFeatures{MaxMeter: 1 << 18, BandTypes: 2, Capabilities: 15, MaxBands: 8})
	if !bytes.Equal(ft[0][hdr:], []byte{0, 4, 0, 0, 0, 0, 0, 2, 0, 0, 0, 15, 8, 0, 0, 0}) {
		t.Errorf("features %x", ft[0][hdr:])
	}
}

// The meter instruction (1.3, 1.4) and action (1.5) encode back as they
// decode; before 1.3 a meter is left out, as OVS's encode_METER.
func TestMeterInstructionRoundTrip(t *testing.T) {
	acts := []Action{{Type: ActMeter, ID: 9}, {Type: ActOutput, Port: 2}}
	for _, v := range []Version{V13, V14, V15} {
		b := AppendInstructions(nil, v, acts)
		got, err := DecodeInstructions(v, b)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if len(got) != 2 || got[0].Type != ActMeter || got[0].ID != 9 || got[1].Port != 2 {
			t.Errorf("%s: %+v", v, got)
		}
	}
	if b := AppendActions(nil, V10, acts[:1]); len(b) != 0 {
		t.Errorf("OpenFlow 1.0 encodes a meter: %x", b)
	}
}

// A METER_MOD decoded and encoded again gives the same bytes (a
// delete's ignored flags and bands aside).
func FuzzMeterMod(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "meter-*.bin"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		mm, ok := m.(*MeterMod)
		if !ok || mm.Command == MeterDelete {
			return
		}
		got := EncodeMeterMod(mm.Version, mm.Xid, mm)
		// prec_level's padding is not kept.
		want := bytes.Clone(b)
		for i := HeaderLen + 8; i+16 <= len(want); i += 16 {
			clear(want[i+13 : i+16])
			if binary.BigEndian.Uint16(want[i:]) == BandDrop {
				want[i+12] = 0
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("decoded %+v, encoded back\n%x\nwant\n%x", mm, got, want)
		}
	})
}
