package testbrowser_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/testbrowser"
)

// The harness runs a page's script, reads the DOM back and saves a PNG.
func TestBrowserRunsScriptsAndTakesScreenshots(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>t</title><p id="out">static</p>
<script>document.getElementById("out").textContent = "scripted " + (6*7)</script>`)
	}))
	defer srv.Close()
	tab := testbrowser.New(t)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(tab, chromedp.Text("#out"))
	if err != nil {
		t.Fatal(err)
	}
	if text != "scripted 42" {
		t.Fatalf("page text %q, want the script's", text)
	}
	t.Setenv("HERALD_SCREENSHOTS", t.TempDir())
	png, err := os.ReadFile(testbrowser.Screenshot(t, tab, "harness"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
}
