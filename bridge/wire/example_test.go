package wire_test

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

func ExampleSign() {
	body := []byte(`{"action":"health"}`)
	fmt.Println(wire.Sign("whsec_test", 1700000000, body))
	// Output: 0baaf36c6a86bf76d8d88bac4230fc4c36746de47a86021b4e3cc4d2c4da79bf
}

func ExampleVerify() {
	body := []byte(`{"action":"health"}`)
	now := time.Unix(1700000000, 0)
	sig := wire.Sign("whsec_old", now.Unix(), body)

	// During a rotation, accept the new secret and the old one.
	fmt.Println(wire.Verify(body, "1700000000", sig, now, 0, "whsec_new", "whsec_old"))
	fmt.Println(wire.Verify(body, "1700000000", sig, now.Add(10*time.Minute), 0, "whsec_old"))
	// Output:
	// <nil>
	// bridge: signature timestamp outside tolerance: timestamp 1700000000 is 10m0s away (tolerance 5m0s)
}

func ExampleParseDuration() {
	for _, s := range []string{"90s", "1h30m", "2d", "1.5d"} {
		d, _ := wire.ParseDuration(s)
		fmt.Println(s, d)
	}
	// Output:
	// 90s 1m30s
	// 1h30m 1h30m0s
	// 2d 48h0m0s
	// 1.5d 36h0m0s
}
