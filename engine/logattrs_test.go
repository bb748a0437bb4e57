package engine

import (
	"reflect"
	"testing"

	"github.com/heraldhq/herald/eventlog"
)

func TestWorkAttrsNameTenantAndID(t *testing.T) {
	t.Parallel()
	for subject, want := range map[string][]any{
		eventlog.WorkRun("ten_1", "run_a.b"):    {"tenant", "ten_1", "run", "run_a.b"},
		eventlog.WorkFanout("ten_1", "txn 1/2"): {"tenant", "ten_1", "transaction", "txn 1/2"},
		eventlog.WorkTick("ten_1", "daily"):     {"tenant", "ten_1", "workflow", "daily"},
		"work.other.ten_1.x":                    {"subject", "work.other.ten_1.x"},
	} {
		if got := workAttrs(subject, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("workAttrs(%q) = %v, want %v", subject, got, want)
		}
	}
	// A fired timer names its run in its data.
	wake := []byte(`{"tenant":"ten_1","run":"run_a.b","at":"2026-11-22T10:00:00Z"}`)
	if got, want := workAttrs(eventlog.WorkWake, wake), []any{"tenant", "ten_1", "run", "run_a.b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("workAttrs(wake) = %v, want %v", got, want)
	}
	if got, want := workAttrs(eventlog.WorkWake, []byte("junk")), []any{"subject", eventlog.WorkWake}; !reflect.DeepEqual(got, want) {
		t.Errorf("workAttrs(junk wake) = %v, want %v", got, want)
	}
}
