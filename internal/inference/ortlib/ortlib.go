// Package ortlib finds the ONNX Runtime shared library and owns the process-wide ONNX Runtime environment.
//
// ONNX Runtime keeps one environment per process (github.com/yalue/onnxruntime_go wraps it in package state),
// so this package is the one place that initialises and destroys it, counting its users. It must not create
// sessions or know about models: package inference does that.
//
// The library is not vendored. `make onnxruntime` fetches libonnxruntime.so.1 (ONNX Runtime 1.24.1, from the npm
// package onnxruntime-node) into third_party/onnxruntime/ of the repository; Find locates it there, or where
// the caller or JUNCTION_ONNXRUNTIME_LIB says.
package ortlib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// EnvLibrary names the environment variable that gives the library's path.
const EnvLibrary = "JUNCTION_ONNXRUNTIME_LIB"

// FetchCommand is the command that fetches the library into the repository.
const FetchCommand = "make onnxruntime"

// Version is the ONNX Runtime release the Makefile fetches and the Go binding's C API headers match.
const Version = "1.24.1"

// RepoDir is where `make onnxruntime` puts the library, relative to the repository root.
const RepoDir = "third_party/onnxruntime"

// ErrNotFound is wrapped by Find's error when no library file exists in any searched place.
var ErrNotFound = errors.New("ONNX Runtime shared library not found")

func libraryNames() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"libonnxruntime.dylib", "libonnxruntime.1.dylib"}
	case "windows":
		return []string{"onnxruntime.dll"}
	}
	return []string{"libonnxruntime.so.1", "libonnxruntime.so"}
}

// Find returns the path of the ONNX Runtime shared library. An explicit path (a flag) wins, then
// $JUNCTION_ONNXRUNTIME_LIB; both must name an existing file. Otherwise it looks for third_party/onnxruntime/
// in the current directory and its parents, then in the executable's directory and its parents (and those of
// the file a symbolic link to the executable points at), then beside the executable, and then in the system
// library directories. So bin/junction of a checkout where `make onnxruntime` ran finds the library from any
// working directory without $JUNCTION_ONNXRUNTIME_LIB. The error names every place searched and the command that fetches the library.
func Find(explicit string) (string, error) {
	for _, c := range []struct{ path, from string }{{explicit, "the library path option"}, {os.Getenv(EnvLibrary), "$" + EnvLibrary}} {
		if c.path == "" {
			continue
		}
		st, err := os.Stat(c.path)
		if err != nil || st.IsDir() {
			return "", fmt.Errorf("%w: %s names %q, which is not a file; run `%s` in the Junction repository to fetch ONNX Runtime %s into %s/", ErrNotFound, c.from, c.path, FetchCommand, Version, RepoDir)
		}
		return c.path, nil
	}
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, ancestors(wd, RepoDir)...)
	}
	if exe, err := os.Executable(); err == nil {
		// A binary linked from elsewhere (/usr/local/bin/junction -> repo/bin/junction) finds the repository's
		// library through the link's target as well as beside the link.
		exes := []string{exe}
		if real, err := filepath.EvalSymlinks(exe); err == nil && real != exe {
			exes = append(exes, real)
		}
		for _, e := range exes {
			dirs = append(dirs, ancestors(filepath.Dir(e), RepoDir)...)
			dirs = append(dirs, filepath.Dir(e))
		}
	}
	dirs = append(dirs, "/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
	seen := map[string]bool{}
	var searched []string
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		searched = append(searched, d)
		for _, name := range libraryNames() {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (looked for %s in %s); run `%s` in the Junction repository to fetch ONNX Runtime %s into %s/, or give the library's path in $%s",
		ErrNotFound, strings.Join(libraryNames(), " or "), strings.Join(searched, ", "), FetchCommand, Version, RepoDir, EnvLibrary)
}

// ancestors lists dir/rel for dir and each of its parents.
func ancestors(dir, rel string) []string {
	var out []string
	for {
		out = append(out, filepath.Join(dir, rel))
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		dir = parent
	}
}

// env is the process-wide environment: ONNX Runtime allows one, and onnxruntime_go keeps it in package state.
var env struct {
	sync.Mutex
	users   int
	path    string
	version string
}

// Acquire initialises the ONNX Runtime environment from the library at path (or joins the one already
// running, which must come from the same file) and returns the runtime's version string and a release
// function; the environment is destroyed when the last user releases it. Release is idempotent.
func Acquire(path string) (version string, release func(), err error) {
	env.Lock()
	defer env.Unlock()
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	if env.users > 0 {
		if abs != env.path {
			return "", nil, fmt.Errorf("ONNX Runtime is already running in this process from %s; one process can load only one library (asked for %s)", env.path, abs)
		}
	} else {
		ort.SetSharedLibraryPath(abs)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			return "", nil, fmt.Errorf("starting ONNX Runtime from %s: %w (the Go binding expects ONNX Runtime %s; run `%s` to fetch it)", abs, err, Version, FetchCommand)
		}
		env.path = abs
		env.version = ort.GetVersion()
	}
	env.users++
	var once sync.Once
	return env.version, func() {
		once.Do(func() {
			env.Lock()
			defer env.Unlock()
			env.users--
			if env.users == 0 {
				_ = ort.DestroyEnvironment()
				env.path = ""
			}
		})
	}, nil
}
