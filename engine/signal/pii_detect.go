package signal

import "github.com/junction-router/junction/internal/pii"

// The personal-data detector lives in internal/pii, shared with the plugin
// harness's stand-in for pii signals; these are its names as the engine has
// always exported them.

// Personal-data entity types, as the spec names them (plus IBAN).
const (
	PIIEmail      = pii.Email
	PIIPhone      = pii.Phone
	PIICreditCard = pii.CreditCard
	PIISSN        = pii.SSN
	PIIIPAddress  = pii.IPAddress
	PIIIBAN       = pii.IBAN
	PIIPerson     = pii.Person
	PIILocation   = pii.Location
)

// How an entity was found (Entity.Method).
const (
	PIIMethodPattern   = pii.MethodPattern
	PIIMethodHeuristic = pii.MethodHeuristic
)

// Entity is one piece of personal data found in a text (see pii.Entity).
type Entity = pii.Entity

// PIITypes returns every entity type the detector finds.
func PIITypes() []string { return pii.Types() }

// DetectPII finds personal data in text (see pii.Detect).
func DetectPII(text string) []Entity { return pii.Detect(text, true) }
