package eventlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
)

func TestCheckSubject(t *testing.T) {
	long := eventlog.Subject("ten_1", eventlog.AggAPIKey, strings.Repeat("x", 4000))
	cases := []struct {
		subject   string
		wildcards bool
		want      error
	}{
		{"ev.ten_1.run.abc", false, nil},
		{"ev.ten_1.>", true, nil},
		{"ev.*.run.abc", true, nil},
		{eventlog.Subject("ten_1", eventlog.AggSubscriber, strings.Repeat("🚀", 256)), false, nil},
		{long, false, eventlog.ErrSubjectTooLong},
		{long, true, eventlog.ErrSubjectTooLong},
		{"", false, eventlog.ErrBadSubject},
		{"ev..run.a", false, eventlog.ErrBadSubject},
		{"ev.ten_1.run.", false, eventlog.ErrBadSubject},
		{"ev.ten 1.run.a", false, eventlog.ErrBadSubject},
		{"ev.ten\r\n1.run.a", false, eventlog.ErrBadSubject},
		{"ev.*.run.a", false, eventlog.ErrBadSubject},
		{"ev.ten_1.>", false, eventlog.ErrBadSubject},
	}
	for _, c := range cases {
		err := eventlog.CheckSubject(c.subject, c.wildcards)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("CheckSubject(%.40q, %v) = %v, want %v", c.subject, c.wildcards, err, c.want)
		}
	}
	if !errors.Is(eventlog.ErrSubjectTooLong, eventlog.ErrBadSubject) {
		t.Fatal("ErrSubjectTooLong does not match ErrBadSubject")
	}
}

// TestOverlongSubjectKeepsTheConnection is a regression test: a
// 4,000-character id made a subject over the server's control-line
// limit, the server closed the connection and nats.go never reconnected.
// Every way of writing or reading by subject now refuses it first, and
// the connection lives on.
func TestOverlongSubjectKeepsTheConnection(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := strings.Repeat("a", 4000)
	subject := eventlog.Subject("ten_1", eventlog.AggAPIKey, id)
	rec := eventlog.Record{Subject: subject, Type: "T", Tenant: "ten_1", Data: map[string]string{}}

	calls := map[string]error{}
	_, calls["Append"] = l.Append(ctx, rec)
	_, errs := l.AppendEach(ctx, []eventlog.Record{rec})
	calls["AppendEach"] = errs[0]
	_, calls["History"] = l.History(ctx, subject, 0)
	_, _, calls["First"] = l.First(ctx, subject)
	_, _, calls["Last"] = l.Last(ctx, subject)
	_, calls["SubjectLastSeq"] = l.SubjectLastSeq(ctx, subject)
	calls["Enqueue"] = l.Enqueue(ctx, eventlog.WorkRun("ten_1", id), nil, "")
	calls["EnqueueBatch"] = l.EnqueueBatch(ctx, []eventlog.WorkMsg{{Subject: eventlog.WorkRun("ten_1", id)}})
	calls["Schedule"] = l.Schedule(ctx, eventlog.SchedSubject("ten_1", "run", id), "work.wake", time.Now(), nil)
	calls["Schedule target"] = l.Schedule(ctx, eventlog.SchedSubject("ten_1", "run", "r"), eventlog.WorkRun("ten_1", id), time.Now().Add(time.Hour), nil)
	calls["Cancel"] = l.Cancel(ctx, eventlog.SchedSubject("ten_1", "run", id))
	for name, err := range calls {
		if !errors.Is(err, eventlog.ErrSubjectTooLong) {
			t.Errorf("%s: %v, want ErrSubjectTooLong", name, err)
		}
	}
	if !l.Conn().IsConnected() {
		t.Fatalf("connection lost: %v", l.Conn().LastError())
	}
	if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggAPIKey, "ok"),
		Type: "T", Tenant: "ten_1", Data: map[string]string{}}); err != nil {
		t.Fatalf("append after a refused subject: %v", err)
	}
}
