package plugin

import "fmt"

// ConfigError is a plugin reference the configuration must fix. Field is the
// path inside the reference: "type", "on_error", or "configuration" followed by
// the field ("configuration.add[1].name"), so validation can turn it into a
// JSON pointer.
type ConfigError struct {
	Type    string
	Field   string
	Message string
}

// FieldPath returns the offending field within the plugin reference, so that
// configuration validation can point at it.
func (e *ConfigError) FieldPath() string { return e.Field }

func (e *ConfigError) Error() string {
	name := e.Type
	if name == "" {
		name = "a"
	}
	if e.Field == "" {
		return fmt.Sprintf("%s plugin: %s", name, e.Message)
	}
	return fmt.Sprintf("%s plugin: %s %s", name, e.Field, e.Message)
}
