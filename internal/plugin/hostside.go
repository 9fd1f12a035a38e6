package plugin

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/junction-router/junction/internal/replay/replayconfig"
)

// Host-side plugin types are carried out by the router itself after the
// answer went out, not by a module in the request phase: router_replay
// (the decision record kept by internal/replay's recorder) and
// shadow_dispatch (a copy of the request sent to a shadow model). The
// stage checks their configurations and reports them, nothing more: a
// request's plugins run in order and change the request, and these two
// neither change it nor may delay it.
var hostSide = []string{replayconfig.TypeReplay, replayconfig.TypeShadow}

// HostSideTypes are the plugin types the router carries out itself.
func HostSideTypes() []string { return slices.Clone(hostSide) }

// IsHostSide reports whether typ is carried out by the router itself.
func IsHostSide(typ string) bool { return slices.Contains(hostSide, typ) }

// hostInstance is a host-side type's binding: the report of what will
// happen after the response.
type hostInstance struct {
	typ     string
	enabled bool
	live    string // the live report's detail
}

func compileHostSide(typ string, raw json.RawMessage) compiled {
	switch typ {
	case replayconfig.TypeReplay:
		c, err := replayconfig.ParseReplay(raw)
		if err != nil {
			return compiled{err: err}
		}
		what := "the decision record"
		if c.RecordPrompt {
			what += " and the routing input (personal data redacted)"
		}
		return compiled{inst: &hostInstance{typ: typ, enabled: c.Enabled,
			live: fmt.Sprintf("%s is kept after the response for %v of requests (GET /api/v1/observability/replays)", what, c.SampleRate)}}
	case replayconfig.TypeShadow:
		c, err := replayconfig.ParseShadow(raw)
		if err != nil {
			return compiled{err: err}
		}
		return compiled{inst: &hostInstance{typ: typ, enabled: c.Enabled,
			live: fmt.Sprintf("a copy goes to %s after the answer for %v of requests; both outcomes land in the replay record", c.Model, c.SampleRate)}}
	}
	return compiled{unavailable: true}
}

func (h *hostInstance) run(req *Request) (*mutations, error) {
	switch {
	case !h.enabled:
		return &mutations{skipped: true, detail: "disabled by its configuration (enabled: false)"}, nil
	case req.Mode == ModePreview || req.Mode == ModeProbe:
		return &mutations{skipped: true, detail: h.typ + " acts on live traffic only, after the answer: a " + req.Mode + " records and sends nothing (persisted: false)"}, nil
	}
	return &mutations{detail: h.live}, nil
}
