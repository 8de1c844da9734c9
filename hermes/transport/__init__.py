"""Sending a built body: HTTP with SSE for most routes, botocore for Bedrock."""
