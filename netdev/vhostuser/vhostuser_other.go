//go:build !linux

package vhostuser

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

var errUnsupported = fmt.Errorf("vhostuser: vhost-user ports need Linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Port is Linux-only; Dial and Listen fail elsewhere.
type Port struct{}

// Dial is Linux-only.
func Dial(name, path string, cfg Config) (*Port, error) { return nil, errUnsupported }

// Listen is Linux-only.
func Listen(name, path string, cfg Config) (*Port, error) { return nil, errUnsupported }

func (p *Port) Name() string                             { return "" }
func (p *Port) Read(pkts []*packet.Packet) (int, error)  { return 0, errUnsupported }
func (p *Port) Write(pkts []*packet.Packet) (int, error) { return 0, errUnsupported }
func (p *Port) Offloads() netdev.Offloads                { return netdev.Offloads{} }
func (p *Port) Stats() netdev.Stats                      { return netdev.Stats{} }
func (p *Port) Counters() Counters                       { return Counters{} }
func (p *Port) SetZeroCopy(on bool)                      {}
func (p *Port) SetTxRetriesMax(n int) error              { return errUnsupported }
func (p *Port) Running() bool                            { return false }
func (p *Port) Status() map[string]string                { return nil }
func (p *Port) Close() error                             { return errUnsupported }
