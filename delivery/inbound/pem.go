package inbound

import "encoding/pem"

// pemDecode returns the bytes of the first CERTIFICATE block of b.
func pemDecode(b []byte) ([]byte, []byte) {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, b
		}
		if block.Type == "CERTIFICATE" {
			return block.Bytes, b
		}
	}
}
