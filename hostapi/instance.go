package hostapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/junction-router/junction/hostapi/abi"
)

// instance is one instantiated module. It is used by one call at a time.
type instance struct {
	mod    api.Module
	mem    api.Memory
	exp    exports
	stack  [2]uint64
	stderr *tailWriter
	// memLimit is the memory limit in bytes, to tell running out of memory
	// from other traps.
	memLimit uint64
	// buf and bufSize are the last buffer junction_alloc returned: the ABI
	// reserves it for the host until the next junction_alloc, so requests
	// that fit are written there without a call into the guest.
	buf, bufSize uint32
	// rec is reused to encode each request record.
	rec []byte
}

// instantiate makes an instance: no file system, no network, no environment,
// no arguments, a fake clock and a fixed random source (wazero's defaults),
// stdout discarded and the tail of stderr kept for fault messages. The WASI
// reactor initializer runs under the call deadline.
func (m *Module) instantiate(ctx context.Context, rt wazero.Runtime, c wazero.CompiledModule, lim Limits) (*instance, error) {
	tail := &tailWriter{max: 1024}
	mc := wazero.NewModuleConfig().WithName("").WithStderr(tail).WithStartFunctions()
	if m.initialize {
		mc = mc.WithStartFunctions(abi.ExportInitialize)
	}
	ictx, cancel := context.WithTimeout(ctx, max(lim.CallTimeout, initTimeout))
	defer cancel()
	mod, err := rt.InstantiateModule(ictx, c, mc)
	if err != nil {
		return nil, describeFault(err, tail)
	}
	inst := &instance{mod: mod, mem: mod.Memory(), exp: lookupExports(mod), stderr: tail, memLimit: uint64(lim.MemoryPages) << 16}
	if inst.mem == nil || inst.exp.alloc == nil || inst.exp.onRequest == nil {
		_ = mod.Close(ctx)
		return nil, errors.New("the module lacks its memory or a required export")
	}
	return inst, nil
}

func (i *instance) close(ctx context.Context) { _ = i.mod.Close(ctx) }

// callPacked calls a function returning ptr<<32|len and copies the bytes out.
func (i *instance) callPacked(ctx context.Context, fn api.Function, maxOut int, args ...uint64) ([]byte, error) {
	n := copy(i.stack[:], args)
	if err := fn.CallWithStack(ctx, i.stack[:max(n, 1)]); err != nil {
		return nil, describeFault(err, i.stderr)
	}
	return i.readPacked(i.stack[0], maxOut)
}

func (i *instance) readPacked(v uint64, maxOut int) ([]byte, error) {
	ptr, n := abi.Unpack(v)
	if int(n) > maxOut {
		return nil, &Fault{Kind: FaultOutput, Err: fmt.Errorf("the module returned %d bytes, more than the limit of %d", n, maxOut)}
	}
	b, ok := i.mem.Read(ptr, n)
	if !ok {
		return nil, &Fault{Kind: FaultMalformed, Err: fmt.Errorf("the module returned bytes [%d, %d) outside its memory", ptr, uint64(ptr)+uint64(n))}
	}
	return append([]byte(nil), b...), nil
}

// handle runs one handler call: the request record is copied in once (into
// the guest's buffer, asking junction_alloc for a larger one only when it
// does not fit), and the result record copied out once.
func (i *instance) handle(ctx context.Context, fn api.Function, rec []byte, maxOut int) ([]byte, error) {
	if i.buf == 0 || uint32(len(rec)) > i.bufSize {
		size := max(uint32(len(rec)), 4096)
		i.stack[0] = uint64(size)
		if err := i.exp.alloc.CallWithStack(ctx, i.stack[:]); err != nil {
			return nil, i.fault(err)
		}
		i.buf, i.bufSize = uint32(i.stack[0]), size
	}
	ptr := i.buf
	if !i.mem.Write(ptr, rec) {
		return nil, &Fault{Kind: FaultMalformed, Err: fmt.Errorf("%s(%d) returned %d, outside the module's memory", abi.ExportAlloc, len(rec), ptr)}
	}
	i.stack[0], i.stack[1] = uint64(ptr), uint64(len(rec))
	if err := fn.CallWithStack(ctx, i.stack[:]); err != nil {
		return nil, i.fault(err)
	}
	return i.readPacked(i.stack[0], maxOut)
}

// fault classifies a failed call; a trap or exit with the memory (nearly) at
// its limit is running out of memory, whatever the language's runtime said.
func (i *instance) fault(err error) error {
	err = describeFault(err, i.stderr)
	var f *Fault
	if errors.As(err, &f) && (f.Kind == FaultTrap || f.Kind == FaultExit) && i.memLimit > 0 {
		if size := uint64(i.mem.Size()); size*10 >= i.memLimit*9 {
			return &Fault{Kind: FaultMemory, Err: fmt.Errorf("the module ran out of memory (%d of its %d bytes in use): %w", size, i.memLimit, f.Err)}
		}
	}
	return err
}

// Fault kinds, the label of the faults metric.
const (
	FaultTrap      = "trap"      // a wasm trap (unreachable, out of bounds, …)
	FaultExit      = "exit"      // the module exited (a Go panic that escaped, abort)
	FaultDeadline  = "deadline"  // the call ran past its deadline
	FaultCanceled  = "canceled"  // the request was canceled during the call
	FaultMemory    = "memory"    // the module ran out of its memory limit
	FaultOutput    = "output"    // the result was larger than the limit
	FaultMalformed = "malformed" // the result record could not be read
)

// Fault is a module failing in a way that discards its instance.
type Fault struct {
	Kind string
	Err  error
}

func (f *Fault) Error() string { return "plugin module fault (" + f.Kind + "): " + f.Err.Error() }

func (f *Fault) Unwrap() error { return f.Err }

// describeFault classifies an error from a call into the module.
func describeFault(err error, stderr *tailWriter) error {
	var f *Fault
	if errors.As(err, &f) {
		return f
	}
	tail := stderr.String()
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return &Fault{Kind: FaultDeadline, Err: errors.New("the call ran past its deadline and the instance was closed")}
		case sys.ExitCodeContextCanceled:
			return &Fault{Kind: FaultCanceled, Err: errors.New("the request was canceled during the call")}
		}
		if strings.Contains(tail, "out of memory") {
			return &Fault{Kind: FaultMemory, Err: fmt.Errorf("the module ran out of memory (exit code %d): %s", exit.ExitCode(), lastLines(tail))}
		}
		return &Fault{Kind: FaultExit, Err: fmt.Errorf("the module exited with code %d: %s", exit.ExitCode(), lastLines(tail))}
	}
	msg := err.Error()
	if strings.Contains(tail, "out of memory") {
		return &Fault{Kind: FaultMemory, Err: fmt.Errorf("the module ran out of memory: %s", lastLines(tail))}
	}
	if tail != "" {
		msg += ": " + lastLines(tail)
	}
	return &Fault{Kind: FaultTrap, Err: errors.New(msg)}
}

// tailWriter keeps the last max bytes written (a module's stderr).
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLines returns the first lines of a Go fatal error, or the last line.
func lastLines(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no message)"
	}
	lines := strings.Split(s, "\n")
	for k, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			end := min(k+2, len(lines))
			return strings.Join(lines[k:end], " | ")
		}
	}
	return lines[len(lines)-1]
}
