package main

import (
	"flag"
	"fmt"

	"github.com/junction-router/junction"
)

// serveModelFlags are the spec's frontend serve options: a positional model
// and the flags below shape the default deployment from the command line.
// Only what is given changes; omitting an option keeps the configured value.
type serveModelFlags struct {
	fs               *flag.FlagSet
	engine, platform string
	deviceIDs        string
	dp               int
	profile          string
	revision         string
	image            string
	pullPolicy       string
	containerRuntime string
}

func addServeModelFlags(fs *flag.FlagSet) *serveModelFlags {
	f := &serveModelFlags{fs: fs}
	const engineUsage = "native publishes the default deployment on the native API (global.services.native_api, 8899); auto leaves the configuration as it is"
	fs.StringVar(&f.engine, "engine", "auto", engineUsage)
	fs.StringVar(&f.engine, "e", "auto", "short for --engine")
	fs.StringVar(&f.platform, "platform", "", "device of the default deployment's workers: auto, cpu or cuda (rocm is refused: this build's ONNX Runtime has no ROCm provider)")
	fs.IntVar(&f.dp, "data-parallel-size", 0, "replicas of the default deployment (workers serve starts)")
	fs.IntVar(&f.dp, "dp", 0, "short for --data-parallel-size")
	fs.StringVar(&f.deviceIDs, "device-ids", "", "GPU ids of the default deployment's replicas, one per replica (e.g. 0,1): cuda:0, cuda:1")
	fs.StringVar(&f.profile, "runtime-profile", "", "runtime profile of the default deployment (exact; the only one this build's worker runs)")
	fs.StringVar(&f.revision, "revision", "", "pin the default deployment's model: a 40-character commit or an absolute local path")
	fs.StringVar(&f.image, "image", "", "container image of the workers (refused: this build runs workers as processes of this binary)")
	fs.StringVar(&f.pullPolicy, "image-pull-policy", "", "always, ifnotpresent or never (refused with --image)")
	fs.StringVar(&f.containerRuntime, "container-runtime", "", "docker or podman (refused: this build runs workers as processes of this binary)")
	return f
}

// given reports which of these flags the command line set.
func (f *serveModelFlags) given() map[string]bool {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "e":
			set["engine"] = true
		case "dp":
			set["data-parallel-size"] = true
		case "engine", "platform", "data-parallel-size", "device-ids", "runtime-profile", "revision", "image", "image-pull-policy", "container-runtime":
			set[fl.Name] = true
		}
	})
	return set
}

// argError is a mistake in serve's arguments that the flag package has not
// already reported.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// parseServeArgs parses serve's arguments, flags before or after the one
// positional model.
func parseServeArgs(fs *flag.FlagSet, args []string) (model string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			return model, nil
		}
		if model != "" {
			return "", &argError{fmt.Sprintf("unexpected argument %q: serve takes one model (%q is already given)", fs.Arg(0), model)}
		}
		model, args = fs.Arg(0), fs.Args()[1:]
	}
}

// options are the model options the command line gave: a flag not given
// keeps the configured value.
func (f *serveModelFlags) options(model string) junction.ModelOptions {
	set := f.given()
	o := junction.ModelOptions{Model: model}
	str := func(name string, v string) *string {
		if !set[name] {
			return nil
		}
		return &v
	}
	o.Engine = str("engine", f.engine)
	o.Platform = str("platform", f.platform)
	o.DeviceIDs = str("device-ids", f.deviceIDs)
	o.Profile = str("runtime-profile", f.profile)
	o.Revision = str("revision", f.revision)
	o.Image = str("image", f.image)
	o.ImagePullPolicy = str("image-pull-policy", f.pullPolicy)
	o.ContainerRuntime = str("container-runtime", f.containerRuntime)
	if set["data-parallel-size"] {
		dp := f.dp
		o.DataParallelSize = &dp
	}
	return o
}
