"""Running the parts: PocketBase and Chroma servers, sidecars, shared worker state, health checks."""
