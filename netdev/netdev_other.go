//go:build !linux

package netdev

import (
	"errors"
	"fmt"
	"runtime"
)

var errUnsupported = fmt.Errorf("netdev: system and tap ports need Linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

// OpenSystem is Linux-only.
func OpenSystem(name string, cfg Config) (Port, error) { return nil, errUnsupported }

// OpenTap is Linux-only.
func OpenTap(name string, cfg Config) (Port, error) { return nil, errUnsupported }

// SetMTU is Linux-only.
func SetMTU(name string, mtu int) error { return errUnsupported }

// GetLinkInfo is Linux-only.
func GetLinkInfo(name string) (LinkInfo, error) { return LinkInfo{}, errUnsupported }

// KernelStats is Linux-only.
func KernelStats(name string) (Stats, error) { return Stats{}, errUnsupported }

// MTU is Linux-only.
func MTU(name string) (int, error) { return 0, errUnsupported }
