package recipes

import "fmt"

// CheckCredentials reports every backend whose api_key_env names a variable
// that lookup (os.LookupEnv under serve) does not find set to a non-empty
// value, as a *ValidationError with each backend's JSON pointer.
//
// It is separate from Validate on purpose: a document is valid wherever it
// is written, while the keys exist only where it is served. junction serve
// refuses to activate a document this reports (a backend would otherwise be
// called without its key); junction config validate prints it as a warning,
// since CI rarely holds production keys.
func CheckCredentials(doc *Document, lookup func(string) (string, bool)) error {
	if doc == nil {
		return nil
	}
	var ps []Problem
	for i, m := range doc.Providers.Models {
		for j, b := range m.BackendRefs {
			if b.APIKeyEnv == "" {
				continue
			}
			if v, ok := lookup(b.APIKeyEnv); ok && v != "" {
				continue
			}
			ps = append(ps, Problem{
				Path: fmt.Sprintf("/providers/models/%d/backend_refs/%d/api_key_env", i, j),
				Code: CodeMissingField,
				Message: fmt.Sprintf("the environment variable %s (the key of model %q's backend) is not set or is empty; "+
					"set it in junction serve's environment (a backend is never called without its key, nor with the client's)", b.APIKeyEnv, m.Name),
			})
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return newValidationError(ps)
}
