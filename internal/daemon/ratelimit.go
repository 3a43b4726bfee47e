package daemon

import (
	"fmt"
	"sync"
	"time"
)

// RateLimit limits how often a message (or a family of messages) is logged,
// like OVS's VLOG_RATE_LIMIT_INIT(RATE, BURST): a token bucket refilled at
// perMinute messages per minute that holds at most burst messages, starting
// full. Share one RateLimit between the call sites it should limit together;
// it is safe for concurrent use.
//
// When a message gets through after some were dropped, a line
// "Dropped N log messages in last S seconds (most recently, T seconds ago)
// due to excessive rate" is logged first, at the same level.
type RateLimit struct {
	mu        sync.Mutex
	perMinute float64
	burst     float64
	tokens    float64
	last      time.Time // last refill; zero before first use
	now       func() time.Time

	dropped      int
	firstDropped time.Time
	lastDropped  time.Time
}

// NewRateLimit returns a limiter allowing perMinute messages per minute with
// bursts of up to burst messages. Values below 1 are treated as 1.
func NewRateLimit(perMinute, burst int) *RateLimit {
	return &RateLimit{
		perMinute: float64(max(perMinute, 1)),
		burst:     float64(max(burst, 1)),
		now:       time.Now,
	}
}

// Allow takes a token, for a logger other than a ModuleLogger: ok says
// whether to log, and droppedMsg, if not empty, is to be logged first.
func (r *RateLimit) Allow() (ok bool, droppedMsg string) { return r.allow() }

// allow takes a token. If it succeeds after drops, it also returns the
// "Dropped ..." message to log first.
func (r *RateLimit) allow() (ok bool, droppedMsg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.last.IsZero() {
		r.tokens = r.burst
	} else if el := now.Sub(r.last); el > 0 {
		r.tokens = min(r.burst, r.tokens+el.Minutes()*r.perMinute)
	}
	r.last = now
	if r.tokens < 1 {
		if r.dropped == 0 {
			r.firstDropped = now
		}
		r.lastDropped = now
		r.dropped++
		return false, ""
	}
	r.tokens--
	if r.dropped > 0 {
		droppedMsg = formatDropped(r.dropped, now.Sub(r.firstDropped), now.Sub(r.lastDropped))
		r.dropped = 0
	}
	return true, droppedMsg
}

func formatDropped(n int, since, ago time.Duration) string {
	return fmt.Sprintf("Dropped %d log messages in last %d seconds (most recently, %d seconds ago) due to excessive rate",
		n, int64(since/time.Second), int64(ago/time.Second))
}

// LogRL logs at lvl unless rl says the message is over its rate. A message at
// a disabled level consumes no token.
func (m *ModuleLogger) LogRL(rl *RateLimit, lvl Level, format string, args ...any) {
	if !m.Enabled(lvl) {
		return
	}
	if m.unlimited.Load() {
		m.emit(lvl, fmt.Sprintf(format, args...))
		return
	}
	ok, dropped := rl.allow()
	if !ok {
		return
	}
	if dropped != "" {
		m.emit(lvl, dropped)
	}
	m.emit(lvl, fmt.Sprintf(format, args...))
}

// ErrorRL logs at ERR, rate-limited by rl.
func (m *ModuleLogger) ErrorRL(rl *RateLimit, format string, args ...any) {
	m.LogRL(rl, LevelErr, format, args...)
}

// WarnRL logs at WARN, rate-limited by rl.
func (m *ModuleLogger) WarnRL(rl *RateLimit, format string, args ...any) {
	m.LogRL(rl, LevelWarn, format, args...)
}

// InfoRL logs at INFO, rate-limited by rl.
func (m *ModuleLogger) InfoRL(rl *RateLimit, format string, args ...any) {
	m.LogRL(rl, LevelInfo, format, args...)
}

// DebugRL logs at DBG, rate-limited by rl.
func (m *ModuleLogger) DebugRL(rl *RateLimit, format string, args ...any) {
	m.LogRL(rl, LevelDbg, format, args...)
}
