// Package parity holds the fixtures and tests that check that the built-in plugins'
// logic (plugins/systemprompt, requestparams, headermutation, fastresponse)
// behaves exactly like internal/plugin's native stand-ins, on the same
// configurations and requests: same request afterwards, same headers, same
// report, and the same configurations refused at the same field.
// plugins/builtin runs the same fixtures through the compiled modules.
package parity
