package index

// Frame is one entry of a saveset's frame table: one independently
// compressed frame of the saveset stream. The index stores the table as the
// stream writer hands it over, in stream order; it does not require the
// frames to tile the stream, but it codes each field as a delta from the
// previous frame (Offset from Offset+Size, PartOffset from
// PartOffset+CSize), so a table that does tile costs about 4 bytes a frame.
type Frame struct {
	Offset     int64  // uncompressed start of the frame in the saveset stream
	Size       uint32 // uncompressed bytes
	CSize      uint32 // compressed bytes on media
	Part       int32  // which tape file (span part) holds the frame, from 0
	PartOffset int64  // byte offset of the frame within that part
}
