// Package httpapi is Herald's REST API: a gorilla/mux router, Bearer
// authentication (tenant API keys, the admin token, the internal token),
// strict JSON decoding, and the single error body
//
//	{"error":{"code":"snake_case","message":"…","details":[{"field","problem"}]}}
//
// Handlers return errors; one table (errors.go) maps them to statuses.
// Path parameters are read percent-decoded from the raw path, so an
// externalId may hold an encoded slash.
package httpapi
