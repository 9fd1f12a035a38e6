// Package register adds Junction's built-in plugin modules (package
// plugins/builtin) to the plugin host's registry of modules compiled into the
// binary when it is imported, the way Caddy modules register themselves:
//
//	import _ "github.com/junction-router/junction/plugins/builtin/register"
//
// It does nothing else.
package register

import (
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/plugins/builtin"
)

func init() {
	if err := builtin.Register(hostapi.Builtins()); err != nil {
		panic(err)
	}
}
