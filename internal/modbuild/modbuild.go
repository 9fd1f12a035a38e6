// Package modbuild compiles plugin guests (the built-ins, and authors' plugins
// through `junction plugin build`) into WebAssembly modules the same way every
// time, so that the modules embedded in the binary can be checked against
// their sources: GOOS=wasip1 GOARCH=wasm,
// -buildmode=c-shared, -trimpath, -buildvcs=false, no cgo, and the caller's
// GOFLAGS ignored. The same toolchain gives the same bytes.
//
// It shells out to the go command: it is for `make plugins` and the tests,
// never for anything that serves traffic.
package modbuild

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Flags are the go build flags of every built-in module.
var Flags = []string{"build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false"}

// Build compiles the guest package at dir (a directory inside the module
// rooted at root) and returns the module's bytes.
func Build(root, dir string) ([]byte, error) {
	out, err := os.MkdirTemp("", "junction-modbuild-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	file := filepath.Join(out, "plugin.wasm")
	args := append(append([]string(nil), Flags...), "-o", file, "./"+filepath.ToSlash(dir))
	cmd := exec.Command(GoCommand(), args...)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (GOOS=wasip1 GOARCH=wasm) in %s: %v\n%s", strings.Join(args, " "), root, err, stderr.String())
	}
	return os.ReadFile(file)
}

// GoCommand is the go command of the running toolchain when it can be found
// (so a test builds with the Go that runs it), else "go" from PATH.
func GoCommand() string {
	// runtime.GOROOT is deprecated because a copied binary's build-time root
	// may not exist; that case falls through to PATH below, and in tests (the
	// case this serves) it is the toolchain running them.
	//lint:ignore SA1019 see above
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

// GoVersion is the version the go command reports ("go1.26.8").
func GoVersion() (string, error) {
	out, err := exec.Command(GoCommand(), "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GOOS="), strings.HasPrefix(kv, "GOARCH="), strings.HasPrefix(kv, "GOFLAGS="),
			strings.HasPrefix(kv, "CGO_ENABLED="):
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Gzip compresses a module for embedding (best compression, no name or time
// in the header, so the output depends on the input alone).
func Gzip(wasm []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = w.Write(wasm)
	_ = w.Close()
	return b.Bytes()
}
