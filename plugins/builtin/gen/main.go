// Command gen rebuilds the built-in plugin modules from their guest packages
// and writes them, compressed, with their manifest into plugins/builtin/modules
// (make plugins runs it from the repository root). The build is reproducible:
// see internal/modbuild.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/junction-router/junction/internal/modbuild"
	"github.com/junction-router/junction/plugins/builtin"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "plugins:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	version, err := modbuild.GoVersion()
	if err != nil {
		return err
	}
	man := builtin.Manifest{GoVersion: version, Flags: modbuild.Flags, Plugins: make([]builtin.Plugin, len(builtin.Sources))}
	outDir := filepath.Join(root, "plugins", "builtin", "modules")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	errs := make([]error, len(builtin.Sources))
	var wg sync.WaitGroup
	for i, src := range builtin.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wasm, err := modbuild.Build(root, src.Package)
			if err != nil {
				errs[i] = err
				return
			}
			sum := sha256.Sum256(wasm)
			p := src
			p.File, p.SHA256, p.Size = builtin.FileName(src.Type), hex.EncodeToString(sum[:]), len(wasm)
			man.Plugins[i] = p
			errs[i] = os.WriteFile(filepath.Join(outDir, p.File), modbuild.Gzip(wasm), 0o644)
			fmt.Printf("plugins: %-20s %8d bytes  sha256 %s\n", p.Type, p.Size, p.SHA256[:16])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	raw, _ := json.MarshalIndent(man, "", "  ")
	return os.WriteFile(filepath.Join(outDir, "manifest.json"), append(raw, '\n'), 0o644)
}
