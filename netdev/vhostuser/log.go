package vhostuser

import (
	"fmt"
	"sync"
	"time"
)

// Logger receives the port's anomaly reports; govs' vlog satisfies it.
type Logger interface {
	Warnf(format string, args ...any)
}

// logInterval and logBurst rate-limit anomaly lines per port, as OVS's
// VLOG_RATE_LIMIT_INIT(5, 20) does per module: a guest that misbehaves on
// every frame costs a few lines a second, not a line a frame.
const (
	logInterval = time.Second
	logBurst    = 5
)

type rateLog struct {
	l Logger

	mu         sync.Mutex
	start      time.Time // guarded by mu: the current interval
	n          int       // guarded by mu: lines in it
	suppressed int       // guarded by mu
}

func (r *rateLog) logf(prefix, format string, args ...any) {
	if r.l == nil {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if now.Sub(r.start) >= logInterval {
		if r.suppressed > 0 {
			r.l.Warnf("%s: %d messages suppressed", prefix, r.suppressed)
		}
		r.start, r.n, r.suppressed = now, 0, 0
	}
	if r.n >= logBurst {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.n++
	r.mu.Unlock()
	r.l.Warnf("%s: %s", prefix, fmt.Sprintf(format, args...))
}
