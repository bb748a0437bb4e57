package providers_test

import (
	"testing"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/delivery/providers"
)

// TestRegistryCoversTheCatalog: every channel a tenant may enable has a
// provider, in the registry or (in-app) the delivery Service's own, and
// the registry builds nothing the catalog does not list.
func TestRegistryCoversTheCatalog(t *testing.T) {
	reg := providers.Registry()
	listed := map[string]bool{}
	for _, e := range delivery.Catalog() {
		listed[e.ChannelKey] = true
		if _, ok := reg[e.ChannelKey]; !ok && e.ChannelKey != "in-app" {
			t.Errorf("catalog entry %s has no provider in the registry", e.ChannelKey)
		}
	}
	for key := range reg {
		if !listed[key] || key == "in-app" {
			t.Errorf("the registry builds %s, which the catalog does not list or the Service builds itself", key)
		}
	}
	reg["email-smtp"] = nil
	if providers.Registry()["email-smtp"] == nil {
		t.Error("a caller's change to the registry reaches the next caller")
	}
}
