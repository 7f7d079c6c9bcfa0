"""The chat turn, shared by the UI and the HTTP API."""
