// Package docs embeds Herald's API description in the binary: the API
// serves it at GET /v1/openapi.json.
package docs

import _ "embed"

// OpenAPI is openapi.json, the OpenAPI 3.1 description of every endpoint,
// status and body of the REST API. The file is JSON (which YAML 1.2 tools
// read as YAML too) so that serving it needs no YAML library.
//
//go:embed openapi.json
var OpenAPI []byte
