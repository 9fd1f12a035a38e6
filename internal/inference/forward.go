package inference

import (
	"context"
	"fmt"
	"sort"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// rowOutput is one row's slice of each session output: for a per-token output, its real tokens only.
type rowOutput struct {
	data  [][]float32 // per session output
	width []int       // per session output: values per token (rank 3) or per row (rank 2)
	perT  []bool      // per session output: true when data holds one width-sized vector per token
}

// forward runs encodings through the shared session: rows sorted by length, cut into passes bounded by
// MaxBatch rows and MaxBatchTokens padded tokens, each padded to its longest row.
func (m *Model) forward(ctx context.Context, encs []tokenizer.Encoding, tm *Timings) ([]rowOutput, error) {
	out := make([]rowOutput, len(encs))
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return encs[order[a]].Len() < encs[order[b]].Len() })
	for start := 0; start < len(order); {
		end := start
		for end < len(order) {
			rows := end - start + 1
			t := m.padLen(encs[order[end]].Len())
			if end > start && (rows > m.opts.MaxBatch || rows*t > m.opts.MaxBatchTokens) {
				break
			}
			end++
		}
		if err := m.pass(ctx, encs, order[start:end], out, tm); err != nil {
			return nil, err
		}
		start = end
	}
	return out, nil
}

func (m *Model) padLen(n int) int {
	if m.fixedT > 0 {
		return m.fixedT
	}
	if n < 1 {
		return 1
	}
	return n
}

func (m *Model) pass(ctx context.Context, encs []tokenizer.Encoding, rows []int, out []rowOutput, tm *Timings) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	T := 1
	for _, r := range rows {
		if n := m.padLen(encs[r].Len()); n > T {
			T = n
		}
	}
	B := len(rows)
	// The session (and ONNX Runtime's environment) must stay alive from the first tensor to the last Destroy.
	queued := time.Now()
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-m.sem }()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	tm.Queue += time.Since(queued)
	inputs := make([]ort.Value, len(m.inputs))
	defer func() {
		for _, v := range inputs {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	pad := m.tok.PadID()
	for k, in := range m.inputs {
		vals := make([]int64, B*T)
		for b, r := range rows {
			e := encs[r]
			row := vals[b*T : (b+1)*T]
			switch in.name {
			case "input_ids":
				for j := range row {
					row[j] = pad
				}
				copy(row, e.IDs)
			case "attention_mask":
				for j := 0; j < e.Len(); j++ {
					row[j] = 1
				}
			case "token_type_ids":
				copy(row, e.TypeIDs)
			case "position_ids":
				for j := 0; j < e.Len(); j++ {
					row[j] = int64(j)
				}
			}
		}
		if in.int32 {
			v32 := make([]int32, len(vals))
			for i, v := range vals {
				v32[i] = int32(v)
			}
			t, err := ort.NewTensor(ort.NewShape(int64(B), int64(T)), v32)
			if err != nil {
				return fmt.Errorf("input %s: %w", in.name, err)
			}
			inputs[k] = t
		} else {
			t, err := ort.NewTensor(ort.NewShape(int64(B), int64(T)), vals)
			if err != nil {
				return fmt.Errorf("input %s: %w", in.name, err)
			}
			inputs[k] = t
		}
	}

	began := time.Now()
	outputs, reused := m.takeRowOutputs(B)
	err := m.session.Run(inputs, outputs)
	tm.Forward += time.Since(began)
	defer func() {
		if reused && err == nil {
			m.rowOuts <- outputs // room: one set per pass in flight (sem)
			return
		}
		destroyValues(outputs)
	}()
	if err != nil {
		return fmt.Errorf("forward pass (%d rows of %d tokens): %w", B, T, err)
	}
	tm.Passes++
	tm.Rows += B
	tm.Tokens += B * T
	for b := range rows {
		out[rows[b]] = rowOutput{data: make([][]float32, len(outputs)), width: make([]int, len(outputs)), perT: make([]bool, len(outputs))}
	}
	for k, v := range outputs {
		t, ok := v.(*ort.Tensor[float32])
		if !ok {
			return fmt.Errorf("output %s is not a float32 tensor", m.outputs[k])
		}
		shape := t.GetShape()
		data := t.GetData()
		switch len(shape) {
		case 2:
			if int(shape[0]) != B {
				return fmt.Errorf("output %s has shape %v for %d rows", m.outputs[k], shape, B)
			}
			w := int(shape[1])
			for b, r := range rows {
				out[r].data[k] = append([]float32(nil), data[b*w:(b+1)*w]...)
				out[r].width[k] = w
			}
		case 3:
			if int(shape[0]) != B || int(shape[1]) != T {
				return fmt.Errorf("output %s has shape %v for %d rows of %d tokens", m.outputs[k], shape, B, T)
			}
			w := int(shape[2])
			for b, r := range rows {
				n := encs[r].Len()
				base := b * T * w
				out[r].data[k] = append([]float32(nil), data[base:base+n*w]...)
				out[r].width[k] = w
				out[r].perT[k] = true
			}
		default:
			return fmt.Errorf("output %s has rank %d; 2 or 3 expected", m.outputs[k], len(shape))
		}
	}
	return nil
}

// takeRowOutputs returns the output values for a pass of B rows: for one row
// of a model with fixed output widths, a reused set of [1, k] tensors
// (reused true; ONNX Runtime writes into them), else nils for ONNX Runtime to
// allocate.
func (m *Model) takeRowOutputs(B int) (outputs []ort.Value, reused bool) {
	if B == 1 && m.rowOuts != nil {
		select {
		case o := <-m.rowOuts:
			return o, true
		default:
		}
		o := make([]ort.Value, len(m.oneRowWidths))
		for k, w := range m.oneRowWidths {
			t, err := ort.NewEmptyTensor[float32](ort.NewShape(1, w))
			if err != nil {
				destroyValues(o)
				return make([]ort.Value, len(m.outputs)), false
			}
			o[k] = t
		}
		return o, true
	}
	return make([]ort.Value, len(m.outputs)), false
}

func destroyValues(vs []ort.Value) {
	for _, v := range vs {
		if v != nil {
			v.Destroy()
		}
	}
}
