package storepb

// Bounds of UAMRecord.nm_tokens, checked by the store (PutUAM answers
// InvalidArgument beyond them) and kept by the AMRMProxy that writes the
// rows. A real NMTokenProto is about 200-300 bytes (the node's host three
// times, an attempt id, the user, a 20-byte password); 512 of 1 KiB at
// most keep a row well under the store's message limits.
const (
	MaxUAMNMTokens     = 512
	MaxUAMNMTokenBytes = 1 << 10
)
