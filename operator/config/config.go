// Package config embeds the generated CustomResourceDefinition (crd/, written by `make operator-crd`), so the
// operator binary validates resources offline against exactly the schema the cluster is given.
package config

import _ "embed"

// CRD is the JunctionRouter CustomResourceDefinition as controller-gen wrote it.
//
//go:embed crd/junction-router.io_junctionrouters.yaml
var CRD []byte
