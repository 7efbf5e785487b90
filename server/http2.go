package server

import (
	"net/http"

	"golang.org/x/net/http2"
)

// ConfigureHTTP2 gives hs kube-apiserver's HTTP/2 serving settings: 1000
// streams per connection (--http2-max-streams-per-connection: informers
// multiplex many watches over one), 256 KiB frames and per-stream
// buffers; and a write scheduler that looks only at the streams with
// frames to send.
//
// Go's default scheduler (round robin, in net/http and x/net alike) keeps
// every open stream in one ring and walks it on each frame it picks, and
// again to find it has nothing more: an event sent to the 200 watches of
// one connection walks 200 streams 200 times, and the connection's one
// serving goroutine, which writes every frame, spends more time walking
// than writing (measured in BenchmarkWatchFanOut). x/net's random
// scheduler keeps only the streams with frames queued; watch streams carry
// no priorities to honour. x/net marks user schedulers deprecated: where
// it stops honouring one, serving falls back to its default, slower at
// fan-out but correct.
func ConfigureHTTP2(hs *http.Server) error {
	const frame = 256 * 1024
	hs.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000, MaxReadFrameSize: frame,
		MaxReceiveBufferPerStream: frame, MaxReceiveBufferPerConnection: frame * 1000}
	//lint:ignore SA1019 see above: the deprecated scheduler is the fast one for fan-out.
	return http2.ConfigureServer(hs, &http2.Server{NewWriteScheduler: http2.NewRandomWriteScheduler})
}
