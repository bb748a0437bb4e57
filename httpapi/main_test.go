package httpapi_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/testbrowser"
)

// TestMain closes the browser the console, inbox and preference page
// tests share (see testbrowser).
func TestMain(m *testing.M) { testbrowser.Main(m) }
