package server

import (
	"testing"
	"time"
)

func TestRequestTimeout(t *testing.T) {
	limit := time.Minute
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "", want: limit},
		{in: "32s", want: 32 * time.Second},
		{in: "0s", want: limit},
		{in: "5m", want: limit},
		{in: "-1s", want: limit},
		{in: "soon", bad: true},
	}
	for _, c := range cases {
		got, err := requestTimeout(c.in, limit)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("requestTimeout(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}
