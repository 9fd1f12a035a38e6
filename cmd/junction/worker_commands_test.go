package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

func TestWorkerListModels(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the model directories are written on first use
	code, out, errOut := runCLI(t, "worker", "list-models")
	if code != 0 {
		t.Fatalf("list-models: %d %s", code, errOut)
	}
	var got struct {
		Models []builtinModel `json:"models"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tasks := map[string]string{}
	for _, m := range got.Models {
		tasks[m.Name] = m.Task
		if !isCommit(m.Revision) || !strings.HasPrefix(m.Digest, "sha256:"+m.Revision) || m.Dir == "" {
			t.Errorf("model %+v", m)
		}
		// The revision listed is one model@revision accepts, and the files
		// it names are checked against it.
		if _, err := parseWorkerArgs([]string{m.Name + "@" + m.Revision}, &bytes.Buffer{}); err != nil {
			t.Errorf("%s@%s refused: %v", m.Name, m.Revision, err)
		}
		if builtin, err := defaultmodels.CheckLoad(m.Dir, m.Revision); !builtin || err != nil {
			t.Errorf("CheckLoad(%s, %s) = %v, %v", m.Dir, m.Revision, builtin, err)
		}
		if m.Name == "domain-glove" && len(m.Labels) != 14 {
			t.Errorf("domain labels: %v", m.Labels)
		}
	}
	if len(got.Models) != 3 || tasks["embed-glove"] != "embedding" || tasks["jailbreak-glove"] != "sequence_classification" {
		t.Errorf("models: %+v", got.Models)
	}
	if code, _, errOut := runCLI(t, "worker", "list-models", "extra"); code == 0 || !strings.Contains(errOut, "no arguments") {
		t.Errorf("list-models with an argument: %d %s", code, errOut)
	}
}

func TestWorkerListPluginsAndDevices(t *testing.T) {
	code, out, _ := runCLI(t, "worker", "list-plugins")
	if code != 0 || strings.Join(strings.Fields(out), "") != `{"plugins":[]}` {
		t.Errorf("list-plugins: %d %s", code, out)
	}
	orttest.Library(t)
	code, out, errOut := runCLI(t, "worker", "devices")
	if code != 0 {
		t.Fatalf("devices: %d %s", code, errOut)
	}
	var got struct {
		Devices []struct {
			Device string `json:"device"`
			Usable bool   `json:"usable"`
			Reason string `json:"reason"`
		} `json:"devices"`
		ORT struct{ Version string } `json:"onnxruntime"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Devices) == 0 || got.Devices[0].Device != "cpu" || !got.Devices[0].Usable || got.ORT.Version == "" {
		t.Errorf("devices: %s", out)
	}
	for _, d := range got.Devices[1:] {
		if !d.Usable && d.Reason == "" {
			t.Errorf("unusable %s without a reason", d.Device)
		}
	}
}
