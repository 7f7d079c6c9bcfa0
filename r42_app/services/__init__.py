"""Adapters to the outside world: PocketBase, Chroma, embeddings, Anthropic, MCP, workers."""
