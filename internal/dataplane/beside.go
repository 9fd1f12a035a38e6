package dataplane

// maxBeside bounds the response phases running beside requests: past it a
// response phase runs on its request's goroutine, so a burst of answers
// slows its own handlers instead of piling up goroutines, each holding an
// answer, without limit.
const maxBeside = 64

// runBeside runs fn on a goroutine of its own, the client having its answer
// already, or on the caller's when maxBeside are running.
func (p *Plane) runBeside(fn func()) {
	select {
	case p.beside <- struct{}{}:
		go func() {
			defer func() { <-p.beside }()
			fn()
		}()
	default:
		fn()
	}
}
