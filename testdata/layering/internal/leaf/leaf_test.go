package leaf_test

import (
	"testing"

	"example.com/layered/pipeline"
)

func TestRun(t *testing.T) {
	if pipeline.Run() == "" {
		t.Fatal("empty")
	}
}
