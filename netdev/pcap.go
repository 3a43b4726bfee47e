package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// pcapSnaplen is the snapshot length OVS's pcap files announce
// (lib/pcap-file.c: 1518, an Ethernet frame with a VLAN tag); frames are
// written whole, longer or not, as OVS writes them.
const pcapSnaplen = 1518

// pcapMaxRecord bounds a record ReadPcap accepts, so that a corrupt
// length cannot make it allocate gigabytes.
const pcapMaxRecord = 1 << 20

// pcapWriter appends frames to a pcap file (classic format, microsecond
// timestamps, LINKTYPE_ETHERNET, host byte order as OVS writes it).
type pcapWriter struct {
	mu   sync.Mutex // guards f
	f    *os.File
	path string
}

// openPcap opens path for appending, as OVS's ovs_pcap_open(path, "ab"):
// the file header is written only when the file is empty.
func openPcap(path string) (*pcapWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() == 0 {
		var h [24]byte
		binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
		binary.LittleEndian.PutUint16(h[4:], 2)
		binary.LittleEndian.PutUint16(h[6:], 4)
		binary.LittleEndian.PutUint32(h[16:], pcapSnaplen)
		binary.LittleEndian.PutUint32(h[20:], 1) // LINKTYPE_ETHERNET
		_, err = f.Write(h[:])
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &pcapWriter{f: f, path: path}, nil
}

// write appends one frame; like OVS's writer it is flushed at once (an
// os.File is unbuffered), so a test reads what was sent so far.
func (w *pcapWriter) write(frame []byte) error {
	now := time.Now()
	rec := make([]byte, 16+len(frame))
	binary.LittleEndian.PutUint32(rec[0:], uint32(now.Unix()))
	binary.LittleEndian.PutUint32(rec[4:], uint32(now.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
	copy(rec[16:], frame)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.f.Write(rec)
	return err
}

func (w *pcapWriter) close() error { return w.f.Close() }

// ErrPcapFormat is returned by ReadPcap for data that is not a pcap file.
var ErrPcapFormat = errors.New("pcap: bad file format")

// ReadPcap returns the frames of a classic pcap file in either byte order,
// with microsecond or nanosecond timestamps. A truncated last record is an
// error (io.ErrUnexpectedEOF), as is any record longer than 1 MiB.
func ReadPcap(r io.Reader) ([][]byte, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("%w: file header: %v", ErrPcapFormat, err)
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(h[:]) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("%w: magic %#08x", ErrPcapFormat, binary.LittleEndian.Uint32(h[:]))
	}
	if lt := bo.Uint32(h[20:]); lt != 1 {
		return nil, fmt.Errorf("%w: link type %d is not Ethernet", ErrPcapFormat, lt)
	}
	var frames [][]byte
	for {
		var rh [16]byte
		if _, err := io.ReadFull(r, rh[:]); err == io.EOF {
			return frames, nil
		} else if err != nil {
			return frames, fmt.Errorf("pcap: record %d header: %w", len(frames)+1, err)
		}
		n := bo.Uint32(rh[8:])
		if n > pcapMaxRecord {
			return frames, fmt.Errorf("%w: record %d is %d bytes long", ErrPcapFormat, len(frames)+1, n)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return frames, fmt.Errorf("pcap: record %d: %w", len(frames)+1, err)
		}
		frames = append(frames, b)
	}
}
