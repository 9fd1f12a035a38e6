package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/junction-router/junction/recipes"
)

// defaultDeployment is the deployment the serve command's model options
// shape: the one of this name in global.model_catalog.deployments, added
// when a model is given and the configuration has none.
const defaultDeployment = "default"

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

// apply returns doc (the configuration serve starts with; nil for the
// built-in one) with the default deployment shaped by model and the flags
// given, checked as a whole; doc itself when neither is given.
func (f *serveModelFlags) apply(doc *recipes.Document, model string) (*recipes.Document, error) {
	set := f.given()
	if model == "" && len(set) == 0 {
		return doc, nil
	}
	switch {
	case set["image"] || set["image-pull-policy"] || set["container-runtime"]:
		if p := strings.ToLower(f.pullPolicy); set["image-pull-policy"] && !slices.Contains([]string{"always", "ifnotpresent", "never"}, p) {
			return nil, fmt.Errorf("--image-pull-policy %q: use always, ifnotpresent or never", f.pullPolicy)
		}
		if r := f.containerRuntime; set["container-runtime"] && r != "docker" && r != "podman" {
			return nil, fmt.Errorf("--container-runtime %q: use docker or podman", r)
		}
		return nil, errors.New("--image, --image-pull-policy and --container-runtime: this build runs model workers as processes of the junction binary, not in containers; leave them out (serve starts the workers itself)")
	case set["platform"] && f.platform == "rocm":
		return nil, errors.New("--platform rocm: this build's ONNX Runtime has no ROCm execution provider; use auto, cpu or cuda")
	case set["platform"] && !slices.Contains([]string{"auto", "cpu", "cuda"}, f.platform):
		return nil, fmt.Errorf("--platform %q: use auto, cpu or cuda", f.platform)
	case f.engine != "auto" && f.engine != "native":
		return nil, fmt.Errorf("--engine %q: use native (publish the default deployment on the native API) or auto", f.engine)
	case set["data-parallel-size"] && f.dp < 1:
		return nil, fmt.Errorf("--data-parallel-size %d: give at least 1 replica", f.dp)
	}
	var ids []int
	if set["device-ids"] {
		for _, s := range strings.Split(f.deviceIDs, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || id < 0 {
				return nil, fmt.Errorf("--device-ids %q: give GPU ids as non-negative integers separated by commas, e.g. 0,1", f.deviceIDs)
			}
			ids = append(ids, id)
		}
		if set["platform"] && f.platform == "cpu" {
			return nil, errors.New("--device-ids name GPUs, and --platform cpu runs on the CPU; leave one of them out")
		}
	}

	if doc == nil {
		builtin, _, err := recipes.ParseSource(recipes.BuiltinYAML())
		if err != nil {
			return nil, err
		}
		doc = builtin
	}
	out := doc.Clone()
	mc := out.Global.ModelCatalog
	if mc == nil {
		mc = &recipes.ModelCatalog{}
		out.Global.ModelCatalog = mc
	}
	i := slices.IndexFunc(mc.Deployments, func(d recipes.ModelDeployment) bool { return d.Name == defaultDeployment })
	if i < 0 {
		if model == "" {
			return nil, fmt.Errorf("the model options shape the deployment named %q, and the configuration has none: give a model (junction serve jailbreak-glove ...) or declare it in global.model_catalog.deployments", defaultDeployment)
		}
		mc.Deployments = append(mc.Deployments, recipes.ModelDeployment{Name: defaultDeployment})
		i = len(mc.Deployments) - 1
	}
	d := &mc.Deployments[i]
	if model != "" {
		d.Artifact = model
	}
	if set["runtime-profile"] {
		d.Profile = f.profile
	}
	if set["revision"] {
		d.Revision = f.revision
	}
	if d.Endpoint != "" && (set["platform"] || set["data-parallel-size"] || set["device-ids"]) {
		return nil, fmt.Errorf("deployment %q attaches to the worker at %s; --platform, --data-parallel-size and --device-ids shape workers serve starts", defaultDeployment, d.Endpoint)
	}
	device := d.Device
	if set["platform"] {
		device = f.platform
	}
	if set["data-parallel-size"] || set["device-ids"] {
		n := f.dp
		if !set["data-parallel-size"] {
			n = len(ids)
		}
		if ids != nil && len(ids) != n {
			return nil, fmt.Errorf("--device-ids lists %d GPUs for %d replicas; give one id per replica", len(ids), n)
		}
		d.Replicas = nil
		for r := range n {
			dev := device
			if ids != nil {
				dev = "cuda:" + strconv.Itoa(ids[r])
			}
			d.Replicas = append(d.Replicas, recipes.DeploymentReplica{Device: dev})
		}
		d.Device = ""
	} else if set["platform"] {
		d.Device = device
		for r := range d.Replicas {
			if d.Replicas[r].Endpoint == "" {
				d.Replicas[r].Device = device
			}
		}
	}
	if f.engine == "native" {
		n := out.Global.Services.NativeAPI
		if n == nil {
			n = &recipes.NativeAPI{}
			out.Global.Services.NativeAPI = n
		}
		n.Enabled = true
		// Publishing the model adds it to the published list only: keys
		// keep the grants they list, so selecting a model never widens them.
		if len(n.Models) > 0 && !slices.Contains(n.Models, defaultDeployment) {
			n.Models = append(n.Models, defaultDeployment)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("the configuration with the command line's model options: %w", err)
	}
	return out, nil
}
