package bridge

import (
	"fmt"
	"sync"

	"github.com/heraldhq/herald/bridge/wire"
)

// Registry collects the workflows a Bridge serves. The zero value is not
// usable; call [NewRegistry]. A Registry is safe for concurrent use: workflows
// may be registered while a [Serve] handler answers.
type Registry struct {
	mu    sync.RWMutex
	order []*Workflow // registration order, as discover lists them
	byID  map[string]*Workflow
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byID: make(map[string]*Workflow)}
}

// Register adds workflows, all or none: it returns an error wrapping
// [ErrDuplicateWorkflow] when an id is already registered or appears twice in
// wfs, or [ErrInvalidWorkflow] for a nil workflow, and then registers nothing.
func (r *Registry) Register(wfs ...*Workflow) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	batch := make(map[string]bool, len(wfs))
	for _, w := range wfs {
		if w == nil {
			return fmt.Errorf("%w: nil workflow", ErrInvalidWorkflow)
		}
		if _, ok := r.byID[w.id]; ok || batch[w.id] {
			return fmt.Errorf("%w: %q", ErrDuplicateWorkflow, w.id)
		}
		batch[w.id] = true
	}
	for _, w := range wfs {
		r.order = append(r.order, w)
		r.byID[w.id] = w
	}
	return nil
}

// MustRegister is like [Registry.Register] but panics on error, and returns r
// so that calls chain:
//
//	reg := bridge.NewRegistry().MustRegister(welcome, approval)
func (r *Registry) MustRegister(wfs ...*Workflow) *Registry {
	if err := r.Register(wfs...); err != nil {
		panic(err)
	}
	return r
}

// lookup returns the workflow registered under id.
func (r *Registry) lookup(id string) (*Workflow, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w, ok := r.byID[id]
	return w, ok
}

// infos describes the registered workflows in registration order.
func (r *Registry) infos() []wire.WorkflowInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]wire.WorkflowInfo, len(r.order))
	for i, w := range r.order {
		out[i] = w.info()
	}
	return out
}
