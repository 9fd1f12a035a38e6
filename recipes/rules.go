package recipes

import "encoding/json"

// MarshalJSON writes an operator node as {operator, conditions} with conditions
// always present (an empty AND is written "conditions": [], which is what the
// schema asks for), and a leaf as {type, name}.
func (n RuleNode) MarshalJSON() ([]byte, error) {
	if n.Operator != "" {
		conds := n.Conditions
		if conds == nil {
			conds = []RuleNode{}
		}
		return json.Marshal(struct {
			Operator   string     `json:"operator"`
			Conditions []RuleNode `json:"conditions"`
			Type       string     `json:"type,omitempty"`
			Name       string     `json:"name,omitempty"`
		}{n.Operator, conds, n.Type, n.Name})
	}
	type plain RuleNode
	return json.Marshal(plain(n))
}

// Leaves calls fn for every signal condition under n, depth first.
func (n RuleNode) Leaves(fn func(RuleNode)) {
	if n.IsLeaf() {
		fn(n)
		return
	}
	for _, c := range n.Conditions {
		c.Leaves(fn)
	}
}
