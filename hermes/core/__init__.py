"""Core values every layer shares: messages and their parts, the error types, typed events, the stream accumulator and the record of one request attempt."""
