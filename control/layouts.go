package control

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Bounds of an email layout.
const (
	// MaxLayoutBytes bounds a layout's HTML.
	MaxLayoutBytes = 256 << 10
	// maxLayoutName bounds a layout's name, in characters.
	maxLayoutName = 100
	// LayoutPlaceholder is where a send's HTML goes in a layout.
	LayoutPlaceholder = "{{content}}"
)

// layoutIDRe is a layout id: letters, digits, '_', '-' and '.', not
// starting with a punctuation mark, at most 64 characters.
var layoutIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Layout is an email layout of a tenant.
type Layout = projections.Layout

// LayoutInput is the body of PUT /v1/layouts/{layoutId}.
type LayoutInput struct {
	Name    string
	HTML    string
	Default bool
}

func layoutNotFound(id string) error {
	return apierr.Errorf(apierr.CodeLayoutNotFound, "no layout %q", clip(id, 64))
}

func layoutIDErr(id string) error {
	if layoutIDRe.MatchString(id) {
		return nil
	}
	var p apierr.Problems
	p.Add("layoutId", "must be 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit")
	return p.Err()
}

// SaveLayout creates or replaces layout id, changed by actor; marked
// default, it unmarks the tenant's default before it. Errors: 422
// validation_failed (id, name), 422 invalid_layout (html without exactly
// one {{content}}, or over MaxLayoutBytes).
func (c *Control) SaveLayout(ctx context.Context, tenant, id string, in LayoutInput, actor string) (Layout, bool, error) {
	if err := layoutIDErr(id); err != nil {
		return Layout{}, false, err
	}
	var p apierr.Problems
	name := strings.TrimSpace(in.Name)
	if name == "" || utf8.RuneCountInString(name) > maxLayoutName || strings.ContainsFunc(name, unicode.IsControl) {
		p.Add("name", "is required: at most %d characters, without control characters", maxLayoutName)
	}
	if err := p.Err(); err != nil {
		return Layout{}, false, err
	}
	switch {
	case len(in.HTML) > MaxLayoutBytes:
		p.Add("html", "must be at most %d bytes", MaxLayoutBytes)
	case strings.Count(in.HTML, LayoutPlaceholder) != 1:
		p.Add("html", "must hold %s exactly once, where a message's HTML goes (it holds it %d times)",
			LayoutPlaceholder, strings.Count(in.HTML, LayoutPlaceholder))
	case !utf8.ValidString(in.HTML):
		p.Add("html", "must be UTF-8 text")
	}
	if len(p) > 0 {
		return Layout{}, false, &apierr.ValidationError{Code: apierr.CodeInvalidLayout, Problems: p}
	}
	subject := eventlog.Subject(tenant, eventlog.AggLayout, id)
	var created bool
	err := c.update(ctx, subject, func(seq uint64) error {
		_, err := c.store.Layout(tenant, id)
		created = errors.Is(err, projections.ErrNotFound)
		if err != nil && !created {
			return err
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.LayoutSaved, Tenant: tenant,
			Data:   events.LayoutSavedData{LayoutID: id, Name: name, HTML: in.HTML, Default: in.Default, Actor: actor},
			Expect: true, ExpectSeq: seq})
		return err
	})
	if err != nil {
		return Layout{}, false, err
	}
	l, err := c.store.Layout(tenant, id)
	return l, created, err
}

// Layouts returns the tenant's layouts, in id order.
func (c *Control) Layouts(tenant string) ([]Layout, error) { return c.store.Layouts(tenant) }

// GetLayout returns one layout. Errors: 404 layout_not_found.
func (c *Control) GetLayout(_ context.Context, tenant, id string) (Layout, error) {
	if err := layoutIDErr(id); err != nil {
		return Layout{}, layoutNotFound(id)
	}
	l, err := c.store.Layout(tenant, id)
	if errors.Is(err, projections.ErrNotFound) {
		return Layout{}, layoutNotFound(id)
	}
	return l, err
}

// DeleteLayout deletes a layout, by actor: a send naming it then fails
// with invalid_content, and without a default layout sends go bare.
// Errors: 404 layout_not_found.
func (c *Control) DeleteLayout(ctx context.Context, tenant, id, actor string) error {
	if err := layoutIDErr(id); err != nil {
		return layoutNotFound(id)
	}
	subject := eventlog.Subject(tenant, eventlog.AggLayout, id)
	return c.appendIfFound(ctx, tenant, subject, events.LayoutDeleted, events.LayoutDeletedData{LayoutID: id, Actor: actor}, func() error {
		_, err := c.GetLayout(ctx, tenant, id)
		return err
	})
}
