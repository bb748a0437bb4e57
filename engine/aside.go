package engine

import (
	"context"
	"sync"
)

// A turn that woke from a timer steps aside once its first Bridge call
// answered (verdictAside): the rest of it (recording the answer, the next
// steps) waits in the scheduler's later queue, so that the worker is free
// for the next due run at once and every due run's workflow resumes on
// time before any of them records. While a run's turn is aside, its run
// is marked in asides and other work of the run is refused
// (verdictRetry), so that the answer is recorded before anything else
// happens to the run in this process.

// asides are the runs whose turn stepped aside and is not finished.
type asides struct {
	mu   sync.Mutex
	runs map[string]struct{}
}

func (a *asides) set(runID string, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !on {
		delete(a.runs, runID)
		return
	}
	if a.runs == nil {
		a.runs = map[string]struct{}{}
	}
	a.runs[runID] = struct{}{}
}

func (a *asides) has(runID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.runs[runID]
	return ok
}

// finishAside completes a turn that stepped aside: it records the Bridge
// answer the turn holds and goes on with the run. It never steps aside
// again (the turn is no longer woke).
func (e *Engine) finishAside(ctx context.Context, t *turn) (verdict, error) {
	runID := t.st.RunID
	unlock := e.states.lock(runID)
	defer unlock()
	e.asides.set(runID, false)
	return e.steps(ctx, t, func(ctx context.Context) (verdict, error) {
		out := *t.out
		t.out = nil
		return t.answer(ctx, out)
	})
}
