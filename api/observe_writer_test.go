package api

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestStatusWriter: the status recorded is the first final one (an
// informational 1xx passes through unrecorded, later ones are dropped),
// the bytes counted are those written, and flushes reach the writer
// beneath.
func TestStatusWriter(t *testing.T) {
	under := &headerLog{ResponseRecorder: httptest.NewRecorder()}
	w := &statusWriter{ResponseWriter: under}
	w.WriteHeader(http.StatusEarlyHints)
	if w.Status() != 0 {
		t.Fatalf("1xx recorded as the status: %d", w.Status())
	}
	w.WriteHeader(http.StatusCreated)
	w.WriteHeader(http.StatusInternalServerError)
	w.Write([]byte("abc"))
	n, err := w.ReadFrom(strings.NewReader("defg"))
	if err != nil || n != 4 {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	w.Flush()
	if w.Status() != http.StatusCreated || !slices.Equal(under.codes, []int{http.StatusEarlyHints, http.StatusCreated}) {
		t.Errorf("status %d, passed on %v; want 201 after 103", w.Status(), under.codes)
	}
	if w.BytesWritten() != 7 || under.Body.String() != "abcdefg" {
		t.Errorf("%d bytes counted, body %q", w.BytesWritten(), under.Body)
	}
	if !under.Flushed {
		t.Error("flush did not reach the writer beneath")
	}
	if w.Unwrap() != under {
		t.Error("Unwrap does not give the writer beneath")
	}
	w2 := &statusWriter{ResponseWriter: httptest.NewRecorder()}
	w2.Write([]byte("x"))
	if w2.Status() != http.StatusOK {
		t.Errorf("a write without a status: %d, want 200", w2.Status())
	}
}

// headerLog is a recorder that logs the statuses written to it and takes
// informational ones as such.
type headerLog struct {
	*httptest.ResponseRecorder
	codes []int
}

func (h *headerLog) WriteHeader(code int) {
	h.codes = append(h.codes, code)
	if code >= 200 {
		h.ResponseRecorder.WriteHeader(code)
	}
}

// TestNewRequestID: ids are 26 base32 characters, valid as request ids,
// and do not repeat.
func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := newRequestID()
		if len(id) != 26 || strings.Trim(id, idAlphabet) != "" || !validRequestID(id) {
			t.Fatalf("id %q", id)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
	}
}
