package inference

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/junction-router/junction/internal/inference/ortlib"
)

// Options configure a Runtime.
type Options struct {
	// LibraryPath is the ONNX Runtime shared library; empty searches for it (see ortlib.Find:
	// $JUNCTION_ONNXRUNTIME_LIB, third_party/onnxruntime/ as fetched by `make onnxruntime`, system paths).
	LibraryPath string
	// Device is the default device of the models loaded: "auto" (the default: CUDA when its execution provider
	// loads, else CPU, with the reason in Info.DeviceNote), "cpu", "cuda" or "cuda:N" (fails when CUDA cannot
	// be used).
	Device string
	// Threads is the number of intra-op CPU threads of each session; 0 means all cores.
	Threads int
}

// Runtime is a started ONNX Runtime with default device settings. It is safe for concurrent use. Close it
// after closing its models.
type Runtime struct {
	libPath string
	version string
	device  device
	threads int

	mu     sync.Mutex
	closed bool
	models map[*Model]struct{} // open models, closed by Close
	// tokenizers are the parsed tokenizer.json files of open models, by content digest: models that load the
	// same file share one.
	tokenizers map[[32]byte]*sharedTokenizer
	release    func()
}

// device is a parsed device string.
type device struct {
	kind string // "auto", "cpu", "cuda"
	id   int
}

func (d device) String() string {
	if d.kind == "cuda" {
		return "cuda:" + strconv.Itoa(d.id)
	}
	return d.kind
}

// ParseDevice checks a device string: auto, cpu, cuda or cuda:N.
func ParseDevice(s string) error {
	_, err := parseDevice(s)
	return err
}

func parseDevice(s string) (device, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch {
	case s == "" || s == "auto":
		return device{kind: "auto"}, nil
	case s == "cpu":
		return device{kind: "cpu"}, nil
	case s == "cuda" || s == "gpu":
		return device{kind: "cuda"}, nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || n < 0 {
			return device{}, invalid("device %q: the GPU index after cuda: must be a number ≥ 0", s)
		}
		return device{kind: "cuda", id: n}, nil
	}
	return device{}, invalid("device %q is not one of auto, cpu, cuda, cuda:N (rocm, xpu and mps are not built into this runtime)", s)
}

// Open finds and starts ONNX Runtime. A missing library gives one error naming the command that fetches it
// (`make onnxruntime`).
func Open(o Options) (*Runtime, error) {
	dev, err := parseDevice(o.Device)
	if err != nil {
		return nil, err
	}
	if o.Threads < 0 {
		return nil, invalid("threads %d: must be ≥ 0 (0 = all cores)", o.Threads)
	}
	path, err := ortlib.Find(o.LibraryPath)
	if err != nil {
		return nil, err
	}
	version, release, err := ortlib.Acquire(path)
	if err != nil {
		return nil, err
	}
	threads := o.Threads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	return &Runtime{libPath: path, version: version, device: dev, threads: threads, release: release, models: map[*Model]struct{}{},
		tokenizers: map[[32]byte]*sharedTokenizer{}}, nil
}

// Version is the ONNX Runtime version string of the loaded library.
func (r *Runtime) Version() string { return r.version }

// LibraryPath is the library file in use.
func (r *Runtime) LibraryPath() string { return r.libPath }

// Close closes every model still open (calls in flight finish first; later calls fail with ErrClosed) and
// releases the ONNX Runtime environment.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	models := make([]*Model, 0, len(r.models))
	for m := range r.models {
		models = append(models, m)
	}
	r.mu.Unlock()
	var first error
	for _, m := range models {
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.release()
	return first
}

// register records an open model; it fails when the runtime was closed meanwhile.
func (r *Runtime) register(m *Model) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.models[m] = struct{}{}
	return nil
}

func (r *Runtime) unregister(m *Model) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.models, m)
}

// sessionOptions builds ORT session options for a device; it reports the device used and, for auto, why CUDA
// was not.
func (r *Runtime) sessionOptions(dev device, threads int) (*ort.SessionOptions, string, string, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, "", "", err
	}
	if err := so.SetIntraOpNumThreads(threads); err != nil {
		so.Destroy()
		return nil, "", "", err
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		so.Destroy()
		return nil, "", "", err
	}
	if dev.kind == "cpu" {
		return so, "cpu", "", nil
	}
	cudaErr := appendCUDA(so, dev.id)
	if cudaErr == nil {
		return so, device{kind: "cuda", id: dev.id}.String(), "", nil
	}
	if dev.kind == "cuda" {
		so.Destroy()
		return nil, "", "", fmt.Errorf("device %s: the CUDA execution provider could not be added: %v (the onnxruntime-node library fetched by `make onnxruntime` is CPU-only unless libonnxruntime_providers_cuda.so and libonnxruntime_providers_shared.so from an ONNX Runtime %s GPU build lie beside it)", dev, cudaErr, ortlib.Version)
	}
	return so, "cpu", "auto chose cpu: CUDA execution provider unavailable: " + firstLine(cudaErr.Error()), nil
}

func appendCUDA(so *ort.SessionOptions, id int) error {
	opts, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer opts.Destroy()
	if err := opts.Update(map[string]string{"device_id": strconv.Itoa(id)}); err != nil {
		return err
	}
	return so.AppendExecutionProviderCUDA(opts)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// checkOpen fails when the runtime was closed.
func (r *Runtime) checkOpen(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return ctx.Err()
}
