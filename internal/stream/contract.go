package stream

import "io"

// Location is where a frame starts: which part of the saveset's data (a
// part is one tape file; a saveset that spans tapes has several) and the byte
// offset inside that part's tape file.
type Location struct {
	Part   int   `json:"part"`   // 0-based part index
	Offset int64 `json:"offset"` // byte offset inside the part's tape file
}

// FrameSink receives whole frames, in order. A spanning sink may move to the
// next tape between two frames, never inside one. It returns where the frame
// was put. The frame's bytes belong to the caller again once WriteFrame
// returns (the stream writer reuses them): a sink copies what it keeps.
type FrameSink interface {
	WriteFrame(frame []byte) (Location, error)
}

// FrameSource opens the saveset's data at a location and reads on to the
// end of the data, following the parts across tapes.
type FrameSource interface {
	OpenAt(loc Location) (io.ReadCloser, error)
}
