// Package crd embeds drover's generated CustomResourceDefinitions (config/crd/bases), so the
// binary can install them, e.g. into its embedded control plane.
package crd

import "embed"

// Bases holds bases/*.yaml, one CRD per file.
//
//go:embed bases/*.yaml
var Bases embed.FS
