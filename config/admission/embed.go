// Package admission embeds drover's admission policies (config/admission), so the binary can
// apply them with its CRDs.
package admission

import "embed"

// Policies holds *.yaml: ValidatingAdmissionPolicies and their bindings.
//
//go:embed *.yaml
var Policies embed.FS
