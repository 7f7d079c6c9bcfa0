"""Adapters to the outside world that are not PocketBase: the model API, embeddings, Chroma, MCP."""
