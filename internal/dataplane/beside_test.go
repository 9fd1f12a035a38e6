package dataplane

import (
	"sync"
	"testing"
)

// Response phases run on goroutines of their own up to maxBeside; the next
// one runs on its caller's goroutine, so none piles up.
func TestRunBesideIsBounded(t *testing.T) {
	p := New(Config{})
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(maxBeside)
	for range maxBeside {
		p.runBeside(func() {
			started.Done()
			<-release
		})
	}
	started.Wait()
	ran := false
	p.runBeside(func() { ran = true })
	if !ran {
		t.Fatal("with every slot taken, the response phase did not run on the caller's goroutine")
	}
	close(release)
}
