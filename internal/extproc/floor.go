package extproc

import extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

// EmptyProcessor answers every ext_proc message with an empty answer of its
// kind (CONTINUE): the least a processor can do. It is the floor Junction's
// ext_proc hook is measured against, by BenchmarkExtprocEmpty and by
// junction-extproc-bench in the same run.
type EmptyProcessor struct {
	extprocv3.UnimplementedExternalProcessorServer
}

// Process answers one stream until the client ends it.
func (EmptyProcessor) Process(s extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return nil
		}
		r := &extprocv3.ProcessingResponse{}
		switch req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			r.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_RequestBody:
			r.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			r.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_ResponseBody:
			r.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}
		default:
			continue
		}
		if err := s.Send(r); err != nil {
			return nil
		}
	}
}
