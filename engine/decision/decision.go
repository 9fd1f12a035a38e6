// Package decision evaluates a recipe's prioritized decisions over signal results.
//
// Rules nest AND / OR / NOT over signal conditions; decisions are tried in
// priority order (higher first); among matches of equal priority the higher
// confidence wins, then the name. The package only matches: it neither computes
// signals nor selects models.
package decision

import (
	"fmt"
	"sort"
	"strings"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Slots maps a condition to the index of its signal's result in the slice
// passed to Evaluate. ok is false when the recipe has no such signal.
type Slots func(kind, name string) (slot int, ok bool)

// Decision is one compiled decision.
type Decision struct {
	Config recipes.Decision
	root   *node
}

// Set is a recipe's compiled decisions in evaluation order.
type Set struct {
	list []*Decision
}

type node struct {
	op       string // AND, OR, NOT; "" for a leaf
	children []*node
	kind     string
	name     string
	level    string // complexity grade for complexity leaves
	slot     int
	label    string // "type:name" as written, for explanations
}

// Compile builds the decisions of r. Conditions must name signals that slots
// knows; the recipes package validates that earlier, so an error here means the
// caller skipped validation.
func Compile(r recipes.Recipe, slots Slots) (*Set, error) {
	s := &Set{}
	for i, d := range r.Decisions {
		root, err := compileNode(d.Rules, slots, fmt.Sprintf("/decisions/%d/rules", i))
		if err != nil {
			return nil, fmt.Errorf("decision %q: %w", d.Name, err)
		}
		s.list = append(s.list, &Decision{Config: d, root: root})
	}
	sort.SliceStable(s.list, func(i, j int) bool {
		a, b := s.list[i].Config, s.list[j].Config
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Name < b.Name
	})
	return s, nil
}

func compileNode(n recipes.RuleNode, slots Slots, path string) (*node, error) {
	if n.IsLeaf() {
		name, level := n.Name, ""
		if n.Type == recipes.KindComplexity {
			i := strings.LastIndexByte(n.Name, ':')
			if i < 0 {
				return nil, fmt.Errorf("%s: complexity condition %q needs a level: write %q", path, n.Name, n.Name+":hard")
			}
			name, level = n.Name[:i], n.Name[i+1:]
		}
		slot, ok := slots(n.Type, name)
		if !ok {
			return nil, fmt.Errorf("%s: condition names %s signal %q, which the recipe does not define", path, n.Type, name)
		}
		return &node{kind: n.Type, name: name, level: level, slot: slot, label: n.Type + ":" + n.Name}, nil
	}
	op := strings.ToUpper(n.Operator)
	out := &node{op: op}
	switch op {
	case recipes.OpAND, recipes.OpOR:
	case recipes.OpNOT:
		if len(n.Conditions) != 1 {
			return nil, fmt.Errorf("%s: NOT takes exactly one condition, got %d", path, len(n.Conditions))
		}
	default:
		return nil, fmt.Errorf("%s: unknown operator %q (use AND, OR or NOT)", path, n.Operator)
	}
	for i, c := range n.Conditions {
		child, err := compileNode(c, slots, fmt.Sprintf("%s/conditions/%d", path, i))
		if err != nil {
			return nil, err
		}
		out.children = append(out.children, child)
	}
	return out, nil
}

// Match is the winning decision with its confidence and the conditions that
// made it match.
type Match struct {
	Decision   *Decision
	Confidence float64
	// Matched lists the conditions that held, as "type:name" ("NOT type:name"
	// for a negated condition that held because its signal did not match).
	Matched []string
}

// Evaluate returns the winning decision for results (indexed by slot), or
// ok=false when none matched.
func (s *Set) Evaluate(results []signal.Result) (m Match, ok bool) {
	for i := 0; i < len(s.list); {
		prio := s.list[i].Config.Priority
		best := -1
		bestConf := 0.0
		j := i
		for ; j < len(s.list) && s.list[j].Config.Priority == prio; j++ {
			matched, conf := s.list[j].root.eval(results)
			// Sorted by name within a priority, so a strict > keeps the first name on ties.
			if matched && (best < 0 || conf > bestConf) {
				best, bestConf = j, conf
			}
		}
		if best >= 0 {
			d := s.list[best]
			return Match{Decision: d, Confidence: bestConf, Matched: d.root.explain(results, nil, false)}, true
		}
		i = j
	}
	return Match{}, false
}

// Decisions returns the compiled decisions in evaluation order.
func (s *Set) Decisions() []*Decision { return s.list }

// eval reports whether the node holds and its confidence in [0,1].
func (n *node) eval(results []signal.Result) (bool, float64) {
	switch n.op {
	case "":
		r := &results[n.slot]
		if n.level != "" {
			return r.Matched && r.Level == n.level, levelConfidence(r)
		}
		return r.Matched, clamp01(r.Score)
	case recipes.OpAND:
		conf := 1.0
		for _, c := range n.children {
			ok, cc := c.eval(results)
			if !ok {
				return false, 0
			}
			if cc < conf {
				conf = cc
			}
		}
		return true, conf
	case recipes.OpOR:
		hit, conf := false, 0.0
		for _, c := range n.children {
			if ok, cc := c.eval(results); ok {
				if !hit || cc > conf {
					conf = cc
				}
				hit = true
			}
		}
		return hit, conf
	default: // NOT
		ok, cc := n.children[0].eval(results)
		return !ok, 1 - cc
	}
}

// levelConfidence turns a complexity score (hard minus easy similarity, in
// [-1,1]) into a confidence for the grade the signal gave.
func levelConfidence(r *signal.Result) float64 {
	switch r.Level {
	case recipes.LevelHard, recipes.LevelEasy:
		s := r.Score
		if s < 0 {
			s = -s
		}
		return clamp01(0.5 + s/2)
	default:
		return 0.5
	}
}

func clamp01(f float64) float64 {
	if f < 0 {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

// explain lists the leaves that held within the matching branches.
func (n *node) explain(results []signal.Result, out []string, negated bool) []string {
	switch n.op {
	case "":
		if ok, _ := n.eval(results); ok != negated {
			if negated {
				return append(out, "NOT "+n.label)
			}
			return append(out, n.label)
		}
		return out
	case recipes.OpNOT:
		return n.children[0].explain(results, out, !negated)
	default:
		for _, c := range n.children {
			out = c.explain(results, out, negated)
		}
		return out
	}
}
