// Status: the `<state>[: <reason>]` string every config poll carries and Status() shows
// (DESIGN §5, docs/control-plane.md).

package roottrace

import (
	"regexp"
	"strings"
)

// The states of the status grammar.
const (
	StateProfiling   = "profiling"   // sampling and uploading
	StateDisabled    = "disabled"    // off: by the config, a 409, or not started / stopped
	StateWaiting     = "waiting"     // no valid config yet
	StateUnavailable = "unavailable" // this runtime cannot profile
	StateDeclined    = "declined"    // the CPU profiler is held by someone else
	StateError       = "error"       // an invalid config, no config for 3 poll intervals, bad arguments
)

// reasonMax is the longest reason the grammar allows, in characters.
const reasonMax = 200

// statusRE is the status grammar, for tests and for anyone checking a status string.
var statusRE = regexp.MustCompile(`^(profiling|disabled|waiting|unavailable|declined|error)(: [\x20-\x7e]{1,200})?$`)

// cleanReason returns reason on one line (whitespace runs become one space) as printable
// ASCII (anything else becomes '?'), trimmed, at most 200 characters.
func cleanReason(reason string) string {
	b := []byte(oneLine(reason))
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		if r < 0x20 || r > 0x7e {
			out = append(out, '?')
		} else {
			out = append(out, byte(r))
		}
		if len(out) == reasonMax {
			break
		}
	}
	return strings.TrimSpace(string(out))
}

// formatStatus returns `state` or `state: reason`, always within the grammar (an unknown
// state becomes error).
func formatStatus(state, reason string) string {
	switch state {
	case StateProfiling, StateDisabled, StateWaiting, StateUnavailable, StateDeclined, StateError:
	default:
		state = StateError
	}
	if r := cleanReason(reason); r != "" {
		return state + ": " + r
	}
	return state
}
