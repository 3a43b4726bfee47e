//go:build !linux

package tunnel

import (
	"context"
	"errors"
	"net/netip"
)

// KernelAddrs is only implemented on Linux.
func KernelAddrs(string) ([]netip.Prefix, error) { return nil, errors.ErrUnsupported }

// Logger is the vlog module logger the synchroniser writes to.
type Logger interface {
	Warnf(format string, args ...any)
}

// Sync does nothing off Linux: the table holds user routes only.
func Sync(context.Context, *Router, Logger) {}
