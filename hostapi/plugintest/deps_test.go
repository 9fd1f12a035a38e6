package plugintest

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// serving matches the packages of the serving engine: the routing core and
// the front ends, management, inference, deployments and the serve-side
// plugin system. The author harness runs plugins the way the router does
// without them (issue 12), so that a plugin author's tests build quickly and
// the harness cannot drift into depending on the server.
var serving = regexp.MustCompile(`^github\.com/junction-router/junction/(engine|internal/(dataplane|gateway|extproc|mgmt|inference|deploy|pluginsys))(/|$)`)

func TestDoesNotImportTheServingEngine(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if serving.MatchString(p) {
			t.Errorf("hostapi/plugintest imports %s: move what the harness needs to the plugin side (internal/plugin, internal/pii, internal/lexical)", p)
		}
	}
}
