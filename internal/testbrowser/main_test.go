package testbrowser_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/testbrowser"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }
