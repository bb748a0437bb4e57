// Package testbrowser drives a real headless Chromium (Debian's
// `chromium`, which .ci/run installs) through chromedp, for the tests of
// pages a person uses: the preference page, the inbox component.
//
// A test gets a browser tab with [New], drives it with chromedp actions
// (chromedp v0.23's API: chromedp.Do runs actions that return nothing,
// chromedp.Run one action that returns a value), and leaves a picture for
// a person with [Screenshot]. The browser runs
// with a fresh profile and no background networking (this machine's
// network is closed), and ends with the test.
package testbrowser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeout bounds a whole browser session of one test. It only guards
// against a hang: a session takes seconds on a quiet machine and many
// times that on a loaded one, and a test waits on conditions in the page
// rather than on time.
const Timeout = 5 * time.Minute

// New starts Chromium and returns the context of its first tab, for
// chromedp.Run. The browser is closed when the test ends. A machine
// without Chromium fails the test, naming what to install: a browser test
// that skips proves nothing.
func New(t testing.TB) context.Context {
	t.Helper()
	path := os.Getenv("HERALD_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		t.Fatal("testbrowser: no Chromium found: install Debian's chromium (apt-get install chromium, as .ci/run does) or set HERALD_CHROMIUM")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1024, 768),
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), Timeout)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelTimeout()
	})
	// Start the browser now, so a failure to launch is reported here.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("testbrowser: start %s: %v", path, err)
	}
	return tab
}

// Screenshot saves a full-page PNG of the tab as <dir>/<name>.png, where
// dir is HERALD_SCREENSHOTS or the module's screenshots/ directory
// (ignored by git), and returns its path.
func Screenshot(t testing.TB, tab context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("testbrowser: screenshot %s: %v", name, err)
	}
	dir := os.Getenv("HERALD_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(moduleRoot(), "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// moduleRoot is the directory of go.mod, two levels above this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
