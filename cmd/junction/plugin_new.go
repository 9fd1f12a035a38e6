package main

import (
	"flag"
	"fmt"
	"io"
	"os/exec"

	"github.com/junction-router/junction/internal/modbuild"
	"github.com/junction-router/junction/internal/plugin/scaffold"
)

func pluginNewCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugin new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "the directory to create the project in")
	module := fs.String("module", "", "the project's Go module path (default example.com/NAME)")
	sdk := fs.String("sdk", "", `a local Junction checkout to build against (a replace directive); found automatically when run inside one; "embedded" (the default elsewhere) writes the SDK this binary carries into the project`)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: junction plugin new NAME [--dir DIR] [--module PATH] [--sdk DIR]")
		return errUsage
	}
	name := pos[0]
	root, err := scaffold.Write(scaffold.Options{Name: name, Dir: *dir, Module: *module, SDK: *sdk})
	if err != nil {
		return err
	}
	tidy := exec.Command(modbuild.GoCommand(), "mod", "tidy")
	tidy.Dir = root
	if out, err := tidy.CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "junction plugin new: go mod tidy failed (run it yourself once the SDK can be fetched): %v\n%s", err, out)
	}
	fmt.Fprintf(stdout, "created %s\n\n  cd %s\n  junction plugin build        # %s.wasm\n  junction plugin test         # runs testdata/*.json\n  junction plugin inspect %s.wasm\n", root, root, name, name)
	return nil
}
