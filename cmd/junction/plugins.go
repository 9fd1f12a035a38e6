package main

import (
	"context"

	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
)

// pluginValidator checks plugin configurations without a plugin host: the
// built-in plugins that call no host function through their own code run
// natively, the others through their configuration checks
// (pluginsys.ModuleAware), so validating a file compiles no module.
func pluginValidator(context.Context) (v *plugin.Stage, stop func(), err error) {
	return native.Stage(), func() {}, nil
}
