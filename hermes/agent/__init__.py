"""The agent: the step loop, one request to a provider with its retry, compaction and the session lease."""
