package projections

import "maps"

// readModels gathers the event handlers and buckets of every read model.
// Each model's file declares its own; this is the one list of them.
func readModels() (map[string]applyFunc, [][]byte) {
	handlers := map[string]applyFunc{}
	var buckets [][]byte
	for _, model := range []func() (map[string]applyFunc, [][]byte){
		tenantModels,
		audienceModels,
		runModels,
		channelModels,
		bridgeModels,
		deliveryModels,
		inboxModels,
		suppressionModels,
		preferenceModels,
		webhookModels,
		controlModels,
		layoutModels,
		statsModels,
	} {
		h, b := model()
		maps.Copy(handlers, h)
		buckets = append(buckets, b...)
	}
	return handlers, buckets
}
