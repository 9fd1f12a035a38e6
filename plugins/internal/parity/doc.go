// Package parity holds only tests: they check that the built-in plugins'
// logic (plugins/systemprompt, requestparams, headermutation, fastresponse)
// behaves exactly like engine/plugin's native stand-ins, on the same
// configurations and requests: same request afterwards, same headers, same
// report, and the same configurations refused at the same field.
package parity
