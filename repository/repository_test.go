package repository

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, ok := range []string{"mnist", "resnet-50", "a.b_c", "M1"} {
		if !ValidName(ok) {
			t.Errorf("ValidName(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", `a\b`, "../etc", "a b", "é", strings.Repeat("x", 256)} {
		if ValidName(bad) {
			t.Errorf("ValidName(%q) = true", bad)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte("platform: onnx_onnxv1\ndefault_version: 3\nparameters:\n  a: b\n"))
	if err != nil || c.DefaultVersion != 3 || c.Parameters["a"] != "b" {
		t.Fatalf("%+v, %v", c, err)
	}
	if c, err := ParseConfig(nil); err != nil || c.DefaultVersion != 0 {
		t.Errorf("empty config: %+v, %v", c, err)
	}
	for in, want := range map[string]string{
		"platform: tensorflow_savedmodel\n": "platform",
		"default_verison: 1\n":              "default_verison",
		"default_version: -1\n":             "positive",
		"default_version: [1]\n":            "line 1",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want mention of %q", in, err, want)
		}
	}
}

func TestGetNotFound(t *testing.T) {
	r := New(Options{})
	if _, _, _, err := r.Get("x", ""); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("Get on empty repository: %v", err)
	}
	if !r.Ready() {
		t.Error("an empty repository is ready: nothing failed")
	}
}
