package junction

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/junction-router/junction/recipes"
)

// DefaultDeployment is the deployment ModelOptions shape: the one of this
// name in global.model_catalog.deployments, added when a model is given and
// the configuration has none.
const DefaultDeployment = "default"

// ModelOptions shape the default deployment, as the model argument and
// flags of `junction serve MODEL` do (errors name those flags). Only what is
// set changes: a nil field keeps the configured value. They hold for every
// configuration version served, those the management API activates too.
type ModelOptions struct {
	// Model is the artifact the default deployment serves (a built-in model
	// name or an absolute model directory); empty keeps the configured one.
	Model string
	// Engine "native" publishes the default deployment on the native API;
	// "auto" leaves the configuration as it is.
	Engine *string
	// Platform is the workers' device: auto, cpu or cuda.
	Platform *string
	// DataParallelSize is the number of replicas serve starts.
	DataParallelSize *int
	// DeviceIDs are the replicas' GPU ids, comma-separated (e.g. "0,1").
	DeviceIDs *string
	// Profile is the runtime profile (exact).
	Profile *string
	// Revision pins the model: a 40-character commit or an absolute path.
	Revision *string
	// Image, ImagePullPolicy and ContainerRuntime are refused: this build
	// runs workers as processes of the junction binary.
	Image, ImagePullPolicy, ContainerRuntime *string
}

// given names the options set, by their flag names.
func (f ModelOptions) given() map[string]bool {
	set := map[string]bool{}
	for name, p := range map[string]bool{
		"engine": f.Engine != nil, "platform": f.Platform != nil, "data-parallel-size": f.DataParallelSize != nil, "device-ids": f.DeviceIDs != nil,
		"runtime-profile": f.Profile != nil, "revision": f.Revision != nil, "image": f.Image != nil,
		"image-pull-policy": f.ImagePullPolicy != nil, "container-runtime": f.ContainerRuntime != nil,
	} {
		if p {
			set[name] = true
		}
	}
	return set
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// Apply returns doc (the configuration a Server starts with; nil for the
// built-in one) with the default deployment shaped by f, checked as a whole;
// doc itself when f is empty.
func (f ModelOptions) Apply(doc *recipes.Document) (*recipes.Document, error) {
	set := f.given()
	model := f.Model
	engine := "auto"
	if f.Engine != nil {
		engine = *f.Engine
	}
	if model == "" && len(set) == 0 {
		return doc, nil
	}
	switch {
	case set["image"] || set["image-pull-policy"] || set["container-runtime"]:
		if p := strings.ToLower(deref(f.ImagePullPolicy)); set["image-pull-policy"] && !slices.Contains([]string{"always", "ifnotpresent", "never"}, p) {
			return nil, fmt.Errorf("--image-pull-policy %q: use always, ifnotpresent or never", deref(f.ImagePullPolicy))
		}
		if r := deref(f.ContainerRuntime); set["container-runtime"] && r != "docker" && r != "podman" {
			return nil, fmt.Errorf("--container-runtime %q: use docker or podman", r)
		}
		return nil, errors.New("--image, --image-pull-policy and --container-runtime: this build runs model workers as processes of the junction binary, not in containers; leave them out (serve starts the workers itself)")
	case set["platform"] && deref(f.Platform) == "rocm":
		return nil, errors.New("--platform rocm: this build's ONNX Runtime has no ROCm execution provider; use auto, cpu or cuda")
	case set["platform"] && !slices.Contains([]string{"auto", "cpu", "cuda"}, deref(f.Platform)):
		return nil, fmt.Errorf("--platform %q: use auto, cpu or cuda", deref(f.Platform))
	case engine != "auto" && engine != "native":
		return nil, fmt.Errorf("--engine %q: use native (publish the default deployment on the native API) or auto", engine)
	case set["data-parallel-size"] && derefInt(f.DataParallelSize) < 1:
		return nil, fmt.Errorf("--data-parallel-size %d: give at least 1 replica", derefInt(f.DataParallelSize))
	}
	var ids []int
	if set["device-ids"] {
		for _, s := range strings.Split(deref(f.DeviceIDs), ",") {
			id, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || id < 0 {
				return nil, fmt.Errorf("--device-ids %q: give GPU ids as non-negative integers separated by commas, e.g. 0,1", deref(f.DeviceIDs))
			}
			ids = append(ids, id)
		}
		if set["platform"] && deref(f.Platform) == "cpu" {
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
	i := slices.IndexFunc(mc.Deployments, func(d recipes.ModelDeployment) bool { return d.Name == DefaultDeployment })
	if i < 0 {
		if model == "" {
			return nil, fmt.Errorf("the model options shape the deployment named %q, and the configuration has none: give a model (junction serve jailbreak-glove ...) or declare it in global.model_catalog.deployments", DefaultDeployment)
		}
		mc.Deployments = append(mc.Deployments, recipes.ModelDeployment{Name: DefaultDeployment})
		i = len(mc.Deployments) - 1
	}
	d := &mc.Deployments[i]
	if model != "" {
		d.Artifact = model
	}
	if set["runtime-profile"] {
		d.Profile = deref(f.Profile)
	}
	if set["revision"] {
		d.Revision = deref(f.Revision)
	}
	if d.Endpoint != "" && (set["platform"] || set["data-parallel-size"] || set["device-ids"]) {
		return nil, fmt.Errorf("deployment %q attaches to the worker at %s; --platform, --data-parallel-size and --device-ids shape workers serve starts", DefaultDeployment, d.Endpoint)
	}
	device := d.Device
	if set["platform"] {
		device = deref(f.Platform)
	}
	if set["data-parallel-size"] || set["device-ids"] {
		n := derefInt(f.DataParallelSize)
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
	if engine == "native" {
		n := out.Global.Services.NativeAPI
		if n == nil {
			n = &recipes.NativeAPI{}
			out.Global.Services.NativeAPI = n
		}
		n.Enabled = true
		// Publishing the model adds it to the published list only: keys
		// keep the grants they list, so selecting a model never widens them.
		if len(n.Models) > 0 && !slices.Contains(n.Models, DefaultDeployment) {
			n.Models = append(n.Models, DefaultDeployment)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("the configuration with the command line's model options: %w", err)
	}
	return out, nil
}
