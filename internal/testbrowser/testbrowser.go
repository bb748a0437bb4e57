// Package testbrowser drives a real headless Chromium (Debian's
// `chromium`, which .ci/run installs) through chromedp, for the tests of
// pages a person uses: the preference page, the inbox component.
//
// A test gets a browser tab with [New], drives it with chromedp actions
// (chromedp v0.23's API: chromedp.Do runs actions that return nothing,
// chromedp.Run one action that returns a value), and leaves a picture for
// a person with [Screenshot].
//
// One Chromium serves every test of a test binary (starting one costs a
// second of CPU, and a package has a score of browser tests): each test
// gets a tab in a browser context of its own, as an incognito window is,
// so no cookie, storage or cache crosses from one test to another, and the
// context is disposed when the test ends. The browser runs with a fresh
// profile and no background networking (this machine's network is
// closed); a package whose tests use it calls [Main] from its TestMain,
// which closes it and removes its profile, and the kernel kills it should
// the test binary die first.
package testbrowser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeout bounds a whole browser session of one test. It only guards
// against a hang: a session takes seconds on a quiet machine and many
// times that on a loaded one, and a test waits on conditions in the page
// rather than on time.
const Timeout = 5 * time.Minute

// shared is the test binary's one browser, started by the first New.
var shared struct {
	once    sync.Once
	browser context.Context // its first tab: the parent of every test's
	close   func()
	err     error
}

// New returns the context of a new tab, in a browser context of its own,
// of the test binary's Chromium (started by the first call), for
// chromedp.Run. The tab and its browser context are closed when the test
// ends. A machine without Chromium fails the test, naming what to install:
// a browser test that skips proves nothing.
func New(t testing.TB) context.Context {
	t.Helper()
	shared.once.Do(start)
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	tab, cancelTab := chromedp.NewContext(shared.browser, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(tab, Timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
	})
	// Open the tab now, so a browser that cannot is reported here.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("testbrowser: open a tab: %v", err)
	}
	return ctx
}

// start starts the shared browser, or sets shared.err.
func start() {
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
		shared.err = fmt.Errorf("testbrowser: no Chromium found: install Debian's chromium (apt-get install chromium, as .ci/run does) or set HERALD_CHROMIUM")
		return
	}
	profile, err := os.MkdirTemp("", "herald-testbrowser-")
	if err != nil {
		shared.err = err
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Each test's tab is a window of its own, and all but one are in
		// the background: none may have its timers throttled or its
		// renderer deprioritised, or a page would stall while another
		// test's has the focus.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.WindowSize(1024, 768),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	shared.browser = browser
	shared.close = func() {
		cancelBrowser()
		cancelAlloc() // waits for the browser to exit
		os.RemoveAll(profile)
	}
	if err := chromedp.Do(browser); err != nil {
		shared.err = fmt.Errorf("testbrowser: start %s: %w", path, err)
	}
}

// Main runs the tests of m, then closes the shared browser (when one
// started) and exits: the TestMain of a package whose tests use New.
func Main(m *testing.M) {
	code := m.Run()
	if shared.close != nil {
		shared.close()
	}
	os.Exit(code)
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
