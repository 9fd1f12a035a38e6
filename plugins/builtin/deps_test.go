package builtin

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPluginsImportOnlyThePluginSide holds the built-ins to their rule: a
// plugin package and its guest import the SDK, the ABI, plugins/internal and
// the standard library, nothing of the host's (a host package would be
// compiled into every module, and tie the guest to internals that change).
func TestPluginsImportOnlyThePluginSide(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	const mod = "github.com/junction-router/junction/"
	allowed := []string{mod + "sdk", mod + "hostapi/abi", mod + "plugins/"}
	for _, s := range Sources {
		out, err := exec.Command(gobin, "list", "-deps", "../../"+s.Package).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", s.Package, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if !strings.HasPrefix(p, mod) {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || p == a || strings.HasPrefix(p, a+"/") || (strings.HasSuffix(a, "/") && strings.HasPrefix(p, a))
			}
			if !ok {
				t.Errorf("plugin %s imports %s: a plugin may import only sdk, hostapi/abi, plugins/internal and the standard library", s.Type, p)
			}
		}
	}
}
