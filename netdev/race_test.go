//go:build race

package netdev

// raceEnabled: under the race detector sync.Pool drops items on purpose,
// so allocation counts say nothing.
const raceEnabled = true
