package inference

import (
	"context"
	"time"
)

// HeadsResult is one text's rows of a TaskHeads model: Rows[w][k] is window w's row of output k
// (Info.Output lists the outputs, comma-separated, in this order); with overflow truncate there is one
// window. Content[w] is how many of the text's tokens window w holds.
type HeadsResult struct {
	Rows      [][][]float32
	Content   []int
	Usage     Usage
	Truncated bool
	Err       *ItemError
}

// HeadsResponse is the result of Heads.
type HeadsResponse struct {
	Results []HeadsResult
	Usage   Usage
	Timings Timings
}

// Heads runs a TaskHeads model once over texts (every window of each under overflow window) and returns
// each output's raw rows; the caller turns them into answers. Inputs that break the long-input rules fail
// alone (ItemError), as in Classify.
func (m *Model) Heads(ctx context.Context, texts []string, o InputOptions) (HeadsResponse, error) {
	var resp HeadsResponse
	if err := m.checkTask("heads", TaskHeads); err != nil {
		return resp, err
	}
	l, err := m.limits(o)
	if err != nil {
		return resp, err
	}
	p := m.prepare(Texts(texts...), l, false, &resp.Timings)
	outs, err := m.forward(ctx, p.encs, &resp.Timings)
	if err != nil {
		return resp, err
	}
	began := time.Now()
	resp.Results = make([]HeadsResult, len(texts))
	for i, it := range p.items {
		r := &resp.Results[i]
		r.Usage, r.Truncated, r.Err = it.usage, it.truncated, it.err
		resp.Usage = resp.Usage.Add(it.usage)
		if it.err != nil {
			continue
		}
		rows := outs[p.first[i] : p.first[i]+len(it.encs)]
		r.Rows = make([][][]float32, len(rows))
		for w, row := range rows {
			r.Rows[w] = row.data
		}
		r.Content = it.content
	}
	resp.Timings.Post += time.Since(began)
	return resp, nil
}
